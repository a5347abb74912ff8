"""The autopilot on a load ramp against the best fixed threshold and the profile's, interleaved (issue 24).

Usage: python -m bench.studies.autopilot_ramp --state-dir DIR (--compare FILE | --best-threshold N)
           [--profile-threshold N] [--levels 1,2,4,8,16,32,64,128,64,32,16,8,4,2,1] [--hold-s 14]
           [--level-settle-s 1] [--switch-settle-s 1] [--autopilot-settle-s 3] [--slices 3]
           [--input-len L] [--output-len L] [--autopilot-entry resume|profile]
           [--api-key-file F] [--seed S] [--json OUT]

It talks to a running ``agent serve --state-dir DIR`` (its socket and token, ``bench/kit/agent_api.py``)
and sends the load itself, with one load client (``bench/studies/ramp_load.py``, the bench's own request
and connection code), to the engine's URL from the agent's status. The concurrency follows
``--levels``; each level is held ``--hold-s``: first ``--level-settle-s`` with the load at the new
level (not counted), then the three arms back to back, in an order rotated by one at every level
(so no arm always goes first or always follows the same arm):

* **autopilot**: turned on through the agent (plan, confirm: audited). With ``--autopilot-entry
  resume`` (the default) it first gets back the threshold it held when its previous window ended
  (the engine's read-back; the profile's before its first), set as a threshold action: a ramp with
  the autopilot on all along would enter the level there. ``profile`` enters every time from the
  profile's threshold. It learns only while it is on, a third of the ramp.
* **best fixed**: the threshold ``agent bench compare --json`` recommended (``--compare FILE``), or
  ``--best-threshold N``; set as a threshold action, which also turns the autopilot off.
* **profile**: the threshold in the agent's profile file (``--profile-threshold N`` to override).

After each switch the arm settles (``--switch-settle-s``, the autopilot ``--autopilot-settle-s``;
not counted), then its window counts: the time that is left of the level's third, bracketed by two
reads of the engine's ``/metrics`` (and of its live threshold). Counted per window: our streams'
tokens delivered between the two reads over the time between them ("client"), the engine's
generation counter over the same span corrected for the requests in flight ("engine",
``agent.bench.counters``), the engine's running requests, and the window cut into ``--slices``
equal slices for its spread. ``bench/studies/ramp_figures.py`` says how the totals, ratios and their
intervals are made from them.

Every wait is bounded. SIGINT or SIGTERM stops the ramp, puts the operator's threshold and autopilot
state back through the agent (audited), says so, writes what was measured, and exits 128 + the signal.
Exit 0: the ramp ran and the operator's setting is back; 1: it could not finish or restore; 2: bad
input (nothing was changed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

import httpx

from agent.bench.engine import EngineError, EngineProbe
from agent.bench.store import atomic_write_json
from agent.profile import load_profile
from agent.sglang.live_control import NO_THRESHOLD
from agent.wire.bench_env import BenchEnvironment, describe
from bench.kit.agent_api import agent_client, plan_only
from bench.studies.ramp_agent import (
    RESTORE_TIMEOUT_S,
    RampFailed,
    Session,
    none_equivalent,
    operator_setting,
    restore,
    resume_threshold,
    steps_to_reset,
)
from bench.studies.ramp_context import CLOCKS_TIMEOUT_S, sample_clocks, where_it_ran
from bench.studies.ramp_load import RampLoad, timed_window, window_figures
from bench.studies.ramp_plan import (
    DEFAULT_LEVELS,
    BadInput,
    Plan,
    make_plan,
    order_at,
    read_compare,
    read_key,
    threshold_words,
)
from bench.studies.ramp_report import print_report, summarize


async def reset_policy(probe: EngineProbe, steps: int | None, session: Session) -> None:
    """Put SGLang's step policy back at ``steps`` (pin, release) before an arm; nothing when None."""
    if steps is None:
        return
    try:
        await probe.reset_steps(steps)
    except EngineError as exc:
        raise RampFailed(f"the step policy could not be reset to {steps}: {exc}") from exc
    session.resets.append(session.at())


async def ramp(
    session: Session,
    plan: Plan,
    load: RampLoad,
    probe: EngineProbe,
    fixed: dict[str, int],
    entry: str,
    reset_to: int | None,
    none_as: int,
    windows: list[dict[str, Any]],
    clocks: list[asyncio.Task[dict[str, Any] | None]],
) -> None:
    last_window: tuple[float, int] | None = None
    """(when, the engine's read-back) at the end of the autopilot's last window."""
    for level_index, concurrency in enumerate(plan.levels):
        await load.set_concurrency(concurrency)
        print(
            f"level {level_index + 1}/{len(plan.levels)}: c={concurrency}, arms {', '.join(order_at(level_index))}",
            flush=True,
        )
        clocks.append(
            asyncio.create_task(sample_clocks(f"level {level_index + 1} c={concurrency}", session.at()))
        )
        await asyncio.sleep(plan.level_settle_s)
        for position, arm in enumerate(order_at(level_index)):
            if load.failure:
                raise RampFailed(f"the engine stopped answering: {load.failure}")
            switched_at = session.at()
            if arm == "autopilot":
                resume = None if last_window is None else resume_threshold(session.events, *last_window)
                if entry == "resume" and resume is not None:
                    start, why = (
                        resume,
                        "the autopilot's entry: the threshold it held at its last window's end",
                    )
                else:
                    start, why = fixed["profile"], "the autopilot's entry: the profile's threshold"
                if start == NO_THRESHOLD:
                    start, why = (
                        none_as,
                        f"{why} (none: entered as {none_as}, the running cap + 1, speculating at every batch)",
                    )
                await session.act("threshold", start, why)
                await reset_policy(probe, reset_to, session)
                await session.act("autopilot", True, "autopilot arm")
                entered: int | None = start
                said = f"autopilot on from threshold {threshold_words(start)}"
            else:
                await session.act("threshold", fixed[arm], f"{arm} arm")
                await reset_policy(probe, reset_to, session)
                entered, said = None, f"threshold {threshold_words(fixed[arm])}"
            print(
                f"  c={concurrency:<4} {arm:<9} switched: {said}; settling {plan.settle(arm):g} s", flush=True
            )
            await asyncio.sleep(plan.settle(arm))
            reads = await timed_window(probe, plan.window_s)
            figures = window_figures(load, reads, plan.slices)
            if arm == "autopilot" and figures["threshold_end"] is not None:
                # Read at its next entry, two windows on: its events of this window have arrived by then.
                last_window = (reads.wall_readback, figures["threshold_end"])
            window = {
                "level_index": level_index, "concurrency": concurrency, "arm": arm, "position": position,
                "threshold": fixed.get(arm), "entry_threshold": entered, "switched_at_s": switched_at,
                "counted_from_s": round(reads.wall_start - session.started, 3),
                "counted_to_s": round(reads.wall_end - session.started, 3), **figures,
            }  # fmt: skip
            windows.append(window)
            engine = "-" if window["engine_tps"] is None else f"{window['engine_tps']:.1f}"
            print(
                f"  c={concurrency:<4} {arm:<9} counted {window['counted_from_s']:.1f}-{window['counted_to_s']:.1f} s: "
                f"client {window['client_tps']:.1f} tok/s, engine {engine} tok/s, "
                f"threshold {threshold_words(window['threshold_start'])} -> {threshold_words(window['threshold_end'])}",
                flush=True,
            )


async def run(args: argparse.Namespace, plan: Plan, best: dict[str, Any], key: str | None) -> int:
    main = asyncio.current_task()
    assert main is not None
    caught: list[int] = []

    def on_signal(signum: int) -> None:
        if caught:
            print(
                f"autopilot_ramp: {signal.Signals(signum).name} again: still restoring (bounded at {RESTORE_TIMEOUT_S:g} s)",
                flush=True,
            )
            return
        caught.append(signum)
        print(
            f"autopilot_ramp: {signal.Signals(signum).name}: stopping the ramp, restoring the operator's setting",
            flush=True,
        )
        main.cancel()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        agent = agent_client(args.state_dir, args.timeout_s)
    except OSError as exc:
        raise BadInput(
            f"--state-dir: {args.state_dir}: no agent token there ({exc.strerror or exc})"
        ) from None
    async with agent:
        try:
            status = (await agent.get("/v1/status")).json()
        except httpx.HTTPError as exc:
            raise BadInput(
                f"--state-dir: {args.state_dir}: the agent does not answer on its socket: {exc}"
            ) from None
        if status.get("engine_state") != "ready" or not status.get("engine_url"):
            raise BadInput(
                f"the agent's engine is {status.get('engine_state')}, not ready: nothing to measure"
            )
        operator = await operator_setting(agent)
        profile_threshold, profile_source = args.profile_threshold, "--profile-threshold"
        if profile_threshold is None:
            path = Path(status["profile_path"])
            try:
                threshold = load_profile(path).speculation.threshold
            except Exception as exc:
                raise BadInput(
                    f"the profile's threshold: cannot read {path} ({exc}); give --profile-threshold N"
                ) from None
            profile_threshold, profile_source = (
                (NO_THRESHOLD if threshold is None else threshold),
                f"profile {path}",
            )
        session = Session(agent)
        precheck = await plan_only(agent, "autopilot", True)
        if precheck.get("mode") not in ("live", "noop"):
            raise BadInput(f"the agent will not turn the autopilot on: {precheck.get('reason')}")
        fixed = {"best": int(best["threshold"]), "profile": int(profile_threshold)}
        url = status["engine_url"]
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        result: dict[str, Any] = {
            "kind": "autopilot_ramp", "started_at": session.started, "state_dir": str(args.state_dir),
            "profile": status.get("profile"), "engine_kind": status.get("engine_kind"), "engine_url": url,
            "plan": {**plan.__dict__, "levels": list(plan.levels), "words": plan.words()},
            "arms": {"autopilot": {"entry": args.autopilot_entry},
                     "best": {"threshold": fixed["best"], "source": best["source"], "range": best.get("range")},
                     "profile": {"threshold": fixed["profile"], "source": profile_source}},
            "operator_at_start": operator.__dict__,
            "request": {"endpoint": "/generate", "input_len": args.input_len, "output_len": args.output_len,
                        "first_request_of_a_stream": "random output length in [1, output_len]"},
        }  # fmt: skip
        print_header(result, status)
        windows: list[dict[str, Any]] = []
        clocks: list[asyncio.Task[dict[str, Any] | None]] = [asyncio.create_task(sample_clocks("start", 0.0))]
        follower = asyncio.create_task(session.follow(int(status["last_seq"])))
        failure: str | None = None
        async with httpx.AsyncClient(timeout=httpx.Timeout(args.timeout_s, connect=10.0)) as http:
            probe = EngineProbe(http, url, headers)
            load = RampLoad(url, args.input_len, args.output_len, headers, seed=args.seed)
            try:
                info = await probe.server_info()
                result["server"] = info.summary()  # a few fields, never the keys
                result["environment"] = await where_it_ran(agent, status, info, http, url, headers)
                for label, words in describe(BenchEnvironment.model_validate(result["environment"])):
                    print(f"  {label}: {words}", flush=True)
                reset_to, result["steps_reset"] = await steps_to_reset(probe, info)
                print(f"  {result['steps_reset']}", flush=True)
                await ramp(
                    session,
                    plan,
                    load,
                    probe,
                    fixed,
                    args.autopilot_entry,
                    reset_to,
                    none_equivalent(info),
                    windows,
                    clocks,
                )
            except asyncio.CancelledError:
                if not caught:
                    raise
                main.uncancel()
            except Exception as exc:  # whatever stopped the ramp, the operator's setting goes back below
                failure = f"{type(exc).__name__}: {exc}"
                print(f"autopilot_ramp: the ramp stopped: {failure}", flush=True)
            finally:
                with contextlib.suppress(Exception):
                    await load.close()
            result["restore_started_s"] = session.at()
            result["restore"] = await restore(session, operator, probe)
        clocks.append(asyncio.create_task(sample_clocks("end", session.at())))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await asyncio.sleep(0.5)  # the stream's last events (the restore's) arrive
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        done_clocks = [c.result() for c in await _finished(clocks)]
    result |= {
        "duration_s": session.at(), "interrupted": signal.Signals(caught[0]).name if caught else None,
        "failure": failure, "windows": windows, "actions": session.actions, "step_resets_at_s": session.resets, "events": session.events,
        "snapshots": session.snapshots, "stream_note": session.stream_note,
        "clocks": [c for c in done_clocks if c is not None] or None,
        "clocks_note": None if any(done_clocks) else "nvidia-smi not found: clocks skipped",
    }  # fmt: skip
    result["summary"] = summarize(result)
    print_report(result)
    if args.json:
        atomic_write_json(args.json, result)
        print(f"written: {args.json}")
    if caught:
        return 128 + caught[0]
    return 0 if failure is None and result["restore"]["ok"] else 1


async def _finished(
    tasks: list[asyncio.Task[dict[str, Any] | None]],
) -> list[asyncio.Task[dict[str, Any] | None]]:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(CLOCKS_TIMEOUT_S):
            await asyncio.gather(*tasks, return_exceptions=True)
    return [t for t in tasks if t.done() and not t.cancelled() and t.exception() is None]


def print_header(result: dict[str, Any], status: dict[str, Any]) -> None:
    arms, op, plan = result["arms"], result["operator_at_start"], result["plan"]
    print(
        f"autopilot ramp on {status.get('profile')} ({status.get('engine_kind')} engine at {result['engine_url']})"
    )
    print(f"  best fixed: threshold {threshold_words(arms['best']['threshold'])} ({arms['best']['source']})")
    print(
        f"  profile's: threshold {threshold_words(arms['profile']['threshold'])} ({arms['profile']['source']})"
    )
    print(f"  autopilot: entry {arms['autopilot']['entry']}")
    print(
        f"  operator's setting now: threshold {threshold_words(op['threshold'])}, autopilot {'on' if op['autopilot'] else 'off'} (put back at the end)"
    )
    print(f"  levels {','.join(str(v) for v in plan['levels'])}; {plan['words']}")
    req = result["request"]
    print(f"  requests: {req['endpoint']}, {req['input_len']} prompt tokens, {req['output_len']} output (greedy, ignore_eos); "
          f"a stream's first request has a random output length in [1, {req['output_len']}]")  # fmt: skip
    print(
        f"  expected: at least {len(plan['levels']) * plan['hold_s']:.0f} s (plus the switches' calls)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))  # fmt: skip
    parser.add_argument("--state-dir", type=Path, required=True, help="the agent's --state-dir")
    best_from = parser.add_mutually_exclusive_group(required=True)
    best_from.add_argument(
        "--compare", type=Path, help="agent bench compare --json result: its recommended threshold"
    )
    best_from.add_argument("--best-threshold", type=int, help="the best fixed threshold (0 = none)")
    parser.add_argument(
        "--profile-threshold", type=int, help="default: the threshold in the agent's profile file"
    )
    parser.add_argument("--levels", default=DEFAULT_LEVELS)
    parser.add_argument("--hold-s", type=float, default=14.0, help="seconds each level is held")
    parser.add_argument("--level-settle-s", type=float, default=1.0)
    parser.add_argument("--switch-settle-s", type=float, default=1.0)
    parser.add_argument("--autopilot-settle-s", type=float, default=3.0)
    parser.add_argument("--slices", type=int, default=3, help="equal slices per window, for its spread")
    parser.add_argument("--input-len", type=int, help="default: the compare's, else 1024")
    parser.add_argument("--output-len", type=int, help="default: the compare's, else 256")
    parser.add_argument("--autopilot-entry", choices=("resume", "profile"), default="resume")
    parser.add_argument("--api-key-file", type=Path, help="the engine's API key, if it has one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="the most any one call may take")
    parser.add_argument("--json", type=Path, help="write everything here as well")
    args = parser.parse_args()
    try:
        plan = make_plan(args)
        if args.compare is not None:
            best = read_compare(args.compare)
        else:
            if args.best_threshold < 0:
                raise BadInput(f"--best-threshold: must be 0 (none) or more (got {args.best_threshold})")
            best = {"threshold": args.best_threshold, "source": "--best-threshold"}
        if args.profile_threshold is not None and args.profile_threshold < 0:
            raise BadInput(f"--profile-threshold: must be 0 (none) or more (got {args.profile_threshold})")
        args.input_len = args.input_len or best.get("input_len") or 1024
        args.output_len = args.output_len or best.get("output_len") or 256
        if args.input_len < 1 or args.output_len < 1:
            raise BadInput("--input-len and --output-len: must be 1 or more")
        key = read_key(args.api_key_file)
        return asyncio.run(run(args, plan, best, key))
    except BadInput as exc:
        print(f"autopilot_ramp: {exc}", file=sys.stderr)
        return 2
    except asyncio.CancelledError:  # a signal before the ramp began: nothing had been changed
        print("autopilot_ramp: interrupted before the ramp began; nothing was changed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
