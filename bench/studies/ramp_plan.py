"""What ``autopilot_ramp.py`` is asked to do, checked before anything is touched: the levels, the
time each level is held and how it is shared, the best fixed threshold (from a compare result or
given), the engine's key. Every refusal names the option, file or key and says what is allowed."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.sglang.live_control import NO_THRESHOLD
from bench.studies.ramp_figures import ARMS

DEFAULT_LEVELS = "1,2,4,8,16,32,64,128,64,32,16,8,4,2,1"
MIN_WINDOW_S = 0.5


class BadInput(Exception):
    """Refused before anything changed; the message names the option, file or key."""


@dataclass(frozen=True)
class Plan:
    levels: tuple[int, ...]
    hold_s: float
    level_settle_s: float
    switch_settle_s: float
    autopilot_settle_s: float
    window_s: float
    slices: int

    def settle(self, arm: str) -> float:
        return self.autopilot_settle_s if arm == "autopilot" else self.switch_settle_s

    def words(self) -> str:
        return (
            f"each level held {self.hold_s:g} s: {self.level_settle_s:g} s at the new level (not counted), "
            f"then per arm a settle after its switch (fixed {self.switch_settle_s:g} s, autopilot "
            f"{self.autopilot_settle_s:g} s; not counted) and a counted window of {self.window_s:.2f} s "
            f"({self.slices} slices); arm order rotated by one per level"
        )


def order_at(level_index: int) -> list[str]:
    """The arms in the order they run at this level: rotated by one per level."""
    shift = level_index % len(ARMS)
    return [*ARMS[shift:], *ARMS[:shift]]


def parse_levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise BadInput(
            f"--levels: {text!r} is not a comma-separated list of integers, e.g. 1,4,16,4,1"
        ) from None
    if not levels or any(v < 1 or v > 4096 for v in levels):
        raise BadInput(f"--levels: {text!r}: each level must be an integer from 1 to 4096, at least one")
    return levels


def make_plan(args: argparse.Namespace) -> Plan:
    for name in ("hold_s", "level_settle_s", "switch_settle_s", "autopilot_settle_s"):
        if getattr(args, name) < 0:
            raise BadInput(f"--{name.replace('_', '-')}: must be 0 or more (got {getattr(args, name)})")
    if args.slices < 1:
        raise BadInput(f"--slices: must be 1 or more (got {args.slices})")
    spent = args.level_settle_s + 2 * args.switch_settle_s + args.autopilot_settle_s
    window = (args.hold_s - spent) / len(ARMS)
    if window < MIN_WINDOW_S:
        raise BadInput(
            f"--hold-s: {args.hold_s:g} s leaves {window:.2f} s per window after {spent:g} s of settling; "
            f"at least {MIN_WINDOW_S:g} s per window needs --hold-s {spent + len(ARMS) * MIN_WINDOW_S:g} or more"
        )
    return Plan(
        parse_levels(args.levels),
        args.hold_s,
        args.level_settle_s,
        args.switch_settle_s,
        args.autopilot_settle_s,
        window,
        args.slices,
    )


def read_compare(path: Path) -> dict[str, Any]:
    """The best fixed threshold from an ``agent bench compare --json`` result, with where it came from."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise BadInput(f"--compare: {path}: cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadInput(f"--compare: {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != "compare":
        raise BadInput(
            f"--compare: {path}: kind: expected a result of agent bench compare --json (kind compare)"
        )
    value = data.get("recommended_threshold")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        reason = (data.get("recommendation") or {}).get("reason")
        why = f" ({reason})" if reason else ""
        raise BadInput(
            f"--compare: {path}: recommended_threshold: the comparison recommends no threshold{why}; "
            "give the best fixed threshold with --best-threshold N"
        )
    options = data.get("options") or {}
    rec = data.get("recommendation") or {}
    return {
        "threshold": value,
        "source": f"compare {path}",
        "range": rec.get("threshold_range"),
        "input_len": options.get("input_len"),
        "output_len": options.get("output_len"),
    }


def read_key(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        key = path.read_text().strip()
    except OSError as exc:
        raise BadInput(f"--api-key-file: {path}: cannot read it: {exc.strerror or exc}") from None
    if not key:
        raise BadInput(f"--api-key-file: {path}: the file is empty")
    return key


def threshold_words(value: int | None) -> str:
    return (
        "unknown"
        if value is None
        else ("none (speculate at every size)" if value == NO_THRESHOLD else str(value))
    )
