"""The one reader of SGLang's ``/metrics``: telemetry, ``agent metrics`` and the benchmark all use it.

Rules (each has a test with a page written to show it):

* **Ranks follow SGLang's layout.** Scheduler series carry ``tp_rank``/``pp_rank``/``moe_ep_rank``
  (and ``attn_*`` ranks); with ``--enable-metrics-for-all-schedulers`` every rank of one scheduler
  reports the same batch, so one copy is read (the lowest rank), never the sum. With data-parallel
  attention each DP rank runs its own scheduler and reports its own ``dp_rank`` (and its own
  ``tp_rank``): the copy is chosen inside each DP rank, and DP ranks are combined by the field's
  rule (requests and queues summed). Other labels (``is_streaming``, ``priority``) are added up.
* **Older names are aliases** of today's (``metric_fields``); ``cache_hit_rate`` is a fraction
  whichever unit the server writes (above 1 it can only be a percentage).
* **Nothing raises.** ``+Inf``, ``-Inf``, ``NaN`` and values outside a field's range make that
  field unknown (and are listed in ``problems``); the rest of the page is read.
* **A family the page declares with no series yet** is a counter at 0 (SGLang creates a labelled
  series at its first use): an idle server's 0 tokens is 0, not unknown. **A labelled counter whose
  series is absent while its family has others** is 0 when another family follows it on the page (it
  was printed whole: that label is not used yet) and unknown when the page ends in it
  (``realtime_tokens_total`` cut after its prefill series): a 0 there would read as a restarted
  server and empty the rate windows.
* **A series repeated on one page** is a malformed page: the field is unknown and the repeat listed
  in ``problems``, never added twice.
* **Histograms** keep whether they are complete (``+Inf`` bucket and ``_count``); an incomplete one
  gives no quantile (``agent.sglang.histogram``).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from agent.sglang import metrics as m
from agent.sglang.exposition import (
    Chunk,
    Series,
    chunk_samples,
    declared_names,
    family_texts,
    merge,
    open_family,
    page_samples,
)
from agent.sglang.histogram import Histogram
from agent.sglang.info_view import ServerInfo
from agent.sglang.metric_fields import COUNTERS, FIELDS, GAUGES, HISTOGRAMS, GaugeField


@dataclass(frozen=True)
class MetricsReading:
    """What one read of SGLang gave; a field that is absent is unknown, never zero."""

    source: Literal["metrics", "server_info"]
    prefix: str | None = None
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """Field → the metric name (without prefix) it was read from: an alias shows here."""
    issues: tuple[str | BadValue, ...] = ()
    """What was wrong with the page (read them as ``problems``)."""
    skipped_lines: int = 0

    def gauge(self, name: str) -> float | None:
        return self.gauges.get(name)

    def gauge_int(self, name: str) -> int | None:
        value = self.gauges.get(name)
        return None if value is None or not math.isfinite(value) else int(value)

    def counter(self, name: str) -> float | None:
        return self.counters.get(name)

    @property
    def problems(self) -> tuple[str, ...]:
        """What was wrong with the page: repeated series, non-finite or impossible values, cut histograms."""
        return tuple(str(issue) for issue in self.issues)

    @property
    def is_sglang(self) -> bool:
        """The page has SGLang metrics at all (names start with ``sglang:`` or ``sglang_``)."""
        return self.source == "server_info" or self.prefix is not None

    @property
    def missing(self) -> list[str]:
        """Fields this page did not provide (an older SGLang, metrics not yet emitted, or a bad value)."""
        have = set(self.gauges) | set(self.counters) | set(self.histograms)
        return [n for n in FIELDS if n not in have]


def _rank_order(rank: str) -> tuple[bool, int, str]:
    return (not rank.isdigit(), int(rank) if rank.isdigit() else 0, rank)


def _lowest_ranks(series: Series) -> Series:
    """One copy per scheduler: inside each DP rank, the series of the lowest TP/PP/EP rank."""
    groups: dict[str, Series] = {}
    for item in series:
        groups.setdefault(item[0].get(m.DP_RANK_LABEL, ""), []).append(item)
    keep: Series = []
    for group in groups.values():
        for label in m.RANK_LABELS:
            ranks = {labels[label] for labels, _ in group if label in labels}
            if len(ranks) <= 1:
                continue
            lowest = min(ranks, key=_rank_order)
            group = [(labels, v) for labels, v in group if labels.get(label, lowest) == lowest]
        keep.extend(group)
    return keep


_labels_of = operator.itemgetter(0)


def _repeated(series: Series) -> bool:
    """Two lines with the same labels (label dicts are interned by ``exposition``)."""
    return len(set(map(id, map(_labels_of, series)))) != len(series)


MAX_COUNTER: Final = 1e18
"""A counter above this is not a real reading (SGLang's counters count tokens, requests, passes)."""

_BOUND_TUPLES: dict[tuple[float, ...], tuple[float, ...]] = {}
"""One tuple per set of bucket bounds: readings of one family share it (a window compares by identity)."""
_BOUNDS: dict[str, float | None] = {}
"""``le`` label text → bucket bound (a page repeats the same few dozen texts every tick)."""


def _bound(text: str) -> float | None:
    if text in _BOUNDS:
        return _BOUNDS[text]
    try:
        bound: float | None = float(text)
    except ValueError:
        bound = None
    if len(_BOUNDS) < 4096:
        _BOUNDS[text] = bound
    return bound


class BadValue(NamedTuple):
    """A value a field cannot have (formatted only when someone reads it: a busy page may carry a few
    every tick)."""

    name: str
    labels: Mapping[str, str]
    value: float
    field: str

    def __str__(self) -> str:
        shown = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{shown}}} {self.value}: not a possible value ({self.field} unknown)"


class _Builder:
    """Turns one page's samples into a ``MetricsReading``, collecting what was wrong on the way."""

    def __init__(self, chunk: Chunk, help_names: Iterable[bytes], open_name: bytes | None = None) -> None:
        self.open = declared_names([open_name]) if open_name else frozenset()
        """The family the page ends in (it may have been cut there)."""
        self.by_name = chunk.samples
        self.chunk = chunk
        self.help_names = help_names
        self.ranked = chunk.ranked
        self.problems: list[str | BadValue] = []
        self.sources: dict[str, str] = {}

    @functools.cached_property
    def declared(self) -> frozenset[str]:
        """Families the page declares (HELP lines), with samples or not: asked only for a missing one."""
        return declared_names(self.help_names)

    def series(self, name: str) -> Series | None:
        """The series of ``name`` after rank selection; None (with a problem) when one repeats."""
        found = self.by_name.get(name)
        if found is None or len(found) == 1:
            return found  # one series: nothing repeats, no copy to choose
        if _repeated(found):
            self.problems.append(f"{name}: the same series appears more than once on the page (ignored)")
            return None
        return _lowest_ranks(found) if self.ranked else found

    def gauge(self, logical: str, spec: GaugeField) -> float | None:
        for name in spec.names:
            if name not in self.by_name:
                continue
            self.sources[logical] = name
            series = self.series(name)
            if not series:
                return None
            low, high = spec.low, spec.high
            values = [v for _, v in series]
            for labels, value in series:
                if not low <= value <= high:  # NaN and ±Inf fail too: high is finite
                    self.problems.append(BadValue(name, labels, value, logical))
                    return None
            if len(values) == 1:
                value = values[0]
            elif spec.agg == "sum":
                value = math.fsum(values)
            elif spec.agg == "max":
                value = max(values)
            else:
                value = math.fsum(values) / len(values)
            if spec.percent_or_fraction and value > 1.0:
                value /= 100.0
            return value
        return None

    def counter(self, logical: str) -> float | None:
        spec = COUNTERS[logical]
        name = spec.name
        if name not in self.by_name:
            declared = self.declared
            if name in declared or name.removesuffix("_total") in declared:
                self.sources[logical] = name
                return 0.0  # declared, not used yet
            return None
        self.sources[logical] = name
        series = self.series(name)
        if series is None:
            return None
        where = spec.where
        if where:
            picked = [v for labels, v in series if all(labels.get(k) in ok for k, ok in where.items())]
            if not picked:  # the family has series, not this one's: not used yet, or the page was cut
                return None if name in self.open or name.removesuffix("_total") in self.open else 0.0
        else:
            picked = [v for _, v in series]
        for value in picked:
            if not 0 <= value <= MAX_COUNTER:  # NaN and ±Inf fail too
                self.problems.append(f"{name} = {value}: not a possible counter value ({logical} unknown)")
                return None
        return math.fsum(picked)

    def histogram(self, logical: str, name: str) -> Histogram | None:
        buckets = self.by_name.get(f"{name}_bucket")
        if not buckets:
            if name in self.declared:
                self.sources[logical] = name  # declared, nothing observed yet: no quantiles to give
            return None
        self.sources[logical] = name
        series = self.series(f"{name}_bucket")
        if series is None:
            return None
        totals: dict[float, float] = {}
        known, le_label = _BOUNDS, m.LE_LABEL
        for labels, value in series:
            text = labels.get(le_label, "")
            le = known[text] if text in known else _bound(text)
            if le is not None:
                totals[le] = totals.get(le, 0.0) + value
        ordered = sorted(totals.items())
        previous = 0.0
        for _, c in ordered:
            if not previous <= c < math.inf:  # NaN fails too
                why = (
                    "bucket counts go down as the bound grows"
                    if c < previous
                    else "a bucket count is not a possible value"
                )
                self.problems.append(f"{name}: {why} ({logical} unknown)")
                return None
            previous = c
        if not ordered:
            return None
        count = self._sum(f"{name}_count")
        total = self._sum(f"{name}_sum")
        if len(_BOUND_TUPLES) > 256:
            _BOUND_TUPLES.clear()
        if not math.isinf(ordered[-1][0]):
            self.problems.append(f"{name}: no +Inf bucket (the page was cut?): no {logical} quantiles")
        elif count is None:
            self.problems.append(f"{name}: no {name}_count: no {logical} quantiles")
        bounds, counts = (tuple(column) for column in zip(*ordered, strict=True))
        return Histogram(_BOUND_TUPLES.setdefault(bounds, bounds), counts, count, total)

    def _sum(self, name: str) -> float | None:
        series = self.series(name)
        if not series:
            return None
        values = [v for _, v in series]
        for value in values:
            if not -math.inf < value < math.inf:
                return None
        return math.fsum(values)


def reading_of(
    chunk: Chunk, help_names: Iterable[bytes] = (), open_name: bytes | None = None
) -> MetricsReading:
    """The reading of a page's samples (the rules in the module docstring); ``help_names``: the
    families the page declares with a HELP line (``exposition.family_texts``)."""
    build = _Builder(chunk, help_names, open_name)
    gauges: dict[str, float] = {}
    for logical, spec in GAUGES.items():
        value = build.gauge(logical, spec)
        if value is not None:
            gauges[logical] = value
    counters: dict[str, float] = {}
    for logical in COUNTERS:
        total = build.counter(logical)
        if total is not None:
            counters[logical] = total
    histograms: dict[str, Histogram] = {}
    for logical, names in HISTOGRAMS.items():
        for name in names:
            if f"{name}_bucket" in chunk.samples or name in build.declared:
                hist = build.histogram(logical, name)
                if hist is not None:
                    histograms[logical] = hist
                break
    prefix = chunk.prefix
    if prefix is None and build.declared:  # declared families only (an idle server): still SGLang's
        prefix = next(iter(help_names))[:7].decode("utf-8", "replace")
    return MetricsReading(
        source="metrics",
        prefix=prefix,
        gauges=gauges,
        counters=counters,
        histograms=histograms,
        sources=build.sources,
        issues=tuple(build.problems),
        skipped_lines=chunk.skipped,
    )


def read_page(page: str | bytes) -> MetricsReading:
    """Everything the agent reads from one ``/metrics`` page; the body as it came (bytes) is cheapest."""
    data = page.encode() if isinstance(page, str) else page
    chunk, names = page_samples(data)
    return reading_of(chunk, names, open_family(family_texts(data), data))


class MetricsParser:
    """``read_page`` for one engine's successive pages: a family whose text is the same as on the
    last page is not scanned again, and a page whose families all are gives the last reading.

    On an idle server most families stand still between ticks; on a busy one the counters, KV
    gauges and latency histograms move and are read again, the configuration gauges are not.
    """

    def __init__(self) -> None:
        self._last: dict[bytes, tuple[bytes, Chunk]] = {}
        self._reading: MetricsReading | None = None

    def parse(self, page: bytes) -> MetricsReading:
        texts = family_texts(page)
        chunks: list[Chunk] = []
        seen: dict[bytes, tuple[bytes, Chunk]] = {}
        changed = len(texts) != len(self._last) or self._reading is None
        for name, text in texts:
            last = self._last.get(name)
            if last is not None and last[0] == text and name not in seen:
                chunk = last[1]
            else:
                chunk = chunk_samples(text)
                changed = True
            chunks.append(chunk)
            seen[name] = (text, chunk)
        self._last = seen
        if not changed and self._reading is not None:
            return self._reading
        self._reading = reading_of(merge(chunks), [n for n, _ in texts if n], open_family(texts, page))
        return self._reading


def reading_from_server_info(info: ServerInfo) -> MetricsReading:
    """The part of a reading that ``/server_info`` can give when ``/metrics`` is off.

    It has no running/queued counts, no counters and no histograms; ``avg_spec_accept_length`` is
    a lifetime average, not a window (reference §4.3): the field carries it only for want of better,
    and ``sources`` says so.
    """
    gauges: dict[str, float] = {}
    sources: dict[str, str] = {}

    def put(name: str, value: float | None, source: str) -> None:
        if value is not None:
            gauges[name] = value
            sources[name] = source

    throughputs = [s.last_gen_throughput for s in info.states if s.last_gen_throughput is not None]
    put("gen_throughput", math.fsum(throughputs) if throughputs else None, "server_info:last_gen_throughput")
    state = info.state0
    put("spec_accept_length", state.avg_spec_accept_length, "server_info:avg_spec_accept_length (lifetime)")
    steps = (
        state.speculative_num_steps if state.speculative_num_steps is not None else info.speculative_num_steps
    )
    put("spec_num_steps", None if steps is None else float(steps), "server_info:speculative_num_steps")
    draft = state.speculative_num_draft_tokens
    if draft is None:
        draft = info.speculative_num_draft_tokens
    put(
        "spec_num_draft_tokens",
        None if draft is None else float(draft),
        "server_info:speculative_num_draft_tokens",
    )
    pool = info.pool_tokens
    put("max_total_num_tokens", None if pool is None else float(pool), "server_info:max_total_num_tokens")
    put("page_size", None if info.page_size is None else float(info.page_size), "server_info:page_size")
    return MetricsReading(source="server_info", gauges=gauges, sources=sources)
