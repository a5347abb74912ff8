"""The simulated engine's zero-step tax: what the model gives, and the tax that fits a real-engine comparison.

Without ``--from``: prints the engine model's off ÷ baseline (0 steps inside the speculative server
against no drafter, ``agent.sim.zerostep``) at c = 1 … 128 next to ``ZERO_STEP_RECORD``, and the
tax that fits the record (it should equal the one in the calibration).

With ``--from RESULT.json`` (an ``agent bench compare --baseline-url ... --json RESULT.json`` run on
a real engine): reads off ÷ baseline per level from its ``off`` and ``baseline`` arms, fits the
tax to them and prints the ``ZERO_STEP_RECORD`` to paste into ``agent/sim/calibration.py``; then
``tests/sim/test_calibration.py`` checks the model against it (within 2 points at every level).
``--levels`` restricts the record to some levels (say, those at and above the threshold, where 0-step
rounds run) when one number cannot follow the measured shape everywhere.

    .venv/bin/python bench/zero_step_tax.py
    .venv/bin/python bench/zero_step_tax.py --from bench/results/issue18-compare.json [--skip] [--levels 16,32,64,128]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from agent.profile.store import load_profile
from agent.sim.calibration import (
    CALIBRATION,
    ZERO_STEP_PROFILE_BASELINE,
    ZERO_STEP_PROFILE_SPEC,
    ZERO_STEP_RECORD,
    ZeroStepRecord,
)
from agent.sim.zerostep import fit_zero_step_tax, off_over_baseline, with_tax

ROOT = Path(__file__).resolve().parents[1]
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)


def measured_ratios(result: dict[str, Any]) -> list[tuple[int, float]]:
    """(concurrency, off ÷ baseline) of every level of a compare result that measured both arms."""
    out = []
    for row in result.get("levels", []):
        off, base = row.get("off") or {}, row.get("baseline") or {}
        if off.get("output_throughput") and base.get("output_throughput"):
            out.append(
                (int(row["concurrency"]), float(off["output_throughput"]) / float(base["output_throughput"]))
            )
    if not out:
        raise SystemExit(
            "no level of that result has both an 'off' and a 'baseline' arm (use --baseline-url)"
        )
    return out


def record_literal(record: ZeroStepRecord) -> str:
    pairs = ", ".join(f"({c}, {r:.3f})" for c, r in record.off_over_baseline)
    return (
        "ZERO_STEP_RECORD = ZeroStepRecord(\n"
        f"    zero_step_tax={record.zero_step_tax},\n"
        f"    off_over_baseline=({pairs}),\n"
        f"    measured={record.measured},\n"
        f"    source={record.source!r},\n"
        f"    skip_zero_step_draft_extend={record.skip_zero_step_draft_extend},\n"
        f"    input_len={record.input_len},\n"
        f"    output_len={record.output_len},\n"
        ")"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--from", dest="source", type=Path, help="an agent bench compare --json result")
    parser.add_argument(
        "--skip", action="store_true", help="the off arm ran with skip_zero_step_draft_extend"
    )
    parser.add_argument("--levels", help="comma-separated levels to keep in the record")
    args = parser.parse_args()
    spec = load_profile(ROOT / ZERO_STEP_PROFILE_SPEC)
    base = load_profile(ROOT / ZERO_STEP_PROFILE_BASELINE)

    if args.source is None:
        model = off_over_baseline(spec, base, LEVELS, ZERO_STEP_RECORD.input_len, ZERO_STEP_RECORD.output_len)
        recorded = dict(ZERO_STEP_RECORD.off_over_baseline)
        print(f"zero_step_tax in the calibration: {CALIBRATION.spec.zero_step_tax}")
        print(f"{'c':>5} {'model off/baseline':>20} {'recorded':>10}")
        for c, ratio in model.items():
            shown = f"{recorded[c]:.3f}" if c in recorded else ""
            print(f"{c:>5} {ratio:>20.3f} {shown:>10}")
        print(f"tax that fits the record: {fit_zero_step_tax(ZERO_STEP_RECORD, spec, base)}")
        print(
            f"record ({'measured' if ZERO_STEP_RECORD.measured else 'not measured'}): {ZERO_STEP_RECORD.source}"
        )
        return

    result = json.loads(args.source.read_text())
    ratios = measured_ratios(result)
    if args.levels:
        keep = {int(x) for x in args.levels.split(",")}
        ratios = [(c, r) for c, r in ratios if c in keep]
    options = result.get("options") or {}
    server = result.get("server") or {}
    draft = ZeroStepRecord(
        zero_step_tax=0.0,
        off_over_baseline=tuple(ratios),
        measured=True,
        source=(
            f"agent bench compare --baseline-url on a real engine: {args.source} "
            f"(server {server.get('model_path') or server.get('served_model_name') or '?'}, "
            f"started {result.get('started_at')})"
        ),
        skip_zero_step_draft_extend=args.skip,
        input_len=int(options.get("input_len") or 1024),
        output_len=int(options.get("output_len") or 256),
    )
    tax = fit_zero_step_tax(draft, spec, base)
    record = dataclasses.replace(draft, zero_step_tax=tax)
    levels = [c for c, _ in ratios]
    model = off_over_baseline(
        spec, base, levels, record.input_len, record.output_len, calibration=with_tax(CALIBRATION, tax)
    )
    print(f"{'c':>5} {'measured off/baseline':>22} {'model at the fitted tax':>24} {'difference':>11}")
    for c, ratio in ratios:
        print(f"{c:>5} {ratio:>22.3f} {model[c]:>24.3f} {model[c] - ratio:>+11.3f}")
    print()
    print(record_literal(record))


if __name__ == "__main__":
    main()
