"""What a benchmark run is asked to do, validated before any request is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

DEFAULT_CONCURRENCY: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 250)


class BenchOptionError(ValueError):
    """A bad option, naming the field and what is allowed."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


def default_requests_for(concurrency: int) -> int:
    """Requests measured at one level when the operator does not say.

    One full wave per level (C requests), and at least 8 at low concurrency so the level is not a
    single request. Every measured request starts while the level's C slots are full, so the engine
    runs at the asked concurrency for most of the level; more waves mostly cost time (a full
    compare at the simulator's --speedup 20 must fit in two minutes).
    """
    return max(concurrency, 8)


@dataclass(frozen=True)
class BenchOptions:
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    requests_per_level: int | None = None
    """None: :func:`default_requests_for` each level."""
    input_len: int = 1024
    output_len: int = 256
    chat: bool = False
    warmup_requests: int = 1
    min_level_seconds: float = 2.0
    """A level keeps starting requests until this long has passed (and at least
    ``requests_at(C)`` were sent): short levels are dominated by ramp-up, ramp-down and the host's
    jitter. A real server's levels last longer than this anyway."""
    request_timeout_s: float = 600.0
    sample_interval_s: float = 0.25
    """How often the engine's /metrics is read during a level (SGLang builds it from every process's
    files on each scrape, so it is not free)."""
    api_key: str | None = field(default=None, repr=False)
    admin_api_key: str | None = field(default=None, repr=False)
    """For SGLang's ADMIN_OPTIONAL routes (/set_internal_state, /flush_cache) when the server has an
    admin key: then those routes refuse the plain API key (sglang-0.5.23.md §4.1)."""
    seed: int = 1

    def requests_at(self, concurrency: int) -> int:
        if self.requests_per_level is not None:
            return self.requests_per_level
        return default_requests_for(concurrency)

    def public_dict(self) -> dict[str, Any]:
        """The options as recorded in a result (no API key)."""
        data = asdict(self)
        data.pop("api_key")
        data.pop("admin_api_key")
        data["concurrency"] = list(self.concurrency)
        return data

    def with_api_key(self, api_key: str | None, admin_api_key: str | None = None) -> BenchOptions:
        return replace(self, api_key=api_key, admin_api_key=admin_api_key)


def parse_concurrency(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` → (1, 2, 4); strictly positive, unique, any order (sorted)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchOptionError(
            "concurrency", f"{text!r} is not a comma-separated list of integers, e.g. 1,2,4,8"
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


def _int_in(data: Mapping[str, Any], key: str, low: int, high: int, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise BenchOptionError(key, f"{value!r}: must be an integer from {low} to {high}")
    return value


def options_from_mapping(data: Mapping[str, Any]) -> BenchOptions:
    """Options from a JSON body (the daemon's POST /v1/bench); unknown keys are refused by name."""
    allowed = {
        "concurrency", "requests_per_level", "input_len", "output_len", "chat", "warmup_requests", "min_level_seconds",
    }  # fmt: skip
    unknown = sorted(set(data) - allowed - {"mode", "baseline_url", "confirm_production"})
    if unknown:
        raise BenchOptionError(unknown[0], f"unknown field; allowed: {', '.join(sorted(allowed))}")
    concurrency = data.get("concurrency", list(DEFAULT_CONCURRENCY))
    if not isinstance(concurrency, list):
        raise BenchOptionError("concurrency", "must be a list of integers, e.g. [1, 2, 4, 8]")
    chat = data.get("chat", False)
    if not isinstance(chat, bool):
        raise BenchOptionError("chat", f"{chat!r}: must be true or false")
    min_seconds = data.get("min_level_seconds", 2.0)
    if (
        not isinstance(min_seconds, int | float)
        or isinstance(min_seconds, bool)
        or not 0 <= min_seconds <= 3600
    ):
        raise BenchOptionError(
            "min_level_seconds", f"{min_seconds!r}: must be a number of seconds from 0 to 3600"
        )
    return BenchOptions(
        concurrency=validate_concurrency(concurrency),
        min_level_seconds=float(min_seconds),
        requests_per_level=_int_in(data, "requests_per_level", 1, 100_000, None),
        input_len=_int_in(data, "input_len", 1, 1_000_000, 1024) or 1024,
        output_len=_int_in(data, "output_len", 2, 1_000_000, 256) or 256,
        chat=chat,
        warmup_requests=_int_in(data, "warmup_requests", 0, 1000, 1) or 0,
    )
