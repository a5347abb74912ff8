"""The speculation autopilot against fixed thresholds on the same traffic, on the engine model's virtual
clock (no HTTP, no sleeping: twenty modelled minutes take seconds).

The autopilot runs exactly as in ``agent serve``: every modelled second the engine model's ``/metrics``
page is rendered and read by the agent's reader, its ``/server_info`` every five ticks, the Snapshot
parts derived by the agent's telemetry code, and the pilot's commands applied through the engine's
controller as ``/set_internal_state`` applies them (``agent.whatif.autopilot``).

1. **Shifting traffic** (``--workload``, default ``shifting``: contexts 1k, 4k, 1k; acceptance high,
   then low; clients in waves): output tokens delivered by the autopilot, by every fixed threshold of
   ``--grid`` (SGLang's own step policy below it, as shipped) and by the profile's threshold (shipped).
2. **A drafter that never pays** (every draft rejected, the sim's ``random`` head): how long after the
   load starts the threshold is at 2 or below (the issue asks for two minutes at most).
3. **A drafter that always pays** (every draft kept, ``oracle``): drafting is never switched off outside
   its probes, and at the end no threshold is left (speculation at every batch size).

The last line is ``autopilot/best-fixed R1 autopilot/shipped R2 moves N bound M``: R1 and R2 the ratios
of delivered tokens (the issue wants R1 >= 0.98, R2 >= 1.05), N the changes the autopilot made to the
engine's live setting in the shifting run (counted at the engine, probes included) and M what its
``max_moves_per_minute`` allows over the run. Exit 1 when a check fails.

    .venv/bin/python -m bench.studies.autopilot [--profile profiles/kimi-k25-eagle3.toml] [--workload shifting]
        [--grid 1,2,4,8,16,24,32,48,64,96,125,0] [--seed 0] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from agent.profile.store import load_profile
from agent.sim.workload import Phase, Workload, load_workload
from agent.whatif.autopilot import run_autopilot, run_fixed
from bench import REPO

RANDOM_LIMIT_S = 120.0
RAMP = dict(input_len=512, output_len=1024, concurrency=[1, 128, 128, 128, 1])
"""The random and oracle checks: a ramp of clients up to what the KV pool holds, and back."""


def words(threshold: int | None) -> str:
    return "none" if threshold == 0 else str(threshold)


def shifting(profile_path: Path, workload: Workload, grid: list[int], seed: int) -> dict[str, Any]:
    profile = load_profile(profile_path)
    shipped = run_fixed(profile, workload, None, seed=seed)
    fixed = [run_fixed(profile, workload, t, seed=seed) for t in grid if t != shipped.threshold]
    auto = run_autopilot(profile, workload, seed=seed)
    runs = sorted([shipped, *fixed], key=lambda r: r.tokens, reverse=True)
    best = runs[0]
    print(f"{workload.name}: {workload.seconds / 60:.0f} modelled minutes, profile {profile.identity.name}")
    print(f"  {'setting':<22} {'tokens':>10} {'tok/s':>8} {'vs autopilot':>13}   per phase (tok/s)")
    for run in [auto, *runs]:
        name = run.label if run is auto else f"threshold {words(run.threshold)}"
        name += " (shipped)" if run is shipped else ""
        phases = " ".join(
            f"{t / p.seconds:6.0f}" for t, p in zip(run.result.phase_tokens, workload.phase, strict=False)
        )
        print(
            f"  {name:<22} {run.tokens:>10} {run.result.output_tok_s:>8.1f} {auto.tokens / run.tokens:>12.3f}x   {phases}"
        )
    record = auto.record
    assert record is not None
    n, bound = record.engine_changes, auto.moves_bound()
    print(
        f"  autopilot: {record.count('move')} moves, {record.count('probe')} probes "
        f"({record.engine_changes} changes of the live setting, at most {auto.busiest_minute()} in any minute, "
        f"bound {auto.settings.max_moves_per_minute if auto.settings else 0}/min)"
    )
    cost = sorted(record.pilot_s)
    mean_us = sum(cost) / len(cost) * 1e6 if cost else 0.0
    p99_us = cost[int(len(cost) * 0.99)] * 1e6 if cost else 0.0
    print(
        f"  pilot CPU per telemetry tick: mean {mean_us:.0f} µs, p99 {p99_us:.0f} µs, "
        f"max {cost[-1] * 1e3 if cost else 0:.1f} ms (a decision every 5 s)"
    )
    return {
        "pilot_cpu_us": {"mean": round(mean_us), "p99": round(p99_us)},
        "best_fixed": {"threshold": best.threshold, "tokens": best.tokens},
        "shipped": {"threshold": shipped.threshold, "tokens": shipped.tokens},
        "autopilot": {
            "tokens": auto.tokens,
            "moves": n,
            "bound": bound,
            "busiest_minute": auto.busiest_minute(),
        },
        "fixed": {words(r.threshold): r.tokens for r in runs},
        "r1": auto.tokens / best.tokens,
        "r2": auto.tokens / shipped.tokens,
        "moves": n,
        "bound": bound,
        "busiest_ok": auto.busiest_minute() <= (auto.settings.max_moves_per_minute if auto.settings else 0),
        "commands": [
            {
                "at": round(at, 1),
                "kind": cmd.kind,
                "threshold": cmd.target.threshold,
                "steps": cmd.target.steps,
                "why": cmd.why,
            }
            for at, cmd, ok in record.commands
            if ok
        ],
    }


def ramp(acceptance: str, seconds: float) -> Workload:
    return Workload(name=f"ramp-{acceptance}", phase=[Phase(seconds=seconds, acceptance=acceptance, **RAMP)])


def never_pays(profile_path: Path, seed: int) -> dict[str, Any]:
    profile = load_profile(profile_path)
    run = run_autopilot(profile, ramp("random", 300.0), seed=seed)
    assert run.record is not None
    at = next((t for t, threshold, _, _ in run.record.thresholds if 0 < threshold <= 2), None)
    ok = at is not None and at <= RANDOM_LIMIT_S
    shown = f"{at:.0f} s" if at is not None else "never"
    print(f"random head (no draft kept): threshold <= 2 after {shown} of load (limit {RANDOM_LIMIT_S:.0f} s)")
    return {"seconds_to_threshold_2": at, "ok": ok}


def always_pays(profile_path: Path, seed: int) -> dict[str, Any]:
    profile = load_profile(profile_path)
    run = run_autopilot(profile, ramp("oracle", 900.0), seed=seed)
    record = run.record
    assert record is not None
    probing = [
        (at, at + (run.settings.probe_s if run.settings else 0))
        for at, cmd, ok in record.commands
        if ok and cmd.kind == "probe"
    ]
    off = [
        (t, threshold, running)
        for t, threshold, _, running in record.thresholds
        if threshold > 0 and running >= threshold and not any(a <= t <= b + 1.0 for a, b in probing)
    ]
    final = record.thresholds[-1][1] if record.thresholds else None
    ok = not off and final == 0
    print(
        f"oracle head (every draft kept): drafting switched off outside probes at {len(off)} ticks; "
        f"final threshold {words(final)} ({'speculation at every batch size' if final == 0 else 'a threshold is left'})"
    )
    return {"ticks_off_outside_probes": len(off), "final_threshold": final, "ok": ok}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", type=Path, default=REPO / "profiles" / "kimi-k25-eagle3.toml")
    parser.add_argument("--workload", default="shifting", help="a shipped workload's name or a TOML file")
    parser.add_argument(
        "--grid", default="1,2,4,8,16,24,32,48,64,96,125,0", help="fixed thresholds (0 = none)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    grid = [int(v) for v in args.grid.split(",") if v.strip()]
    started = time.perf_counter()
    figures = {"shifting": shifting(args.profile, load_workload(args.workload), grid, args.seed)}
    figures["random"] = never_pays(args.profile, args.seed)
    figures["oracle"] = always_pays(args.profile, args.seed)
    s = figures["shifting"]
    print(f"(all runs took {time.perf_counter() - started:.0f} s of CPU time)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    ok = (
        s["r1"] >= 0.98
        and s["r2"] >= 1.05
        and s["moves"] <= s["bound"]
        and s["busiest_ok"]
        and figures["random"]["ok"]
        and figures["oracle"]["ok"]
    )
    print(
        f"autopilot/best-fixed {s['r1']:.3f} autopilot/shipped {s['r2']:.3f} moves {s['moves']} bound {s['bound']}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
