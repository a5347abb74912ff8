"""Patch 03's read-back (``adaptive_spec_live.zero_step``) as a typed view: how 0-step rounds run, what
they did, what the runtime keeps across rounds and the scheduler process's memory and collector time
(``live_control.ZERO_STEP_READBACK_KEYS``; ``info_view`` reads it inside ``/server_info``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from agent.sglang.live_control import ZERO_STEP_READBACK_KEYS, ZERO_STEP_STATE_KEYS
from agent.sglang.readback_values import as_bool as _bool
from agent.sglang.readback_values import as_float as _float
from agent.sglang.readback_values import as_floats as _floats
from agent.sglang.readback_values import as_int as _int
from agent.sglang.readback_values import as_ints as _ints
from agent.sglang.readback_values import as_str as _str


@dataclass(frozen=True)
class ZeroStepState:
    """Patch 03's read-back (``adaptive_spec_live.zero_step``): how 0-step rounds run, and what they did."""

    path: str | None
    """``plain`` (the target's own decode) or ``verify`` (SGLang's one-token verify)."""
    launch_path: str | None
    plain_built: bool | None
    build_error: str | None
    plain_rounds: int | None
    verify_rounds: int | None
    fallback_rounds: int | None
    last_fallback: str | None
    forced_zero: int | None
    catchups: int | None
    catchup_tokens: int | None
    catchups_skipped: int | None
    plain_prefills: int | None
    errors: int | None
    last_error: str | None
    last_reserve: int | None
    state: ZeroStepSizes | None = None
    """What the runtime keeps across rounds (issue 46); None from a server older than that."""
    host: ZeroStepHost | None = field(default=None, compare=False)
    """The scheduler process's memory and collector time (issue 46); None from an older server. A
    measurement, not a setting: two read-backs of an unchanged server compare equal whatever it reads."""


@dataclass(frozen=True)
class ZeroStepSizes:
    """``zero_step.state``: each structure's size (``live_control.ZERO_STEP_STATE_KEYS``); None: unknown."""

    sizes: tuple[tuple[str, int | None], ...]

    def get(self, key: str) -> int | None:
        return dict(self.sizes).get(key)


@dataclass(frozen=True)
class ZeroStepHost:
    """``zero_step.host``: resident memory (KiB) and the collector's figures since patch 03 attached."""

    rss_kib: int | None
    rss_peak_kib: int | None
    gc_collections: tuple[int, ...]
    gc_s: tuple[float, ...]
    gc_total_s: float | None
    gc_longest_ms: float | None
    gc_pending: tuple[int, ...]
    gc_metered: bool | None


def parse_zero_step_sizes(raw: Any) -> ZeroStepSizes | None:
    if not isinstance(raw, Mapping):
        return None
    return ZeroStepSizes(tuple((key, _int(raw.get(key))) for key in ZERO_STEP_STATE_KEYS))


def parse_zero_step_host(raw: Any) -> ZeroStepHost | None:
    if not isinstance(raw, Mapping):
        return None
    return ZeroStepHost(
        rss_kib=_int(raw.get("rss_kib")),
        rss_peak_kib=_int(raw.get("rss_peak_kib")),
        gc_collections=_ints(raw.get("gc_collections")),
        gc_s=_floats(raw.get("gc_s")),
        gc_total_s=_float(raw.get("gc_total_s")),
        gc_longest_ms=_float(raw.get("gc_longest_ms")),
        gc_pending=_ints(raw.get("gc_pending")),
        gc_metered=_bool(raw.get("gc_metered")),
    )


_ZERO_STEP_STRS: Final = frozenset({"path", "launch_path", "build_error", "last_fallback", "last_error"})


def parse_zero_step(raw: Any) -> ZeroStepState | None:
    if not isinstance(raw, Mapping):
        return None
    values: dict[str, Any] = {}
    for key in ZERO_STEP_READBACK_KEYS:
        value = raw.get(key)
        if key in _ZERO_STEP_STRS:
            values[key] = _str(value)
        elif key == "plain_built":
            values[key] = _bool(value)
        elif key == "state":
            values[key] = parse_zero_step_sizes(value)
        elif key == "host":
            values[key] = parse_zero_step_host(value)
        else:
            values[key] = _int(value)
    return ZeroStepState(**values)
