"""Speculation forced on, forced off and adaptive on one server, through the live threshold.

The arms share one server and run interleaved (``schedule.plan``: ``repeats`` passes over every
level, on, off, adaptive at each, each pass the mirror of the last), each step after its own
warm-up batch; the original
threshold is written back afterwards whatever happened. An optional baseline arm measures a second
server launched without a drafter, because "off" inside a speculative server still pays for the
drafter's memory and KV reserve.

Before each live step the step policy is put back at the launch step count (pinned, then released:
``EngineProbe.reset_steps``): SGLang's EMA policy remembers the arms before it and can sit at 2 or at
3 steps under the same load, so two arms with the same effective setting could differ by the history
alone. Every threshold change and reset is a switch whose settling the warm-up batch measures
(``settle``); the result lists them (``switches``) and sums them up (``settling``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from agent.bench.aggregate import RunOutcome, arm_estimates, arm_result
from agent.bench.counters import stream_mismatch_words
from agent.bench.engine import EngineError, live_unavailable_reason
from agent.bench.guard import LiveGuard, restore_args
from agent.bench.options import BenchOptions
from agent.bench.partial import Keep, partial_levels
from agent.bench.progress import ProgressCallback, RunTracker, ignore_progress
from agent.bench.provenance import RunContext, environment
from agent.bench.schedule import Step
from agent.bench.stopping import LevelStop, Outcomes, first_steps, measure, stopping_record, whole_test
from agent.bench.summary import compare_summary, settling
from agent.bench.sweep import LiveSwitch, SweepSession, make_client, new_tracker, server_summary
from agent.bench.verdict import recommendation_from_levels
from agent.sglang import paths
from agent.sglang.info_view import ServerInfo
from agent.sglang.kv import reserve_per_decode, zero_step_reserve
from agent.sglang.live_control import NO_THRESHOLD, READBACK_FIELD, ZERO_STEP_PLAIN

NEVER_SPECULATE = 1
LIVE_ARMS = ("on", "off", "adaptive")


def off_memory(info: ServerInfo, concurrency: int) -> dict[str, Any]:
    """What "off inside a speculative server" still holds, from /server_info and SGLang's KV rule."""
    memory = info.state0.memory
    page = info.page_size or 1
    shape = info.spec_shape()
    reserve_spec = reserve_per_decode(shape, page)
    zero_step = info.live.zero_step if info.live is not None else None
    if zero_step is not None and zero_step.path == ZERO_STEP_PLAIN:
        reserve_spec = zero_step_reserve(reserve_spec)  # patch 03: a 0-step batch reserves a plain decode's
    reserve_plain = reserve_per_decode(None, page)
    draft_graph = memory.draft_graph_gb if memory else None
    return {
        "kv_reserve_per_request_tokens": reserve_spec,
        "kv_reserve_per_request_tokens_without_drafter": reserve_plain,
        "kv_reserve_extra_tokens_at_max_concurrency": (reserve_spec - reserve_plain) * concurrency,
        "max_concurrency": concurrency,
        "token_capacity": info.pool_tokens,
        "kvcache_gb": memory.kvcache_gb if memory else None,
        "draft_graph_gb": round(draft_graph or 0.0, 3),
        "target_verify_graph_gb": memory.graph_phases_gb.get("target_verify") if memory else None,
        "spec_shape": None if shape is None else shape.__dict__,
    }


def off_note(mem: dict[str, Any], live: bool = True, baseline: bool = False) -> str:
    extra = mem["kv_reserve_extra_tokens_at_max_concurrency"]
    parts = [
        f"it still reserves {mem['kv_reserve_per_request_tokens']} KV slots per running request "
        f"(a server without a drafter reserves {mem['kv_reserve_per_request_tokens_without_drafter']}: "
        f"{extra} extra slots at c={mem['max_concurrency']})"
        if extra > 0
        else f"it reserves {mem['kv_reserve_per_request_tokens']} KV slots per running request, as a server "
        "without a drafter does (patch 03's plain 0-step path)"
    ]
    if mem.get("kvcache_gb") is not None:
        parts.append(
            f"its KV pool ({mem['kvcache_gb']} GB, {mem['token_capacity']} tokens) is sized with the draft model's KV"
        )
    if mem.get("draft_graph_gb"):
        parts.append(f"the draft model's CUDA graphs hold {mem['draft_graph_gb']} GB")
    if live:
        head = (
            '"off" is this speculative server with its live threshold at 1, not a server without a drafter: '
        )
    else:
        head = "this server cannot stop speculating while it runs, and its drafter costs memory: "
    tail = (
        " The baseline arm measures a server launched without a drafter."
        if baseline
        else " Add --baseline-url (a server launched without a drafter) to measure what that costs."
    )
    return head + "; ".join(parts) + "." + tail


def _arm_tput(arm: dict[str, Any] | None) -> float | None:
    if arm is None or "unavailable" in arm:
        return None
    value = arm.get("output_throughput")
    return float(value) if value is not None else None


def assemble_levels(
    concurrency: tuple[int, ...], arms: dict[str, list[dict[str, Any]] | str]
) -> list[dict[str, Any]]:
    """Per level: each arm (or {"unavailable": reason}), the envelope max(on, off) and ratios to it."""
    levels: list[dict[str, Any]] = []
    for i, c in enumerate(concurrency):
        row: dict[str, Any] = {"concurrency": c, "max_concurrency": c}
        for name, arm in arms.items():
            row[name] = {"unavailable": arm} if isinstance(arm, str) else dict(arm[i])
        candidates = [t for t in (_arm_tput(row.get("on")), _arm_tput(row.get("off"))) if t is not None]
        envelope = max(candidates) if candidates else None
        row["envelope"] = envelope
        ratios: dict[str, float | None] = {}
        for name in arms:
            tput = _arm_tput(row[name])
            ratio = None if tput is None or not envelope else tput / envelope
            ratios[name] = ratio
            if tput is not None:
                row[name]["ratio_to_envelope"] = ratio
        row["ratios"] = ratios
        mismatched = [n for n in arms if isinstance(row[n], dict) and row[n].get("engine_stream_mismatch")]
        if mismatched:
            row["flags"] = [
                f"{n}: {stream_mismatch_words(float(row[n]['engine_stream_diff']))}" for n in mismatched
            ]
        levels.append(row)
    return levels


def choose_arms(
    available: dict[str, tuple[SweepSession, int | None]], asked: tuple[str, ...] | None, reason: str | None
) -> tuple[dict[str, tuple[SweepSession, int | None]], dict[str, str]]:
    """The arms to measure (those asked for, default all) and, by name, those asked for that this
    server cannot run with why. EngineError when none of the asked arms can run."""
    if asked is None:
        return available, {}
    if "baseline" in asked and "baseline" not in available:
        raise EngineError("arms: the baseline arm needs a baseline URL (a server launched without a drafter)")
    chosen = {name: available[name] for name in asked if name in available}
    missing = {name: reason or "not available on this server" for name in asked if name not in available}
    if not chosen:
        raise EngineError(f"none of the arms asked for ({', '.join(asked)}) can run on this server: {reason}")
    return chosen, missing


async def run_compare(
    url: str,
    options: BenchOptions,
    progress: ProgressCallback = ignore_progress,
    cancel: asyncio.Event | None = None,
    baseline_url: str | None = None,
    context: RunContext | None = None,
    guard: LiveGuard | None = None,
    keep: Keep | None = None,
) -> dict[str, Any]:
    """Every arm (``options.arms``, default all), over the levels until the stopping rule says
    (``stopping``; without one ``repeats`` times, ``schedule.plan``); ``context``: what the caller
    knows of where the server runs (``provenance``); ``guard``: told what is to be put back before
    anything is forced, and whether it was (``agent.bench.guard``); ``keep``: given the levels
    measured so far after each window (``agent.bench.partial``)."""
    started = time.time()
    async with make_client(options) as client:
        session = SweepSession(url, options, client, cancel)
        info = await session.prepare()
        simulated = await session.simulated_host()
        reason = live_unavailable_reason(info)
        base_session: SweepSession | None = None
        baseline_info: ServerInfo | None = None
        if baseline_url:
            # The engine's API key is for the engine only: a baseline URL comes from the request body
            # and may be any server, so it never receives the key.
            base_session = SweepSession(baseline_url, options.with_api_key(None), client, cancel)
            baseline_info = await base_session.prepare()
        live: dict[str, Any] = {"available": reason is None, "reason": reason}
        available: dict[str, tuple[SweepSession, int | None]] = {}
        if reason is None:
            available = {
                "on": (session, NO_THRESHOLD),
                "off": (session, NEVER_SPECULATE),
                "adaptive": (session, None),
            }
        else:
            static = "on" if info.speculative else "off"
            live["measured_as_configured"] = static
            available = {static: (session, None)}
        if base_session is not None:
            available["baseline"] = (base_session, None)
        arms, missing = choose_arms(available, options.arms, reason)
        if reason is None and any(name in LIVE_ARMS for name in arms):
            original, reset_steps = await _original_threshold_and_reset_steps(session, info)
            live |= {"original_threshold": original, "restored": False, "steps_reset_to": reset_steps}
            if "adaptive" in arms:
                arms["adaptive"] = (session, original)
        names = list(arms)
        steps = first_steps(options.concurrency, names, options.stop, options.repeats)
        tracker = new_tracker(steps, options, len(options.concurrency), progress)
        drain = await session.wait_for_drain(tracker)
        tracker.probing(max(options.concurrency))
        if names != ["baseline"]:
            await session.probe_durations(tracker.model)
        elif base_session is not None:
            await base_session.probe_durations(tracker.model)
        if base_session is not None and names != ["baseline"]:
            await base_session.probe_request()
        expected = tracker.planned()
        if guard is not None and "original_threshold" in live:
            # written ahead, right before the first window: raises before anything is forced
            guard.forcing(restore_args(live["original_threshold"], live["steps_reset_to"] is not None))
        head = {"kind": "compare", "url": url, "baseline_url": baseline_url, "options": options.public_dict(),
                "arms": names, "server": server_summary(info), "live_control": live,
                "environment": environment(info, context, baseline_info, simulated), "started_at": started}  # fmt: skip

        def kept(outcomes: Outcomes, stops: Mapping[int, LevelStop]) -> None:
            if keep is None:
                return
            rows, partial = partial_levels(
                options.concurrency, names, outcomes, whole_test(options, names, outcomes, stops)
            )
            cut = [r["concurrency"] for r in rows]
            levels = assemble_levels(tuple(cut), {a: [r["cells"][a] for r in rows] for a in names})
            keep(head | {"levels": levels, "partial": partial, "duration_s": time.time() - started})

        outcomes, switches, stops = await _measure(
            arms, steps, tracker, live, session, options, started, guard, kept
        )
    figures, noise = arm_estimates(outcomes)
    measured: dict[str, list[dict[str, Any]] | str] = {
        name: [
            arm_result(c, name, outcomes[(name, i)], figures[(name, i)], noise)
            for i, c in enumerate(options.concurrency)
        ]
        for name in arms
    }
    if reason is not None:
        for name in LIVE_ARMS:
            if options.arms is None or name in options.arms:
                measured.setdefault(name, reason)
    for name, why in missing.items():
        measured.setdefault(name, why)
    levels = assemble_levels(options.concurrency, measured)
    for i, row in enumerate(levels):
        row["stopping"] = stops[i].as_dict(options.stop)
    result: dict[str, Any] = {
        "kind": "compare",
        "url": url,
        "baseline_url": baseline_url,
        "options": options.public_dict(),
        "workload": session.workload.describe(),
        "arms": names,
        "server": server_summary(info),
        "baseline_server": None if baseline_info is None else server_summary(baseline_info),
        "environment": environment(info, context, baseline_info, simulated),
        "live_control": live,
        "levels": levels,
        "summary": compare_summary(levels, live.get("original_threshold")),
        "switches": switches,
        "settling": settling(switches),
        "stopping": stopping_record(options.stop, stops, options.concurrency),
        "expected_duration_s": expected,
        "drain": drain.as_dict(),
        "started_at": started,
        "duration_s": time.time() - started,
    }
    if info.speculative and (options.arms is None or "off" in options.arms):
        memory = off_memory(info, max(options.concurrency))
        result["off_memory"] = memory
        result["off_note"] = off_note(memory, live=reason is None, baseline=baseline_url is not None)
    result |= recommendation_from_levels(levels, max(tracker.repeats, 1))
    if options.arms is not None and not {"on", "off"} <= set(options.arms):
        result["recommendation"]["reason"] = (
            f"the run measured only {', '.join(names)} (--arms); a threshold "
            "needs the on and the off arm at the same levels"
        )
    return result


async def _original_threshold_and_reset_steps(
    session: SweepSession, info: ServerInfo
) -> tuple[int, int | None]:
    """The threshold to restore, and the step count each live arm starts from (None: no reset).

    The reset is the launch step count (``speculative_num_steps``); none when the operator has
    pinned the steps (the policy does not move then) or the launch count is not a pre-built state.
    """
    state = await session.probe.live_state()
    if state is None or state.threshold is None:
        raise EngineError(f"{paths.SERVER_INFO} {READBACK_FIELD} has no integer threshold: {state}")
    launch = info.speculative_num_steps
    if state.pinned or launch is None or launch <= 0 or launch not in state.prebuilt_steps:
        return state.threshold, None
    return state.threshold, launch


async def _measure(
    arms: dict[str, tuple[SweepSession, int | None]],
    steps: list[Step],
    tracker: RunTracker,
    live: dict[str, Any],
    live_session: SweepSession,
    options: BenchOptions,
    started: float,
    guard: LiveGuard | None = None,
    kept: Callable[[Outcomes, Mapping[int, LevelStop]], None] | None = None,
) -> tuple[Outcomes, list[dict[str, Any]], dict[int, LevelStop]]:
    """Run the steps (and those the stopping rule adds); the live threshold is written back
    afterwards whatever happened."""
    switches: list[dict[str, Any]] = []
    current = live.get("original_threshold")
    reset_steps = live.get("steps_reset_to")
    failure: BaseException | None = None

    async def run_step(step: Step) -> RunOutcome:
        session, threshold = arms[step.arm]

        async def switch(threshold: int | None = threshold, session: SweepSession = session) -> LiveSwitch:
            nonlocal current
            called = time.perf_counter()
            change: dict[str, Any] = {}
            if threshold is not None and threshold != current:
                await session.probe.set_threshold(threshold)
                current = threshold
                change["set_threshold"] = threshold
            if reset_steps is not None:
                await session.probe.reset_steps(reset_steps)
                change["steps"] = f"pinned at {reset_steps}, then released"
            return LiveSwitch(change, called, time.perf_counter(), current)

        outcome = await session.run_step(step, tracker, None if threshold is None else switch)
        if "switch" in outcome.result:
            where = {
                "concurrency": step.concurrency,
                "arm": step.arm,
                "repeat": step.repeat,
                "step": step.index,
            }
            switches.append(where | outcome.result["switch"])
        return outcome

    try:
        outcomes, stops = await measure(
            options.concurrency, list(arms), options.stop, steps, tracker, run_step, started, kept=kept
        )
    except BaseException as exc:
        failure = exc
        raise
    finally:
        if "original_threshold" in live:
            await _restore(live_session, live, failure, guard)
    return outcomes, switches, stops


async def _restore(
    session: SweepSession, live: dict[str, Any], failure: BaseException | None, guard: LiveGuard | None = None
) -> None:
    """Write the original threshold back; shielded so a second cancel cannot leave it forced."""
    if live.get("steps_reset_to") is not None:
        # A cancel between a reset's pin and its release would leave the steps pinned.
        release = asyncio.ensure_future(session.probe.release_steps())
        with contextlib.suppress(asyncio.CancelledError, EngineError):
            await asyncio.shield(release)
    original = live["original_threshold"]
    restore = asyncio.ensure_future(session.probe.set_threshold(original))
    with contextlib.suppress(asyncio.CancelledError, EngineError):
        await asyncio.shield(restore)
    error = restore.exception() if restore.done() and not restore.cancelled() else None
    live["restored"] = restore.done() and not restore.cancelled() and error is None
    if live["restored"]:
        if guard is not None:
            guard.restored(True, f"the benchmark put the live threshold back to {original}")
        return
    live["restore_error"] = str(error) if error else "restore did not finish"
    message = f"could not restore the live threshold to {original}: {live['restore_error']}"
    if guard is not None:
        guard.restored(False, message)
    if failure is None:
        raise EngineError(message)
    failure.add_note(message)
