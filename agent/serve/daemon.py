"""The daemon: one engine supervisor, one telemetry loop, one action book, one stream, one state dir.

It owns no business rules itself; it wires the parts together and holds what the API routes read.
Stopping the agent leaves the engine running (an agent restart must not restart SGLang) unless the
operator asks for the engine too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

import agent
from agent.control.actions import ActionBook
from agent.control.audit import AuditLog
from agent.control.autopilot.runner import AutopilotRunner
from agent.control.library import ProfileLibrary
from agent.control.live import LiveOutcome, apply_live
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.engine.probe import requests_in_flight
from agent.engine.record import EngineKind
from agent.engine.spec import EngineSpec, sglang_spec, sim_spec
from agent.engine.state_disk import StateDisk
from agent.engine.supervisor import Supervisor
from agent.install.manifest import stack_manifest
from agent.profile import Profile
from agent.serve.bench import BenchService
from agent.serve.open_operations import OpenOperations
from agent.serve.operations import Operations
from agent.serve.paths import StatePaths
from agent.serve.reconcile import LiveLedger
from agent.serve.stream import StreamHub
from agent.sglang.launch import LaunchError, env_file_secrets, read_key_file
from agent.sglang.redact import (
    hidden_env_values,
    redact_lines,
    redact_text,
    redact_values,
    secret_flag_values,
)
from agent.telemetry.changes import telemetry_events
from agent.telemetry.collector import Collector, Identity
from agent.telemetry.health import EngineCounts, HealthWatch
from agent.telemetry.nvml import NoGpuSampler, make_sampler
from agent.telemetry.sim_gpus import SimGpuLoad, SimulatedGpus
from agent.wire import API_VERSION, WIRE_VERSION, Snapshot
from agent.wire.events import EventKind

if TYPE_CHECKING:
    from agent.telemetry.collector import Observation

__all__ = ["Daemon", "ServeConfig", "redact_lines"]

log = logging.getLogger(__name__)

MIN_TICK_S, MAX_TICK_S = 0.25, 5.0


@dataclass(frozen=True)
class ServeConfig:
    profile: Profile
    profile_path: Path
    profiles_dir: Path
    engine: EngineKind
    paths: StatePaths
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    drain_timeout_s: float = 60.0
    gpus: str = "auto"
    gpu_fixture: Path | None = None
    sim_speedup: float | None = None
    sim_draft_acceptance: str | None = None
    sim_drafter_change: str | None = None
    """``agent sim --drafter-change`` (AFTER_S:NAME, checked by the CLI)."""
    router_url: str | None = None
    """SGLang's router in front of this host and others (``--router-url``): ``GET /v1/router`` reads it."""
    router_metrics_url: str | None = None
    """The router's metrics port (``--router-metrics-url``): each worker's circuit breaker."""


def _read_key(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return read_key_file(os.path.expanduser(path))
    except LaunchError:
        return None


class Daemon:
    def __init__(self, config: ServeConfig, token: str) -> None:
        self.config = config
        self.paths = config.paths
        self.token = token
        self.started_at = time.time()
        self.hub = StreamHub()
        # One client for every call to the engine; the hook adds the engine's API key when it has one.
        self.http = httpx.AsyncClient(timeout=10.0, event_hooks={"request": [self._authorize]})
        self.library = ProfileLibrary(config.profiles_dir)
        self.engine_log = EngineLog(self.paths.engine_log)
        self.tick_interval_s = config.profile.telemetry.tick_interval_s
        self._tick_changed = asyncio.Event()
        self.state_disk = StateDisk(str(self.paths.root))
        audit = AuditLog(self.paths.audit, disk=self.state_disk)
        self.audit_index = audit.index()  # one streamed scan at start: request ids, open intents, damage
        self.ops = Operations(audit)
        self.open_ops = OpenOperations(audit, self.audit_index.open_ops)  # restarts the last agent left open
        self.live_ledger = LiveLedger(
            http=self.http,
            headers=self.engine_headers,
            audit=audit,
            pending=self.audit_index.pending,
            on_first_answer=lambda: self.open_ops.settle(self.supervisor.engine),
            emit=lambda name, msg, data: self.emit(
                "engine" if name.split(".")[0] == "engine" else "agent", name, msg, data
            ),
        )
        self.supervisor = Supervisor(
            kind=config.engine,
            record_path=self.paths.engine_record,
            engine_log=self.engine_log,
            http=self.http,
            spec_for=self._spec_for,
            emit=lambda name, msg, data: self.emit("engine", name, msg, data),
            policy=config.policy,
            running_requests=self._running_requests,
            redact=lambda lines: redact_lines(lines, self.secrets()),
            restore_live=self.live_ledger,
            disk=self.state_disk,
            engine_dir=self.paths.engine_dir,
        )
        self.actions = ActionBook(
            engine=self.supervisor,
            load_named=self.library.load,
            http=self.http,
            engine_headers=self.engine_headers,
            audit=audit,
            emit=lambda name, msg, data: self.emit("action", name, msg, data),
            on_profile_applied=self._profile_applied,
            drain_timeout_s=config.drain_timeout_s,
            live_pinned=lambda: self.hub.latest.speculation.pinned_steps if self.hub.latest else None,
            audited=self.audit_index.requests,
        )
        self.autopilot = AutopilotRunner(
            config.profile,
            apply=self._apply_live,
            emit=lambda name, msg, data: self.emit("autopilot", name, msg, data),
            audit=self.actions.audit,
            refresh=lambda: self.collector.refresh_server_info() if self.collector is not None else None,
        )
        self._telemetry_task: asyncio.Task[None] | None = None
        self._last_snapshot: Snapshot | None = None
        self.collector: Any = None
        self._gpus: Any = None
        self.exit_requested = asyncio.Event()
        self.stop_engine_on_exit = False
        self.bench: BenchService | None = None

    # ---- wiring ---------------------------------------------------------------------------------

    def emit(self, kind: EventKind, name: str, message: str, data: dict[str, Any] | None = None) -> None:
        """Publish an event of the supervisor, the action book, the bench or the agent itself.

        Its name must be one of ``wire.EventName`` (a test checks every name the agent emits); one
        that is not is still published, as ``agent.unknown_event``, rather than lost or raised."""
        secrets = self.secrets()
        message, data = redact_text(message, secrets), redact_values(data, secrets)
        log.info("%s: %s", name, message)
        self.hub.publish_event(name, message, data)

    def _sim_gpu_load(self) -> Any:
        """What the simulated GPU host follows: the last snapshot's batch and the engine's memory."""
        snap = self.hub.latest
        running = snap.load.running if snap is not None and snap.load.running is not None else 0
        fraction = self.profile.server.mem_fraction_static or 0.85
        return SimGpuLoad(running=running, engine_pid=self.supervisor.pid, memory_fraction=fraction)

    def _spec_for(self, profile: Profile) -> EngineSpec:
        if self.supervisor.kind == "sim":
            return sim_spec(
                profile,
                self.paths.engine_dir,
                speedup=self.config.sim_speedup,
                draft_acceptance=self.config.sim_draft_acceptance,
                drafter_change=self.config.sim_drafter_change,
            )
        return sglang_spec(profile, self.paths.engine_dir)

    @property
    def profile(self) -> Profile:
        """What runs, live values included: what the operator sees and changes."""
        return self.supervisor.profile or self.config.profile

    @property
    def launched_profile(self) -> Profile:
        """What the engine was launched with: what it has built (its KV shapes, its step states)."""
        return self.supervisor.launched or self.config.profile

    def secrets(self) -> list[str]:
        """Values that must never leave the agent: its token, the engine's keys, its env values (but
        numbers and booleans), those it reads from files and the values of secret flags in
        ``extra_flags``."""
        p = self.profile
        found = [self.token, _read_key(p.server.api_key_file), _read_key(p.server.admin_api_key_file)]
        return (
            [s for s in found if s]
            + hidden_env_values(p.server.env)
            + env_file_secrets(p.server.env_files)
            + secret_flag_values(p.server.extra_flags)
        )

    def engine_headers(self, admin: bool = True) -> dict[str, str]:
        p = self.profile
        key = (_read_key(p.server.admin_api_key_file) if admin else None) or _read_key(p.server.api_key_file)
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def _authorize(self, request: httpx.Request) -> None:
        if "authorization" not in request.headers:
            request.headers.update(self.engine_headers(admin=False))

    async def _running_requests(self) -> int | None:
        url = self.supervisor.url
        return None if url is None else await requests_in_flight(self.http, url)

    async def _profile_applied(self, profile: Profile, pinned: int | None = None) -> str | None:
        self.set_tick_interval(profile.telemetry.tick_interval_s)
        if self.collector is not None:
            self.collector.refresh_server_info()  # show the read-back on the next tick
        return await self.autopilot.configure(profile, pinned)

    async def _apply_live(self, args: dict[str, int]) -> LiveOutcome:
        """The autopilot's changes go the way an operator's live action goes (``control.live``)."""
        url = self.supervisor.url
        if url is None or self.supervisor.state != "ready":
            return LiveOutcome(False, f"the engine is not ready (state {self.supervisor.state})")
        return await apply_live(self.http, url, args, self.engine_headers())

    def set_tick_interval(self, seconds: float) -> None:
        if not MIN_TICK_S <= seconds <= MAX_TICK_S:
            raise ValueError(f"tick_interval_s must be between {MIN_TICK_S} and {MAX_TICK_S} (got {seconds})")
        self.tick_interval_s = seconds
        self._tick_changed.set()

    # ---- life -----------------------------------------------------------------------------------

    async def start(self) -> None:
        self.emit(
            "agent",
            "agent.started",
            f"agent {agent.__version__} started (pid {os.getpid()}) with profile {self.config.profile.identity.name}",
            {"pid": os.getpid()},
        )
        self._gpus = self._make_gpu_sampler()
        self._report_audit_damage()
        await self.supervisor.begin(self.config.profile)
        self._telemetry_task = asyncio.create_task(self._telemetry_loop(), name="telemetry")
        self.bench = self._make_bench()
        await self.autopilot.start()

    def _report_audit_damage(self) -> None:
        """Torn or corrupt audit lines are skipped by every read; say so once, where an operator looks."""
        damaged = self.audit_index.corrupt
        if damaged:
            self.emit(
                "agent",
                "agent.audit_damaged",
                f"The audit log {self.paths.audit} has {damaged} torn or corrupt line(s); they are skipped "
                "and listed by GET /v1/audit (corrupt), the other lines are intact",
                {"corrupt": damaged},
            )

    def _make_gpu_sampler(self) -> Any:
        if self.config.gpus == "sim":
            return SimulatedGpus(self._sim_gpu_load)
        try:
            return make_sampler(self.config.gpus, fixture=self.config.gpu_fixture)
        except Exception as exc:  # a broken driver must not stop the agent
            self.emit("agent", "agent.gpu_sampler", f"GPU sampling is off: {exc}")
            return make_sampler("none")

    def _make_bench(self) -> BenchService:
        return BenchService(self)

    async def shutdown(self) -> None:
        self.emit(
            "agent",
            "agent.stopping",
            "agent stopping" + (" with the engine" if self.stop_engine_on_exit else ""),
        )
        if self._telemetry_task is not None:
            self._telemetry_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._telemetry_task
        if self.bench is not None:
            await self.bench.close()
        await self.autopilot.close()
        await self.actions.close()
        if self.stop_engine_on_exit:
            await self.supervisor.stop(drain_timeout_s=self.config.drain_timeout_s)
        else:
            await self.supervisor.detach()
        self.hub.close()
        await self.http.aclose()
        if self._gpus is not None:
            with contextlib.suppress(Exception):
                self._gpus.close()

    def request_exit(self, *, engine_too: bool) -> None:
        self.stop_engine_on_exit = engine_too
        self.exit_requested.set()

    # ---- telemetry ------------------------------------------------------------------------------

    async def _telemetry_loop(self) -> None:
        gpus = self._gpus if self._gpus is not None else NoGpuSampler()
        # The collector derives build facts (KV shapes, the 0-step state) from the launch profile.
        collector = Collector(None, self.launched_profile, gpus, self.http)
        self.collector = collector
        health = HealthWatch(traffic_window_s=collector.windows.longest_s)
        pointed_at: tuple[str | None, Profile] | None = None
        while True:
            started = time.monotonic()
            profile = self.profile
            target = (self.supervisor.url, self.launched_profile)
            if target != pointed_at:
                collector.set_engine(*target)
                pointed_at = target
            try:
                observed = await collector.tick(self.supervisor.state, self.supervisor.pid)
                counts = EngineCounts(self.supervisor.restarts, self.supervisor.failures)
                bench = self.bench.on_engine() if self.bench is not None else None
                evidence = self.bench.evidence() if self.bench is not None else None
                self.autopilot.prior(evidence)  # the autopilot starts from it, and says so
                judged = functools.partial(health.observe, limits=profile.health, counts=counts,
                                           scrape_error=collector.last_error, bench=bench,
                                           evidence=None if profile.speculation.autopilot.enabled else evidence)  # fmt: skip
                self._publish(observed, profile, judged)
            except Exception:
                log.exception("telemetry tick failed")
            self.state_disk.write("the engine log rotation", self.engine_log_rotate, retry=False)
            self.state_disk.retry_all()
            delay = max(0.0, self.tick_interval_s - (time.monotonic() - started))
            self._tick_changed.clear()
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallowed a cancel that landed as the
            # interval changed, so the loop ticked on and shutdown(), which awaits it, hung.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._tick_changed.wait()

    def engine_log_rotate(self) -> None:
        self.engine_log.rotate_if_needed()

    def _with_disk(self, snap: Snapshot) -> Snapshot:
        """The agent's own findings: the state disk's, when something could not be written
        (``engine.state_disk``), and an engine record that was unreadable at the start."""
        found = [f for f in (self.state_disk.finding(), self.supervisor.record_finding()) if f is not None]
        return snap if not found else snap.model_copy(update={"findings": [*found, *snap.findings]})

    def _publish(
        self,
        observed: Observation,
        profile: Profile,
        judge: Callable[[Snapshot], Snapshot] = lambda snap: snap,
    ) -> Snapshot:
        """Number the observation, stamp its identity (here, once), publish it, and publish what
        changed since the last snapshot (speculation switched, findings raised or cleared) next to it."""
        identity = Identity(
            profile_name=profile.identity.name,
            production=profile.identity.production,
            engine_kind=self.supervisor.kind,
        )
        snap = self.hub.publish_snapshot(
            lambda seq: self.autopilot.stamp(self._with_disk(judge(observed.snapshot(seq, identity))))
        )
        for change in telemetry_events(self._last_snapshot, snap):
            log.info("%s: %s", change.name, change.message)
            self.hub.publish_event(change.name, change.message, change.data, at=snap.time)
        self._last_snapshot = snap
        return snap

    # ---- reads for the API ----------------------------------------------------------------------

    def version(self) -> dict[str, Any]:
        return {
            "agent_version": agent.__version__,
            "api_version": API_VERSION,
            "wire_version": WIRE_VERSION,
            **stack_manifest(self.profile.stack.venv),
        }

    def status(self) -> dict[str, Any]:
        s = self.supervisor
        return {
            "profile": self.profile.identity.name,
            "profile_path": str(self.config.profile_path),
            "engine_kind": s.kind,
            "engine_state": s.state,
            "engine_pid": s.pid,
            "engine_url": s.url,
            "engine_failures": s.failures,
            "engine_restarts": s.restarts,
            "engine_startup_s": s.last_startup_s,
            "engine_last_error": s.last_error,
            "last_seq": self.hub.last_seq,
            "agent_pid": os.getpid(),
            "agent_version": agent.__version__,
            "started_at": self.started_at,
            "tick_interval_s": self.tick_interval_s,
            "state_dir": str(self.paths.root),
            "router_url": self.config.router_url,
            **self._status_of_latest(),
        }

    def _status_of_latest(self) -> dict[str, Any]:
        """What ``agent status`` shows beside the engine: speculation, findings, the benchmark."""
        snap = self.hub.latest
        out: dict[str, Any] = {"latest_snapshot_at": None, "speculation": None, "findings": [], "bench": None}
        if snap is not None:
            spec = snap.speculation
            keys = ("configured", "on", "steps", "topk", "threshold", "threshold_available", "pinned_steps",
                    "off_reason", "off_detail")  # fmt: skip
            out["latest_snapshot_at"] = snap.time
            out["speculation"] = spec.model_dump(mode="json", include=set(keys))
            out["findings"] = [f.model_dump(mode="json", include={"code", "severity", "title", "action", "since"})
                               for f in snap.findings]  # fmt: skip
        if self.bench is not None:
            runs = self.bench.runs.list()
            chosen = next((r for r in runs if r.state == "running"), runs[0] if runs else None)
            out["bench"] = chosen.run_line() if chosen is not None else None
        return out

    def log_lines(self, tail: int, search: str | None) -> list[str]:
        """The engine log's tail; a search matches the redacted text, so it cannot confirm a secret."""
        secrets = self.secrets()
        return self.engine_log.tail(tail, search, redact=lambda line: redact_text(line, secrets))
