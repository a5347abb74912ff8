"""Running the daemon under uvicorn on a socket we bound ourselves, and shutting it down cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from agent.api.app import create_app
from agent.api.transport import remove_socket, socket_identity
from agent.control.autopilot.metrics import AutopilotMetrics
from agent.serve.daemon import Daemon, ServeConfig

if TYPE_CHECKING:
    from agent.serve.exporter import AgentExporter

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    """uvicorn's server that, on Ctrl-C or SIGTERM, first ends the open event streams.

    A console's stream never ends by itself: uvicorn waited ``timeout_graceful_shutdown`` for it and
    then cancelled its task, and Starlette printed a 40-line CancelledError traceback. Closing the hub
    ends every stream at once, so the shutdown is quiet and quick."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        try:  # from a signal handler: hand the close to the loop rather than run it mid-step
            asyncio.get_running_loop().call_soon_threadsafe(self._on_exit)
        except RuntimeError:
            self._on_exit()
        super().handle_exit(sig, frame)


async def serve(
    config: ServeConfig,
    token: str,
    sock: socket.socket,
    socket_path: Path | None,
    exporter: AgentExporter | None = None,
) -> int:
    identity = socket_identity(socket_path) if socket_path is not None else None
    daemon = Daemon(config, token)
    if exporter is not None:
        # Before start(), so the exporter counts from the first event; the autopilot's own
        # k25_autopilot_* series come from its source.
        exporter.attach(daemon)
        exporter.add_source(AutopilotMetrics(daemon.autopilot))
    await daemon.start()
    app = create_app(daemon)
    server = _Server(
        uvicorn.Config(app, log_config=None, access_log=False, timeout_graceful_shutdown=3, lifespan="on"),
        on_exit=daemon.hub.close,
    )

    async def exit_when_asked() -> None:
        await daemon.exit_requested.wait()
        if daemon.stop_engine_on_exit:
            # Before the API goes away, so `agent stop --engine-too` returns once the engine is gone.
            await daemon.supervisor.stop(drain_timeout_s=config.drain_timeout_s)
        daemon.hub.close()
        server.should_exit = True

    watcher = asyncio.create_task(exit_when_asked())
    # uvicorn captures SIGINT/SIGTERM while serving and re-raises them afterwards against the handlers
    # it found; harmless handlers here let the shutdown below run instead of the process dying there.
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        where = f"unix:{socket_path}" if socket_path else "tcp:{}:{}".format(*sock.getsockname()[:2])
        log.info("agent API listening on %s (token file %s)", where, config.paths.token)
        await server.serve(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await daemon.shutdown()
        if socket_path is not None and identity is not None:
            remove_socket(socket_path, identity)
    return 0
