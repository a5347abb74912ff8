"""``agent smoke``: write the tiny models, start one engine per EAGLE-3 head, check them, stop them.

The engines run through the same ``Supervisor`` as ``agent serve`` (own process group, log file,
engine record, readiness probe), one run folder each under ``<work dir>/runs/``; a crash-loop limit
of 1, so an engine that dies is reported with its log's error at once. Both heads (``--draft
both``) start at the same time on one GPU (see ``agent.smoke.derive`` for the memory settings) and
are checked concurrently. Whatever happens (a failed check, an exception, SIGINT, SIGTERM) the
engines are stopped before the command returns; an engine left by an earlier run that was killed
outright is found from its record and stopped first.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agent.engine import proc
from agent.engine.logfile import EngineLog
from agent.engine.policy import RestartPolicy
from agent.engine.record import EngineKind, read_record
from agent.engine.running import RunningEngine, terminate
from agent.engine.spec import EngineSpec, free_loopback_port, sglang_spec, sim_spec
from agent.engine.supervisor import TERM_GRACE_S, Supervisor
from agent.install.stack_check import stack_problems
from agent.profile import dump_profile
from agent.profile.schema import Profile
from agent.sglang.launch import stack_environ
from agent.sglang.support import threshold_unavailable_reason
from agent.smoke import checks as smoke_checks
from agent.smoke.derive import MAX_TOTAL_TOKENS, smoke_profile
from agent.smoke.shapes import TINY_MODELS_SCRIPT, ModelSet, ModelShape

Say = Callable[[str], None]
GENERATE_TIMEOUT_S = 900.0
PROGRESS_EVERY_S = 30.0


class SmokeError(Exception):
    """The smoke cannot run at all (bad profile, no stack, no models); the message says what to do."""


@dataclass(frozen=True)
class SmokeOptions:
    profile: Profile
    engine: EngineKind
    drafts: tuple[str, ...]
    work_dir: Path
    shape: ModelShape
    preset: str
    startup_timeout_s: float = 600.0
    gpu: int | None = None
    sim_speedup: float = 10.0
    tp_size: int = 1
    """Tensor parallel over the first ``tp_size`` visible GPUs (the live threshold on every rank)."""


@dataclass
class EngineRun:
    draft: str
    profile: Profile
    supervisor: Supervisor
    folder: Path
    events: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def smoke_problems(profile: Profile) -> list[str]:
    """Why the profile cannot be smoke-tested (the smoke checks adaptive EAGLE-3 with live controls)."""
    if not profile.speculative:
        return ["the profile runs without speculation; agent smoke checks EAGLE-3 adaptive speculation"]
    reason = threshold_unavailable_reason(profile)
    if reason is not None:
        return [f"the live threshold and steps are unavailable for this profile: {reason}"]
    if not profile.speculation.live_steps:
        return ["speculation.live_steps is empty: no step can be pinned live"]
    return []


def stack_python(profile: Profile) -> Path:
    return Path(profile.stack.venv).expanduser() / "bin" / "python"


def check_stack(profile: Profile) -> None:
    python = stack_python(profile)
    if not python.exists():
        raise SmokeError(f"no stack python at {python}: build the stack first (agent install --profile ...)")
    problems = stack_problems(Path(profile.stack.venv))
    if problems:
        raise SmokeError("the stack is not as agent install left it: " + "; ".join(problems))


async def write_models(models: ModelSet, python: Path, say: Say) -> None:
    """Run the generator with the stack's python (torch is there); reuse models of the same spec."""
    if models.complete():
        say(f"models: reusing {models.folder} ({models.preset})")
        return
    models.folder.mkdir(parents=True, exist_ok=True)
    spec_path = models.folder / "spec.json"
    spec_path.write_text(json.dumps(models.spec(), indent=1))
    say(
        f"models: writing the {models.preset} target and {len(models.drafts)} EAGLE-3 heads "
        f"({', '.join(models.drafts)}) into {models.folder} ..."
    )
    started = time.monotonic()
    child = await asyncio.create_subprocess_exec(
        str(python),
        str(TINY_MODELS_SCRIPT),
        str(spec_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=stack_environ(),
    )
    try:
        # asyncio.timeout, not wait_for: on 3.11 wait_for swallowed a SIGTERM's cancel that landed as
        # the generator exited, and the smoke went on to start an engine.
        async with asyncio.timeout(GENERATE_TIMEOUT_S):
            out, _ = await child.communicate()
    except (TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        await child.wait()
        raise
    text = out.decode(errors="replace")
    if child.returncode != 0 or not models.complete():
        tail = "\n".join(text.strip().splitlines()[-8:])
        raise SmokeError(f"writing the tiny models failed (exit {child.returncode}):\n{tail}")
    last = json.loads(text.strip().splitlines()[-1])
    say(
        f"models: written in {time.monotonic() - started:.1f} s on {last.get('device')} (torch {last.get('torch')})"
    )


async def stop_leftovers(runs: Path, say: Say) -> None:
    """Engines of an earlier smoke that was killed outright: still ours if pid, start time and argv match."""
    for record_path in sorted(runs.glob("*/engine.json")):
        record = read_record(record_path)
        if record is None:
            continue
        cmdline = proc.read_cmdline(record.pid)
        alive = proc.is_same_process(record.pid, record.start_ticks)
        if alive and cmdline and proc.argv_hash(cmdline) == record.argv_hash:
            say(
                f"stopping a {record.kind} engine left by an earlier smoke run (pid {record.pid}, {record.url})"
            )
            engine = RunningEngine(
                record.pid, record.pgid, record.start_ticks, record.url, record.kind, record.launched_at
            )
            await terminate(engine, TERM_GRACE_S[record.kind], 0.2, lambda name, msg, data: say(msg))
        record_path.unlink(missing_ok=True)


def _spec_for(opts: SmokeOptions, draft: str, run_dir: Path) -> Callable[[Profile], EngineSpec]:
    def spec_for(profile: Profile) -> EngineSpec:
        if opts.engine == "sim":
            spec = sim_spec(profile, run_dir, speedup=opts.sim_speedup, draft_acceptance=draft)
        else:
            spec = sglang_spec(profile, run_dir)
        return dataclasses.replace(spec, startup_timeout_s=opts.startup_timeout_s)

    return spec_for


def _engine_run(
    opts: SmokeOptions, models: ModelSet, draft: str, http: httpx.AsyncClient, stamp: str, say: Say
) -> EngineRun:
    folder = opts.work_dir / "runs" / f"{stamp}-{draft}"
    folder.mkdir(parents=True, exist_ok=True)
    profile = smoke_profile(
        opts.profile,
        target=models.target,
        draft=models.draft(draft),
        port=free_loopback_port(),
        gpu=opts.gpu,
        label=draft,
        simulated=opts.engine == "sim",
        tp_size=opts.tp_size,
    )
    holder: list[EngineRun] = []

    def emit(name: str, message: str, data: dict[str, Any]) -> None:
        holder[0].events.append((name, message, data))
        say(f"{draft}: {name}: {message}")

    supervisor = Supervisor(
        kind=opts.engine,
        record_path=folder / "engine.json",
        engine_log=EngineLog(folder / "engine.log"),
        http=http,
        spec_for=_spec_for(opts, draft, folder / "run"),
        emit=emit,
        policy=RestartPolicy(crash_loop_limit=1),
        poll_s=0.1 if opts.engine == "sim" else 0.5,
    )
    (folder / "profile.toml").write_text(dump_profile(profile))  # to serve the same engine by hand
    holder.append(EngineRun(draft, profile, supervisor, folder))
    return holder[0]


SETTLED = frozenset({"ready", "crashed", "crash_loop"})
NOT_STOPPED = frozenset({"starting", "restarting", "ready", "draining", "crashed", "crash_loop", "unknown"})


async def _until_settled(run: EngineRun, limit_s: float, say: Say) -> float:
    """Wait for ready or a failure (a held port leaves the engine "stopped" with an error), awaiting
    the supervisor's state changes; a line every 30 s with the engine log's last line."""
    sup = run.supervisor
    started = time.monotonic()
    while True:
        state = sup.state
        if state in SETTLED or (state == "stopped" and sup.last_error is not None):
            break
        waited = time.monotonic() - started
        if waited > limit_s + 60:
            break
        # A new supervisor reads "stopped" until its lifecycle runs: wait for it to leave that first.
        target = set(NOT_STOPPED) if state == "stopped" else {*SETTLED, "stopped"}
        if not await sup.wait_for_state(target, PROGRESS_EVERY_S):
            last = sup.log.tail(1)
            say(f"{run.draft}: still {sup.state} after {waited:.0f} s; log: {(last or [''])[0][:160]}")
    return time.monotonic() - started


async def _check_engine(
    run: EngineRun, opts: SmokeOptions, http: httpx.AsyncClient, report: smoke_checks.Report, say: Say
) -> None:
    sup = run.supervisor
    waited = await _until_settled(run, opts.startup_timeout_s, say)
    ready = sup.state == "ready" and sup.url is not None
    error = sup.last_error or {}
    report.add(
        smoke_checks.CheckRow(
            run.draft,
            f"ready within {opts.startup_timeout_s:.0f} s",
            "ready",
            f"ready in {sup.last_startup_s or waited:.0f} s"
            if ready
            else f"{sup.state} after {waited:.0f} s",
            ready,
            waited,
            ""
            if ready
            else f"{error.get('summary', 'no error in the engine log')}"
            + (f" (raised at {error['frame']})" if error.get("frame") else "")
            + f"; engine log {sup.log.path}",
        )
    )
    if not ready or sup.url is None:
        return
    engine = smoke_checks.EngineChecks(run.draft, sup.url, run.profile, http, report)
    await smoke_checks.snapshot_check(engine, opts.engine, sup.pid, MAX_TOTAL_TOKENS)
    if run.draft == "oracle":
        await smoke_checks.oracle_checks(engine)
    else:
        await smoke_checks.random_checks(engine)


async def run_smoke(opts: SmokeOptions, say: Say, report: smoke_checks.Report) -> smoke_checks.Report:
    problems = smoke_problems(opts.profile) + opts.shape.problems(tp_size=opts.tp_size)
    if opts.tp_size > 1 and opts.gpu is not None:
        problems.append(
            f"--gpu picks one GPU; with --tp {opts.tp_size} the engines use the first {opts.tp_size}"
        )
    if problems:
        raise SmokeError("; ".join(problems))
    models = ModelSet(opts.work_dir / "models", opts.shape, opts.preset)
    runs_dir = opts.work_dir / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    await stop_leftovers(runs_dir, say)
    if opts.engine == "sglang":
        check_stack(opts.profile)
        await write_models(models, stack_python(opts.profile), say)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    async with httpx.AsyncClient(timeout=30.0, trust_env=False) as http:
        runs = [_engine_run(opts, models, draft, http, stamp, say) for draft in opts.drafts]
        try:
            for run in runs:
                say(
                    f"{run.draft}: profile {run.folder / 'profile.toml'}; starting the {opts.engine} engine ({run.profile.server.host}:{run.profile.server.port}, log {run.folder / 'engine.log'})"
                )
                await run.supervisor.begin(run.profile)
            await asyncio.gather(*(_check_engine(run, opts, http, report, say) for run in runs))
        finally:
            await asyncio.shield(_stop_all(runs, say))
    (runs_dir / f"{stamp}-report.json").write_text(
        json.dumps([dataclasses.asdict(r) for r in report.rows], indent=1) + "\n"
    )
    say(f"report: {runs_dir / f'{stamp}-report.json'}")
    return report


async def _stop_all(runs: list[EngineRun], say: Say) -> None:
    async def stop(run: EngineRun) -> None:
        started = time.monotonic()
        engine: RunningEngine | None = run.supervisor.engine
        await run.supervisor.stop(drain_timeout_s=0)
        if engine is not None:
            say(f"{run.draft}: engine stopped in {time.monotonic() - started:.1f} s")

    await asyncio.gather(*(stop(run) for run in runs), return_exceptions=True)
