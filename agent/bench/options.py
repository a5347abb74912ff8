"""What a benchmark run is asked to do, validated before any request is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.bench.stopping import StopRule, StopRuleError, make_rule, rule_from_mapping
from agent.profile.words import given_words
from agent.wire.bench import DEFAULT_CONCURRENCY as DEFAULT_CONCURRENCY
from agent.wire.bench import DEFAULT_DRAIN_WAIT_S, WARMUP_OUTPUT_LEN
from agent.wire.bench import DEFAULT_MIN_WINDOW_S as DEFAULT_MIN_WINDOW_S
from agent.wire.bench import DEFAULT_REPEATS as DEFAULT_REPEATS
from agent.wire.bench import BenchOptions as BenchOptions
from agent.wire.bench import default_requests_for as default_requests_for
from agent.wire.bench_result import ARM_NAMES

# BenchOptions is a wire model (agent.wire.bench: results record it, the console reads it); this
# module turns a request body or the command line into one, naming a bad field.


class BenchOptionError(ValueError):
    """A bad option, naming the field and what is allowed."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


def parse_concurrency(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` → (1, 2, 4); strictly positive, unique, any order (sorted)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchOptionError(
            "concurrency", f"{given_words(text)} is not a comma-separated list of integers, e.g. 1,2,4,8"
        ) from None
    return validate_concurrency(values)


def validate_concurrency(values: Sequence[int]) -> tuple[int, ...]:
    if not values:
        raise BenchOptionError("concurrency", "needs at least one level, e.g. 1,2,4,8")
    if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > 4096 for v in values):
        raise BenchOptionError("concurrency", f"{list(values)}: each level must be an integer from 1 to 4096")
    if len(set(values)) != len(values):
        raise BenchOptionError("concurrency", f"{list(values)}: levels must be unique")
    return tuple(sorted(values))


def parse_arms(text: str) -> tuple[str, ...]:
    """``"off,baseline"`` → ("off", "baseline")."""
    return validate_arms([part.strip() for part in text.split(",") if part.strip()])


def validate_arms(values: object) -> tuple[str, ...]:
    """Known, unique arm names, in the order results show them (``ARM_NAMES``)."""
    allowed = ", ".join(ARM_NAMES)
    if not isinstance(values, list | tuple) or not values:
        raise BenchOptionError(
            "arms", f"{given_words(values)}: give at least one of {allowed}, e.g. off,baseline"
        )
    unknown = [v for v in values if v not in ARM_NAMES]
    if unknown:
        raise BenchOptionError("arms", f"{given_words(unknown[0])} is not an arm; allowed: {allowed}")
    if len(set(values)) != len(values):
        raise BenchOptionError("arms", f"{given_words(list(values))}: each arm once")
    return tuple(a for a in ARM_NAMES if a in values)


def stop_rule(
    until: float | None, budget_s: float | None, min_windows: int | None, max_windows: int | None
) -> StopRule | None:
    """``stopping.make_rule`` with its errors as ``BenchOptionError``."""
    try:
        return make_rule(until, budget_s, min_windows, max_windows)
    except StopRuleError as exc:
        raise BenchOptionError(exc.field_name, str(exc).split(": ", 1)[1]) from None


def _int_in(data: Mapping[str, Any], key: str, low: int, high: int, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise BenchOptionError(key, f"{given_words(value)}: must be an integer from {low} to {high}")
    return value


def _seconds_in(data: Mapping[str, Any], key: str, default: float) -> float:
    value = data.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 3600:
        raise BenchOptionError(key, f"{given_words(value)}: must be a number of seconds from 0 to 3600")
    return float(value)


STOP_FIELDS = ("until", "budget_s", "min_windows", "max_windows")
"""The stopping rule's body fields (``agent.bench.stopping``)."""

ALIASES = {"requests_per_level": "min_requests", "min_level_seconds": "min_window_s"}
"""Older names of two body fields, still accepted (the console and scripts send them)."""


def options_from_mapping(data: Mapping[str, Any]) -> BenchOptions:
    """Options from a JSON body (the daemon's POST /v1/bench); unknown keys are refused by name."""
    allowed = {
        "concurrency", "min_requests", "input_len", "output_len", "chat", "repeats", "min_window_s",
        "warmup_requests", "warmup_output_len", "drain_wait_s", *STOP_FIELDS, "arms", *ALIASES,
    }  # fmt: skip
    unknown = sorted(set(data) - allowed - {"mode", "baseline_url", "confirm_production"})
    if unknown:
        raise BenchOptionError(unknown[0], f"unknown field; allowed: {', '.join(sorted(allowed))}")
    body = dict(data)
    given: dict[str, str] = {}
    for old, new in ALIASES.items():
        if old in body:
            if new in body:
                raise BenchOptionError(old, f"give {new} or its older name {old}, not both")
            body[new] = body.pop(old)
            given[new] = old
    try:
        return _options(body)
    except BenchOptionError as exc:
        if exc.field_name not in given:
            raise
        raise BenchOptionError(given[exc.field_name], str(exc).split(": ", 1)[1]) from None


def _options(body: Mapping[str, Any]) -> BenchOptions:
    concurrency = body.get("concurrency", list(DEFAULT_CONCURRENCY))
    if not isinstance(concurrency, list):
        raise BenchOptionError("concurrency", "must be a list of integers, e.g. [1, 2, 4, 8]")
    chat = body.get("chat", False)
    if not isinstance(chat, bool):
        raise BenchOptionError("chat", f"{given_words(chat)}: must be true or false")
    try:
        rule = rule_from_mapping(body)
    except StopRuleError as exc:
        raise BenchOptionError(exc.field_name, str(exc).split(": ", 1)[1]) from None
    if rule is not None and body.get("repeats") is not None:
        raise BenchOptionError(
            "repeats",
            "a fixed number of windows; with until or budget_s the windows are min_windows to max_windows",
        )
    arms = body.get("arms")
    if arms is not None and body.get("mode", "compare") != "compare":
        raise BenchOptionError("arms", "only a compare has arms (mode compare)")
    return BenchOptions(
        concurrency=validate_concurrency(concurrency),
        min_window_s=_seconds_in(body, "min_window_s", DEFAULT_MIN_WINDOW_S),
        drain_wait_s=_seconds_in(body, "drain_wait_s", DEFAULT_DRAIN_WAIT_S),
        min_requests=_int_in(body, "min_requests", 1, 100_000, None),
        input_len=_int_in(body, "input_len", 1, 1_000_000, 1024) or 1024,
        output_len=_int_in(body, "output_len", 2, 1_000_000, 256) or 256,
        chat=chat,
        repeats=_int_in(body, "repeats", 1, 20, DEFAULT_REPEATS) or DEFAULT_REPEATS,
        warmup_requests=_int_in(body, "warmup_requests", 0, 100_000, 0) or 0,
        warmup_output_len=_int_in(body, "warmup_output_len", 1, 1_000_000, WARMUP_OUTPUT_LEN)
        or WARMUP_OUTPUT_LEN,
        stop=rule,
        arms=None if arms is None else validate_arms(arms),
    )
