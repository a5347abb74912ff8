"""The simulated engine's zero-step costs: what the model gives, and the costs that fit a real-engine comparison.

A 0-step round inside a speculative server costs a plain decode step plus the 0-step path
(``ZeroStepCosts``: so many ms a round and so many a request) plus the draft-extend pass unless the
profile skips it. Each deployment the model knows has its records (``ZeroStepRecord``): Kimi K2.5's
estimate (``agent.sim.calibration``), the two real-engine runs of the heavy tiny target on one H200
(``agent.sim.calibration_h200``) and the GPU-bound target's runs before patch 03 (SGLang's verify
path) and with its plain path (``agent.sim.calibration_h200_big``; the plain record's costs are
derived from the timing table, not fitted: ``--fit`` shows what a fit would give).

Without ``--from``: prints, for every record of the deployment, the model's off ÷ baseline next to
the recorded one; ``--fit`` also fits the costs to each record again (about a minute a record). A
record with an arrival cost (``calibration.ArrivalCosts``: the GPU-bound H200's of 2026-12-06) is
shown per level against its runs pooled by their intervals (``arrivals.pooled_off_over_baseline``),
with whether the model lies inside the 95 % interval, what the model gives without the arrival cost,
and with the patched arrival path (issue 36, step 2); ``--fit-arrival`` fits that cost again.
For Kimi it also prints what the H200's costs would give if carried over as they are.

With ``--from RESULT.json [RESULT.json ...]`` (``agent bench compare --baseline-url ... --json`` runs
on a real engine): reads off ÷ baseline per level from their ``off`` and ``baseline`` arms (several
runs pooled per level: mean off over mean baseline), fits the
costs with the deployment's calibration and prints the ``ZeroStepRecord`` to paste; then
``tests/sim/test_zero_step.py`` checks the model against it. ``--levels`` keeps some levels only
(say, where both arms ran the asked concurrency).

    .venv/bin/python -m bench.studies.zero_step_tax [--deployment kimi|h200-heavy|h200-big] [--fit] [--fit-arrival]
    .venv/bin/python -m bench.studies.zero_step_tax --deployment h200-heavy --from RESULT.json --skip \\
        --spec-profile bench/real/profiles/heavy-skip.toml --baseline-profile bench/real/profiles/heavy-base.toml
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from agent.profile.schema import Profile
from agent.profile.store import load_profile
from agent.sim import costmodel
from agent.sim.arrivals import fit_arrival, pooled_off_over_baseline
from agent.sim.calibration import (
    CALIBRATION,
    CROSSOVER_CONTEXT,
    NO_ARRIVAL_COST,
    ZERO_STEP_RECORD,
    Calibration,
    ZeroStepRecord,
)
from agent.sim.calibration_h200 import H200_HEAVY, H200_RECORDS, H200_ZERO_STEP
from agent.sim.calibration_h200_big import (
    H200_ARRIVAL,
    H200_BIG,
    H200_BIG_PLAIN_RECORD,
    H200_BIG_RECORDS,
    H200_BIG_VERIFY_RECORD,
    VERIFY_REQUEST_GRID_S,
    fit_target,
    measured_baseline,
)
from agent.sim.zerostep import (
    REQUEST_GRID_S,
    fit_zero_step,
    measured_off_over_baseline,
    off_over_baseline,
    on_path,
    record_model,
    with_arrival,
    with_zero_step,
)
from bench import REPO

KIMI_LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)
DEPLOYMENTS: dict[str, tuple[Calibration, dict[str, ZeroStepRecord]]] = {
    "kimi": (CALIBRATION, {"estimate": ZERO_STEP_RECORD}),
    "h200-heavy": (H200_HEAVY, H200_RECORDS),
    "h200-big": (H200_BIG, H200_BIG_RECORDS),
}
GRIDS = {"h200-big": VERIFY_REQUEST_GRID_S}
"""The ``request_s`` values a fit tries, where a deployment needs more than ``REQUEST_GRID_S``."""


def measured_ratios(results: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(concurrency, off ÷ baseline) of the results, pooled per level (``measured_off_over_baseline``)."""
    ratios = measured_off_over_baseline(results)
    if not ratios:
        raise SystemExit(
            "no level of those results has both an 'off' and a 'baseline' arm (use --baseline-url)"
        )
    return list(ratios.items())


def _repo_path(path: Path) -> str:
    """The path as the repository names it, where it lies inside the repository."""
    resolved = path.resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(path)


def record_literal(record: ZeroStepRecord) -> str:
    pairs = ", ".join(f"({c}, {r:.3f})" for c, r in record.off_over_baseline)
    costs = record.zero_step
    return (
        "ZeroStepRecord(\n"
        f"    zero_step=ZeroStepCosts(round_s={costs.round_s}, request_s={costs.request_s}),\n"
        f"    off_over_baseline=({pairs}),\n"
        f"    measured={record.measured},\n"
        f"    source={record.source!r},\n"
        f"    spec_profile={record.spec_profile!r},\n"
        f"    baseline_profile={record.baseline_profile!r},\n"
        f"    skip_zero_step_draft_extend={record.skip_zero_step_draft_extend},\n"
        f"    zero_step_path={record.zero_step_path!r},\n"
        f"    input_len={record.input_len},\n"
        f"    output_len={record.output_len},\n"
        f"    results={record.results!r},\n"
        ")"
    )


def show(
    name: str,
    record: ZeroStepRecord,
    calibration: Calibration,
    fit: bool,
    grid: tuple[float, ...],
    fit_arrivals: bool = False,
) -> None:
    spec, base = load_profile(REPO / record.spec_profile), load_profile(REPO / record.baseline_profile)
    costs = record.zero_step
    print(f"{name}: {'measured' if record.measured else 'not measured'}; {record.source}")
    tail = " (draft-extend skipped)" if record.skip_zero_step_draft_extend else " + the draft-extend pass"
    if record.zero_step_path == "plain":
        tail = " (patch 03's plain path: no draft-extend pass)"
    print(f"  costs: {costs.round_s * 1e3:.4f} ms a round + {costs.request_s * 1e3:.4f} ms a request{tail}")
    arrival = record.arrival or calibration.spec.arrival
    print(
        f"  arrivals: {arrival.request_s * 1e3:.3f} ms a request on the speculative server beyond the draft's "
        f"extend over its prompt ({costmodel.draft_pass_s(calibration, record.input_len) * 1e3:.2f} ms)"
        + ("" if arrival.request_s else ": none modelled for this record")
    )
    model = record_model(record, spec, base, calibration)
    if record.arrival is None or not record.arrival.request_s:
        print(f"  {'c':>5} {'model off/baseline':>20} {'recorded':>10} {'difference':>11}")
        for c, ratio in record.off_over_baseline:
            print(f"  {c:>5} {model[c]:>20.3f} {ratio:>10.3f} {model[c] - ratio:>+11.3f}")
    else:
        show_arrivals(record, spec, base, calibration, model, fit_arrivals)
    if fit:
        fitted = fit_zero_step(record, spec, base, calibration, request_grid_s=grid)
        print(
            f"  costs that fit the record: {fitted.round_s * 1e3:.3f} ms a round + {fitted.request_s * 1e3:.3f} ms a request"
        )


def show_arrivals(
    record: ZeroStepRecord,
    spec: Profile,
    base: Profile,
    calibration: Calibration,
    model: dict[int, float],
    refit: bool,
) -> None:
    """The record's levels: the pooled real figure with its 95 % interval, the model with the fitted
    arrival cost, without it, and with the patched arrival path (``ArrivalCosts.at_zero_steps``)."""
    assert record.arrival is not None
    pooled = pooled_off_over_baseline([json.loads((REPO / path).read_text()) for path in record.results])
    bare = record_model(dataclasses.replace(record, arrival=NO_ARRIVAL_COST), spec, base, calibration)
    patched = record_model(
        dataclasses.replace(record, arrival=dataclasses.replace(record.arrival, at_zero_steps=False)),
        spec, base, calibration,
    )  # fmt: skip
    print(
        f"  {'c':>5} {'real (pooled, 95 %)':>24} {'runs':>4} {'model':>7} {'diff':>7} {'in?':>4}"
        f" {'no arrival cost':>16} {'patched':>8}"
    )
    for c, ratio in record.off_over_baseline:
        band = pooled[c]
        inside = abs(math.log(model[c] / band.ratio)) <= band.half_width
        real = f"{ratio:.3f} ±{band.half_width * 100:.1f} %"
        print(
            f"  {c:>5} {real:>24} {band.runs:>4} {model[c]:>7.3f} {model[c] - ratio:>+7.3f} "
            f"{'yes' if inside else 'NO':>4} {bare[c]:>16.3f} {patched[c]:>8.3f}"
        )
    print(
        "  patched: an arrival while the batch runs at 0 steps costs what it costs a server without a drafter "
        "(issue 36, step 2; its draft catches up on resume)"
    )
    if refit:
        fitted, chi2 = fit_arrival(record, spec, base, calibration, pooled)
        print(
            f"  arrival cost that fits the record: {fitted.request_s * 1e3:.3f} ms a request "
            f"(chi-square {chi2:.2f} over {len(pooled)} levels)"
        )


def carried_over(spec: Profile, base: Profile) -> None:
    """What Kimi would read with the real H200's 0-step costs as they are (the record's what-if)."""
    cal = with_zero_step(CALIBRATION, H200_ZERO_STEP)
    ratios = off_over_baseline(spec, base, (64, 128), calibration=cal)
    shape = (
        spec.speculation.num_steps or 0,
        spec.speculation.eagle_topk or 1,
        spec.speculation.num_draft_tokens or 1,
    )
    crossings = [
        costmodel.crossover_batch(c, *shape, CROSSOVER_CONTEXT, skip_draft_extend=skip)
        for c, skip in ((CALIBRATION, False), (cal, False), (cal, True))
    ]
    print(
        f"  with the H200's 0-step costs carried over: off ÷ baseline c=64 {ratios[64]:.3f}, c=128 {ratios[128]:.3f}; "
        f"crossover {crossings[0]} now, {crossings[1]} carried over, {crossings[2]} carried over with the skip"
    )
    plain = on_path(spec, "plain")
    with_cost = off_over_baseline(plain, base, (64, 128), calibration=with_arrival(CALIBRATION, H200_ARRIVAL))
    print(
        f"  with the H200's arrival cost ({H200_ARRIVAL.request_s * 1e3:.2f} ms a request) carried over as it is, "
        f"on the plain path: off ÷ baseline c=64 {with_cost[64]:.3f}, c=128 {with_cost[128]:.3f} "
        "(Kimi's own is not measured: none is modelled)"
    )


def fit_big_target() -> None:
    """The GPU-bound H200's target costs fitted again to its records' baseline arms (``fit_target``)."""
    paths = (*H200_BIG_VERIFY_RECORD.results, *H200_BIG_PLAIN_RECORD.results)
    measured = measured_baseline([json.loads((REPO / path).read_text()) for path in paths])
    base = load_profile(REPO / H200_BIG_PLAIN_RECORD.baseline_profile)
    print(
        f"baseline arms (mean of {', '.join(paths)}): "
        + ", ".join(f"c={c} {t:.0f}" for c, t in measured.items())
    )
    target, worst = fit_target(base, measured)
    now = fit_target(base, measured, rounds=0)[1]
    print(f"largest difference: {now:.1%} with the calibration's costs, {worst:.1%} fitted")
    print(target)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deployment", choices=sorted(DEPLOYMENTS), default="kimi")
    parser.add_argument("--fit", action="store_true", help="fit the costs to every record again")
    parser.add_argument(
        "--fit-arrival",
        action="store_true",
        help="fit the arrival cost to the records that model one again (about a minute a record)",
    )
    parser.add_argument(
        "--fit-target",
        action="store_true",
        help="h200-big: fit the target's costs to the records' baseline arms again (about six minutes)",
    )
    parser.add_argument(
        "--from",
        dest="sources",
        type=Path,
        nargs="+",
        help="agent bench compare --json results of one comparison (several are pooled per level)",
    )
    parser.add_argument(
        "--skip", action="store_true", help="the off arm ran with skip_zero_step_draft_extend"
    )
    parser.add_argument(
        "--path",
        choices=("verify", "plain"),
        help="the 0-step path the off arm ran (speculation.zero_step; default: the deployment's first record's)",
    )
    parser.add_argument("--levels", help="comma-separated levels to keep in the record")
    parser.add_argument("--spec-profile", help="the speculative server's profile (repository path)")
    parser.add_argument("--baseline-profile", help="the baseline server's profile (repository path)")
    args = parser.parse_args()
    calibration, records = DEPLOYMENTS[args.deployment]
    if args.fit_target:
        if args.deployment != "h200-big":
            parser.error("--fit-target is for --deployment h200-big")
        fit_big_target()
        return

    if not args.sources:
        for name, record in records.items():
            grid = GRIDS.get(args.deployment, REQUEST_GRID_S)
            show(name, record, calibration, args.fit, grid, args.fit_arrival)
        if args.deployment == "kimi":
            loaded = load_profile(REPO / ZERO_STEP_RECORD.spec_profile)
            spec = on_path(loaded, ZERO_STEP_RECORD.zero_step_path)
            base = load_profile(REPO / ZERO_STEP_RECORD.baseline_profile)
            model = off_over_baseline(spec, base, KIMI_LEVELS, calibration=calibration)
            print(
                f"  model at every level ({ZERO_STEP_RECORD.zero_step_path} path): "
                + ", ".join(f"c={c} {r:.3f}" for c, r in model.items())
            )
            plain = off_over_baseline(on_path(loaded, "plain"), base, KIMI_LEVELS, calibration=calibration)
            costs = calibration.spec.plain_zero_step
            print(
                f"  patch 03's plain path ({costs.round_s * 1e3:.3f} ms a round + {costs.request_s * 1e3:.4f} ms "
                "a request, the H200's measured cost scaled by memory bandwidth): "
                + ", ".join(f"c={c} {r:.3f}" for c, r in plain.items())
            )
            carried_over(spec, base)
        return

    first = next(iter(records.values()))
    results = [json.loads(path.read_text()) for path in args.sources]
    result = results[0]
    ratios = measured_ratios(results)
    if args.levels:
        keep = {int(x) for x in args.levels.split(",")}
        ratios = [(c, r) for c, r in ratios if c in keep]
    options = result.get("options") or {}
    server = result.get("server") or {}
    draft = dataclasses.replace(
        first,
        off_over_baseline=tuple(ratios),
        measured=True,
        source=(
            f"agent bench compare --baseline-url on a real engine: {', '.join(map(_repo_path, args.sources))} "
            f"(server {server.get('model_path') or server.get('served_model_name') or '?'}; "
            f"{len(results)} run(s) pooled per level)"
        ),
        spec_profile=args.spec_profile or first.spec_profile,
        baseline_profile=args.baseline_profile or first.baseline_profile,
        skip_zero_step_draft_extend=args.skip,
        zero_step_path=args.path or first.zero_step_path,
        input_len=int(options.get("input_len") or 1024),
        output_len=int(options.get("output_len") or 256),
        results=tuple(_repo_path(path) for path in args.sources),
    )
    spec, base = load_profile(REPO / draft.spec_profile), load_profile(REPO / draft.baseline_profile)
    grid = GRIDS.get(args.deployment, REQUEST_GRID_S)
    record = dataclasses.replace(
        draft, zero_step=fit_zero_step(draft, spec, base, calibration, request_grid_s=grid)
    )
    model = record_model(record, spec, base, calibration)
    print(f"{'c':>5} {'measured off/baseline':>22} {'model at the fitted costs':>26} {'difference':>11}")
    for c, ratio in ratios:
        print(f"{c:>5} {ratio:>22.3f} {model[c]:>26.3f} {model[c] - ratio:>+11.3f}")
    print()
    print(record_literal(record))


if __name__ == "__main__":
    main()
