"""The simulated SGLang 0.5.23 server: its HTTP surface over the engine model.

Served by uvicorn (httptools) with a small ASGI app of its own: at speedup 20 and 250 streaming clients
the simulator writes ~15,000 SSE chunks a second on one core, and a framework's per-chunk middleware would
make it the bottleneck, so routing, auth and responses are a few lines here and each chunk goes straight
to the server's ``send``. Handlers stay thin and hand requests to the engine through ``agent.sim.runner``.

Authentication follows ``srt/utils/auth.py``: ``/health*``, ``/ready``, ``/metrics`` always open; NORMAL
routes need the API key when one is set; ADMIN_OPTIONAL routes (``/set_internal_state``, ``/flush_cache``)
need the admin key when set, else the API key when set, else nothing. Unauthorized → 401.

In-process use (tests, the demo)::

    async with run_sim(profile, port=0, speedup=20, seed=1) as sim:
        sim.url, sim.engine
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import uvicorn

from agent.profile.schema import Profile
from agent.sglang import live_control, paths
from agent.sglang.server_info import SGLANG_SET_INTERNAL_STATE_KEYS
from agent.sim import loads, metrics, responses, text
from agent.sim.calibration import with_draft_acceptance
from agent.sim.config import sim_config
from agent.sim.drafter_change import DrafterChange
from agent.sim.engine import Engine
from agent.sim.http import SSE_DONE, Auth, HttpRequest, Receive, Route, Scope, Send, http_impl, sse
from agent.sim.info import SGLANG_VERSION, ServerInfo
from agent.sim.protocol import BadRequest, GenerationRequest, parse_chat, parse_completion, parse_generate
from agent.sim.request import SimRequest
from agent.sim.runner import EngineRunner
from agent.sim.warmup import warm_up
from agent.wire.bench_env import SIMULATED_HOST_PATH

PATCH_03_KEYS = (live_control.ZERO_STEP_KEY, live_control.ROUND_TIMING_KEY)
"""Keys patch 03 adds to ``/set_internal_state`` (``agent.sim.zero_step_path`` answers them)."""


class SimServer:
    def __init__(
        self,
        profile: Profile,
        *,
        port: int,
        speedup: float = 1.0,
        seed: int = 0,
        api_key: str | None = None,
        admin_api_key: str | None = None,
        draft_acceptance: str = "calibrated",
    ) -> None:
        calibration = with_draft_acceptance(draft_acceptance)
        keys = {"api_key": api_key, "admin_api_key": admin_api_key}
        self.config = sim_config(profile, calibration=calibration, **keys)
        self.engine = Engine(self.config, seed=seed)
        self.runner = EngineRunner(self.engine, speedup)
        self.info = ServerInfo(self.engine, port, seed)
        self.registry = metrics.registry_for(self.engine)
        self.warmed_up = False
        get, post = frozenset({"GET"}), frozenset({"POST"})
        get_post, post_put = frozenset({"GET", "POST"}), frozenset({"POST", "PUT"})
        self.routes: dict[str, Route] = {
            paths.HEALTH: Route(self.health, get, Auth.OPEN),
            paths.HEALTH_GENERATE: Route(self.health, get, Auth.OPEN),
            paths.READY: Route(self.health, get, Auth.OPEN),
            paths.METRICS: Route(self.metrics, get, Auth.OPEN),
            paths.MODEL_INFO: Route(self.answer_json(self.info.model_info), get, Auth.NORMAL),
            paths.GET_MODEL_INFO: Route(self.answer_json(self.info.model_info), get, Auth.NORMAL),
            paths.SERVER_INFO: Route(self.answer_json(self.info.server_info), get, Auth.NORMAL),
            paths.GET_SERVER_INFO: Route(self.answer_json(self.info.server_info), get, Auth.NORMAL),
            paths.MODELS: Route(self.answer_json(self.info.models), get, Auth.NORMAL),
            paths.LOADS: Route(partial(loads.respond, self.engine, SGLANG_VERSION), get, Auth.NORMAL),
            paths.SET_INTERNAL_STATE: Route(self.set_internal_state, post_put, Auth.ADMIN_OPTIONAL),
            paths.FLUSH_CACHE: Route(self.flush_cache, get_post, Auth.ADMIN_OPTIONAL),
            paths.GENERATE: Route(self.generate, post_put, Auth.NORMAL),
            paths.CHAT_COMPLETIONS: Route(self.chat, post, Auth.NORMAL),
            paths.COMPLETIONS: Route(self.completions, post, Auth.NORMAL),
            SIMULATED_HOST_PATH: Route(self.answer_json(self.info.simulated_host), get, Auth.NORMAL),
        }

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = HttpRequest(scope, receive, send)
        route = self.routes.get(scope["path"])
        if route is None:
            await request.respond_json({"detail": "Not Found"}, 404)
            return
        if request.method not in route.methods:
            await request.respond_json({"detail": "Method Not Allowed"}, 405)
            return
        if not self._allowed(request, route.auth):
            await request.respond_json({"error": "Unauthorized"}, 401)
            return
        try:
            await route.handler(request)
        except ConnectionResetError:
            return

    def _allowed(self, request: HttpRequest, level: Auth) -> bool:
        if level is Auth.OPEN or request.method == "OPTIONS":
            return True
        key = self.config.api_key
        expected = (self.config.admin_api_key or key) if level is Auth.ADMIN_OPTIONAL else key
        if not expected:
            return True
        scheme, _, token = request.header("authorization").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(token.encode(), expected.encode())

    # ------------------------------------------------------------------ plain routes

    async def health(self, request: HttpRequest) -> None:
        await request.respond(200 if self.warmed_up else 503, b"", "text/plain; charset=utf-8")

    async def metrics(self, request: HttpRequest) -> None:
        await request.respond(200, metrics.render(self.registry), metrics.CONTENT_TYPE)

    def answer_json(self, answer: Callable[[], Any]) -> Callable[[HttpRequest], Awaitable[None]]:
        async def handler(request: HttpRequest) -> None:  # /model_info, /server_info ...: answer() as JSON
            await request.respond_json(answer())

        return handler

    async def flush_cache(self, request: HttpRequest) -> None:
        if self.engine.flush():
            await request.respond_text(
                "Cache flushed.\nPlease check backend logs for more details. "
                "(When there are running or waiting requests, the operation will not be performed.)\n"
            )
        else:
            await request.respond_text("Flush cache failed.\n", 400)

    # ------------------------------------------------------------------ /set_internal_state

    async def set_internal_state(self, request: HttpRequest) -> None:
        try:
            body = await request.json()
        except BadRequest as exc:
            await request.respond_error(400, str(exc), "Bad Request")
            return
        server_args = body.get("server_args") if isinstance(body, dict) else None
        if not isinstance(server_args, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in server_args.values()
        ):
            why = "server_args must be an object of numbers (Dict[str, Union[int, float]])"
            await request.respond_error(400, why, "Bad Request")
            return
        await request.respond_json([self.apply_internal_state(server_args)])

    def apply_internal_state(self, server_args: dict[str, int | float]) -> bool:
        """Validate every key first (one bad key rejects the whole request), then apply all."""
        for key, value in server_args.items():
            if self.reject_reason(key, value) is not None:
                return False
        controller = self.engine.controller
        for key, value in server_args.items():
            if key == live_control.LIVE_THRESHOLD_KEY and controller is not None:
                controller.set_threshold(int(value))
            elif key == live_control.LIVE_STEPS_KEY and controller is not None:
                controller.set_pinned_steps(int(value))
            elif key in PATCH_03_KEYS:
                self.engine.zero_step.apply(key, int(value))
            else:
                if key.startswith("speculative_accept_threshold"):
                    # Acceptance statistics describe the previous threshold: start over, as 0.5.23 does.
                    self.engine.stats.reset_spec_totals()
                self.info.overrides[key] = value
        return True

    def reject_reason(self, key: str, value: int | float) -> str | None:
        """Why ``/set_internal_state`` refuses ``key=value`` (SGLang's rules and the live keys'); None if it accepts."""
        if key in live_control.LIVE_KEYS:
            controller = self.engine.controller
            if controller is None:
                return f"{key} needs adaptive speculative decoding (--speculative-adaptive, still enabled after resolution)."
            if key == live_control.LIVE_THRESHOLD_KEY:
                return controller.check_threshold(value)
            return controller.check_steps(value)
        if key in PATCH_03_KEYS:
            return self.engine.zero_step.check(key, value, adaptive=self.engine.controller is not None)
        if key not in SGLANG_SET_INTERNAL_STATE_KEYS:
            return f"Updating {key} is not supported."
        if key == "pp_max_micro_batch_size":
            upper = self.config.max_running_requests
            return None if 1 <= value <= upper else f"out of the valid range [1, {upper}]"
        if key.startswith("dspark_"):
            return f"{key} requires a DSpark draft worker."
        return None

    # ------------------------------------------------------------------ generation

    async def generate(self, request: HttpRequest) -> None:
        try:
            gen = parse_generate(
                await request.json(), self.config.context_length, self.config.served_model_name
            )
        except BadRequest as exc:
            await request.respond_json({"error": {"message": str(exc)}}, 400)
            return
        await self._serve(request, gen)

    async def chat(self, request: HttpRequest) -> None:
        await self._openai(request, parse_chat)

    async def completions(self, request: HttpRequest) -> None:
        await self._openai(request, parse_completion)

    async def _openai(self, request: HttpRequest, parse: Callable[[Any, int], GenerationRequest]) -> None:
        media = request.header("content-type").split(";", 1)[0].strip().lower()
        if media != "application/json":
            await request.respond_error(
                400, "Unsupported Media Type: Only 'application/json' is allowed", "Bad Request"
            )
            return
        try:
            gen = parse(await request.json(), self.config.context_length)
        except BadRequest as exc:
            await request.respond_error(400, str(exc))
            return
        await self._serve(request, gen)

    def _new_request(self, gen: GenerationRequest, wake: asyncio.Event) -> SimRequest:
        eng = self.engine
        max_new = gen.max_new_tokens
        if max_new is None:
            max_new = self.config.context_length - gen.input_len
        natural = None if gen.ignore_eos else max(1, int(eng.rng.lognormvariate(5.4, 0.6)))
        return SimRequest(
            rid=gen.rid or eng.new_rid(),
            input_len=gen.input_len,
            max_new_tokens=max_new,
            ignore_eos=gen.ignore_eos,
            stream=gen.stream,
            natural_len=natural,
            notify=lambda _req: wake.set(),
            prompt_key=gen.prompt_key,
        )

    async def _serve(self, request: HttpRequest, gen: GenerationRequest) -> None:
        wake = asyncio.Event()
        req = self._new_request(gen, wake)
        if req.max_new_tokens < 1:
            await request.respond_json({"error": {"message": "max_new_tokens must be at least 1"}}, 400)
            return
        self.runner.submit(req)
        watcher = asyncio.create_task(self._watch_disconnect(request, req, wake))
        try:
            if gen.stream:
                await self._stream(request, gen, req, wake)
                return
            while not req.finished:
                await wake.wait()
                wake.clear()
            if req.aborted:
                reason = req.finish_reason or {}
                status = int(reason.get("status_code", 500))
                await request.respond_json({"error": {"message": reason.get("message")}}, status)
                return
            draft = self.config.draft_tokens
            if gen.kind == "generate":
                await request.respond_json(responses.generate_body(req, True, draft))
            else:
                await request.respond_json(responses.openai_response(gen, req, int(time.time()), draft))
        finally:
            watcher.cancel()
            if not req.finished:
                self.runner.abort(req)

    async def _watch_disconnect(self, request: HttpRequest, req: SimRequest, wake: asyncio.Event) -> None:
        """The client went away: abort the request so it stops holding a batch slot and KV."""
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                if not req.finished:
                    self.runner.abort(req)
                wake.set()
                return

    async def _stream(
        self, request: HttpRequest, gen: GenerationRequest, req: SimRequest, wake: asyncio.Event
    ) -> None:
        send = request.send
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        created = int(time.time())
        draft = self.config.draft_tokens
        openai = gen.kind != "generate"
        template = responses.content_chunk_template(gen, req, created) if openai else None
        native = None if openai else responses.GenerateStream(req, draft)
        sent = 0

        async def write(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        if gen.kind == "chat":
            await write(sse(responses.dumps(responses.content_chunk(gen, req, created, 0, 0, role=True))))
        while True:
            await wake.wait()
            wake.clear()
            now = req.output_len
            final = req.finished
            if req.aborted:
                break
            if template is not None and now > sent:
                piece = text.words(req.rid, sent, now)
                chunk = template.render(piece=piece, completion=now, total=req.input_len + now)
                await write(sse(chunk))
            elif native is not None and (now > sent or final):
                await write(sse(native.chunk(final)))
            sent = now
            if final:
                break
        if req.aborted:
            reason = req.finish_reason or {}
            error = {
                "error": {
                    "message": reason.get("message", "The request was aborted."),
                    "type": "invalid_request_error",
                    "code": reason.get("status_code", 500),
                    "retryable": False,
                }
            }
            await write(sse(responses.dumps(error)))
        elif openai:
            await write(sse(responses.dumps(responses.finish_chunk(gen, req, created))))
            if gen.return_spec_details:
                await write(sse(responses.dumps(responses.sglext_chunk(gen, req, created, draft))))
            if gen.include_usage:
                await write(sse(responses.dumps(responses.usage_chunk(gen, req, created))))
        await send({"type": "http.response.body", "body": SSE_DONE, "more_body": False})

    def abort_all(self) -> None:
        eng = self.engine
        for req in [*eng.running, *eng.waiting, *([eng.chunked] if eng.chunked else [])]:
            eng.abort(req)
            if req.notify is not None:
                req.notify(req)


@dataclass
class RunningSim:
    url: str
    port: int
    server: SimServer
    http: uvicorn.Server

    @property
    def engine(self) -> Engine:
        return self.server.engine

    def connection_sockets(self) -> list[socket.socket]:
        """The server's ends of its open client connections (to check their socket options)."""
        found = []
        for protocol in self.http.server_state.connections:
            transport = getattr(protocol, "transport", None)
            sock = transport.get_extra_info("socket") if transport is not None else None
            if sock is not None:
                found.append(sock)
        return found

    @property
    def runner(self) -> EngineRunner:
        return self.server.runner


@asynccontextmanager
async def run_sim(
    profile: Profile,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    speedup: float = 1.0,
    seed: int = 0,
    api_key: str | None = None,
    admin_api_key: str | None = None,
    draft_acceptance: str = "calibrated",
    drafter_change: DrafterChange | None = None,
) -> AsyncIterator[RunningSim]:
    """Serve a simulated engine for ``profile`` on ``host:port`` (0 = any free port) until the block exits."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle off (TCP_NODELAY) only on accepted sockets
    # whose proto says TCP, and uvicorn writes a response's head and body in two sends. With Nagle on,
    # the body waits for the client's delayed ACK of the head: ~40 ms per JSON answer on a kept-alive
    # connection (issue 3).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    actual_port = int(sock.getsockname()[1])
    keys = {"api_key": api_key, "admin_api_key": admin_api_key}
    server = SimServer(
        profile, port=actual_port, speedup=speedup, seed=seed, draft_acceptance=draft_acceptance, **keys
    )
    server.engine.drafter_change = drafter_change  # from the engine's start (its clock is at 0)
    config = uvicorn.Config(
        server,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http=http_impl(),
        ws="none",
        timeout_graceful_shutdown=2,
        backlog=2048,
    )
    config.load()
    uv = uvicorn.Server(config)
    uv.lifespan = config.lifespan_class(config)
    await uv.startup(sockets=[sock])
    main_loop = asyncio.create_task(uv.main_loop())
    server.runner.start()
    await warm_up(server.runner)
    server.warmed_up = True  # /health answers 200 from here, as SGLang's does after its warm-up
    url_host = f"[{host}]" if ":" in host else host
    try:
        yield RunningSim(url=f"http://{url_host}:{actual_port}", port=actual_port, server=server, http=uv)
    finally:
        await server.runner.stop()
        server.abort_all()
        uv.should_exit = True
        await main_loop
        await uv.shutdown(sockets=[sock])
        sock.close()
