"""The recommendation as a comparison states it: ``recommend`` on the measured arms, in words that
name the levels it could not tell apart, what to run to separate them, and the noise it saw."""

from __future__ import annotations

import math
from typing import Any

from agent.bench.counters import stream_gap_words
from agent.bench.interval import PRIOR_DF, t975
from agent.bench.recommend import LevelPair, recommend


def _arm(row: dict[str, Any], name: str) -> dict[str, Any] | None:
    arm = row.get(name)
    if not isinstance(arm, dict) or "unavailable" in arm or arm.get("output_throughput") is None:
        return None
    return arm


def _pm(arm: dict[str, Any]) -> str:
    rel = arm.get("output_throughput_ci_rel")
    value = f"{float(arm['output_throughput']):.1f}"
    return value + (f" ± {rel * 100:.1f} %" if rel is not None else " (no interval)")


def noise_seen(levels: list[dict[str, Any]]) -> dict[str, Any]:
    """The widest and narrowest interval, the largest spread between one arm's repeats, and the
    largest gap between the engine's count and ours, over every measured arm and level."""
    widths: list[tuple[float, str, int]] = []
    spreads: list[tuple[float, str, int]] = []
    diffs: list[float] = []
    for row in levels:
        for name in ("on", "off", "adaptive", "baseline", "sweep"):
            arm = _arm(row, name)
            if arm is None:
                continue
            c = int(row.get("concurrency", arm.get("max_concurrency", 0)))
            if arm.get("output_throughput_ci_rel") is not None:
                widths.append((float(arm["output_throughput_ci_rel"]), name, c))
            repeats = [float(v) for v in arm.get("output_throughput_repeats") or []]
            if len(repeats) > 1 and arm["output_throughput"]:
                spreads.append(((max(repeats) - min(repeats)) / float(arm["output_throughput"]), name, c))
            if arm.get("engine_stream_diff") is not None:
                diffs.append(float(arm["engine_stream_diff"]))
    noise: dict[str, Any] = {}
    if widths:
        wide, narrow = max(widths), min(widths)
        noise |= {
            "ci_rel_max": wide[0],
            "ci_rel_min": narrow[0],
            "widest": {"arm": wide[1], "concurrency": wide[2]},
        }
    if spreads:
        top = max(spreads)
        noise |= {"repeat_spread_max": top[0], "repeat_spread_at": {"arm": top[1], "concurrency": top[2]}}
    if diffs:
        noise["engine_stream_diff_max"] = max(diffs, key=abs)  # signed: more, or fewer than ours
    return noise


def noise_words(noise: dict[str, Any], repeats: int) -> str:
    parts = []
    if "ci_rel_max" in noise:
        w = noise["widest"]
        parts.append(
            f"the arms' 95 % intervals were ±{noise['ci_rel_min'] * 100:.1f} % to ±{noise['ci_rel_max'] * 100:.1f} % "
            f"of their figures (widest: {w['arm']} at c={w['concurrency']})"
        )
    if "repeat_spread_max" in noise:
        at = noise["repeat_spread_at"]
        parts.append(
            f"the {repeats} repeats of one arm differed by up to {noise['repeat_spread_max'] * 100:.1f} % "
            f"({at['arm']} at c={at['concurrency']})"
        )
    elif repeats == 1:
        parts.append("one repeat per arm: the intervals hold only each window's own noise")
    if "engine_stream_diff_max" in noise:
        parts.append(stream_gap_words(float(noise["engine_stream_diff_max"])))
    return ("Noise seen: " + "; ".join(parts) + ".") if parts else ""


def _half_log(arm: dict[str, Any]) -> float | None:
    ci = arm.get("output_throughput_ci")
    if not ci or float(ci[0]) <= 0:
        return None
    return math.log(float(ci[1]) / float(ci[0])) / 2


def _scaled(h: float, arm: dict[str, Any], repeats: int, more: int) -> float:
    """h with ``more`` repeats of the same noise: t(df') / t(df) x sqrt(R / R')."""
    df = int(arm.get("ci_df") or PRIOR_DF + repeats - 1)
    return h * t975(df + more - repeats) / t975(df) * math.sqrt(repeats / more)


def resolution(levels: list[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    """Per level, the smallest on-vs-off difference this run tells apart (their intervals stop
    overlapping once the figures differ by exp(h_on + h_off) - 1), and the same with twice the
    repeats; a difference below it reads as "indistinguishable", whatever its sign."""
    out = []
    for row in levels:
        on, off = _arm(row, "on"), _arm(row, "off")
        if on is None or off is None:
            continue
        h_on, h_off = _half_log(on), _half_log(off)
        if h_on is None or h_off is None:
            continue
        more = 2 * max(1, repeats)
        doubled = _scaled(h_on, on, repeats, more) + _scaled(h_off, off, repeats, more)
        out.append(
            {
                "concurrency": int(row["concurrency"]),
                "resolves": math.exp(h_on + h_off) - 1,
                "repeats": repeats,
                "with_repeats": more,
                "resolves_with_repeats": math.exp(doubled) - 1,
            }
        )
    return out


def resolution_words(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    now = ", ".join(f"c={r['concurrency']} {r['resolves'] * 100:.1f} %" for r in rows)
    more = ", ".join(f"{r['resolves_with_repeats'] * 100:.1f} %" for r in rows)
    return (
        f"This run tells on from off apart (95 %) where they differ by more than: {now}; "
        f"with --repeats {rows[0]['with_repeats']} about {more}. Smaller differences read as indistinguishable."
    )


def _levels_text(cs: list[int]) -> str:
    return ", ".join(f"c={c}" for c in cs)


NO_INTERVAL_REL_ERR = 0.05
"""An arm measured without an interval (one slice of one repeat) is read as ±10 % (1.96 x 5 %):
wide enough that it cannot make a level look clear."""


def recommendation_from_levels(levels: list[dict[str, Any]], repeats: int = 2) -> dict[str, Any]:
    pairs: list[LevelPair] = []
    arms: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for row in levels:
        on, off = _arm(row, "on"), _arm(row, "off")
        if on is None or off is None:
            continue
        c = int(row["concurrency"])
        arms[c] = (on, off)
        on_ci, off_ci = on.get("output_throughput_ci"), off.get("output_throughput_ci")
        pairs.append(
            LevelPair(
                concurrency=c,
                on=float(on["output_throughput"]),
                off=float(off["output_throughput"]),
                on_ci=None if on_ci is None else (float(on_ci[0]), float(on_ci[1])),
                off_ci=None if off_ci is None else (float(off_ci[0]), float(off_ci[1])),
                on_rel_err=NO_INTERVAL_REL_ERR if on_ci is None else 0.0,
                off_rel_err=NO_INTERVAL_REL_ERR if off_ci is None else 0.0,
            )
        )
    if not pairs:
        return {
            "recommended_threshold": None,
            "recommendation": {"reason": "no level has both the on and the off arm measured"},
        }
    rec = recommend(pairs, repeats=repeats)
    words = [rec.reason + "."]
    if rec.indistinguishable_at:
        shown = "; ".join(
            f"c={c}: on {_pm(arms[c][0])}, off {_pm(arms[c][1])}" for c in rec.indistinguishable_at
        )
        words.append(
            f"The arms were indistinguishable at {_levels_text(rec.indistinguishable_at)} ({shown})."
        )
        separate = rec.to_separate or {}
        if separate.get("repeats"):
            levels_arg = ",".join(
                str(c) for c in separate["levels"] if c not in separate["equal_within_noise"]
            )
            words.append(
                f"To separate them, run more repeats there: --concurrency {levels_arg} --repeats {separate['repeats']}."
            )
        if separate.get("equal_within_noise"):
            words.append(
                f"At {_levels_text(separate['equal_within_noise'])} the arms differ by far less than the noise: "
                "either setting gives the same throughput there, and no practical number of repeats will order them."
            )
    noise = noise_seen(levels)
    text = noise_words(noise, repeats)
    if text:
        words.append(text)
    data = rec.as_dict() | {
        "reason": " ".join(words),
        "noise": noise,
        "resolution": resolution(levels, repeats),
    }
    return {"recommended_threshold": rec.threshold, "recommendation": data}
