"""Reading SGLang: its Prometheus ``/metrics`` page, and ``/server_info`` when metrics are off.

A page is parsed with prometheus_client's own text parser, after dropping every line of a family we
do not read (a full 0.5.23 page is hundreds of lines, mostly histograms we ignore; parsing only
what we use keeps a tick cheap). Names are accepted with either prefix, ``sglang:`` (the scheduler
and tokenizer collectors) or ``sglang_`` (``/v1/loads?format=prometheus`` and exporters that
rewrite colons). Scheduler series carry ``tp_rank``/``pp_rank``/... labels; with
``--enable-metrics-for-all-schedulers`` every rank reports the same batch, so only the lowest rank
is read, and data-parallel ranks (``dp_rank``) are added up. A page from an older SGLang that lacks
a family leaves that field None; nothing here raises on a strange page.

``/server_info`` returns every server argument, including ``api_key``, ``admin_api_key`` and the raw
launch command (reference §4.1): ``redact_server_info`` runs before anything is stored or sent.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from prometheus_client.parser import text_string_to_metric_families

from agent.sglang import metrics as m
from agent.sglang import server_info as si

PREFIXES: Final = m.PREFIXES

RANK_LABELS: Final = (m.TP_RANK_LABEL, m.PP_RANK_LABEL, "moe_ep_rank", "attn_tp_rank", "attn_cp_rank")
"""Scheduler labels of ranks that all report the same batch: read only the lowest."""

REALTIME_TOKENS_TOTAL: Final = "realtime_tokens_total"
"""0.5.23's per-step token counter (``mode`` = decode / prefill_compute / prefill_cache), reference §5.2;
not in ``agent.sglang.metrics`` yet. A contract test finds it in the wheel."""
LOADS_NUM_WAITING_REQS: Final = "num_waiting_reqs"
"""``/v1/loads?format=prometheus`` (``sglang_`` prefix) calls the queue this (load_snapshot.py)."""
OLD_TIME_PER_OUTPUT_TOKEN: Final = "time_per_output_token_seconds"
"""What older SGLang releases called the inter-token latency histogram (not exported by 0.5.23)."""

Agg = Literal["sum", "max", "mean"]

# Logical gauge → (names without prefix, newest first; how data-parallel ranks combine).
GAUGES: Final[dict[str, tuple[tuple[str, ...], Agg]]] = {
    "gen_throughput": ((m.GEN_THROUGHPUT,), "sum"),
    "running": ((m.NUM_RUNNING_REQS,), "sum"),
    "queued": ((m.NUM_QUEUE_REQS, LOADS_NUM_WAITING_REQS), "sum"),
    "token_usage": ((m.TOKEN_USAGE,), "max"),
    "num_used_tokens": ((m.NUM_USED_TOKENS,), "sum"),
    "kv_used_tokens": ((m.KV_USED_TOKENS,), "sum"),
    "kv_available_tokens": ((m.KV_AVAILABLE_TOKENS,), "sum"),
    "kv_evictable_tokens": ((m.KV_EVICTABLE_TOKENS,), "sum"),
    "max_total_num_tokens": ((m.MAX_TOTAL_NUM_TOKENS,), "sum"),
    "page_size": ((m.PAGE_SIZE,), "max"),
    "context_len": ((m.CONTEXT_LEN,), "max"),
    "cache_hit_rate": ((m.CACHE_HIT_RATE,), "mean"),
    "spec_accept_length": ((m.SPEC_ACCEPT_LENGTH,), "mean"),
    "spec_accept_rate": ((m.SPEC_ACCEPT_RATE,), "mean"),
    "spec_num_steps": ((m.SPEC_NUM_STEPS,), "max"),
    "spec_num_draft_tokens": ((m.SPEC_NUM_DRAFT_TOKENS,), "max"),
    "retracted_reqs": ((m.NUM_RETRACTED_REQS,), "sum"),
    "is_cuda_graph": ((m.IS_CUDA_GRAPH,), "max"),
}

# Logical counter → (sample name without prefix, label filter).
COUNTERS: Final[dict[str, tuple[str, Mapping[str, frozenset[str]]]]] = {
    "generation_tokens": (m.GENERATION_TOKENS_TOTAL, {}),
    "prompt_tokens": (m.PROMPT_TOKENS_TOTAL, {}),
    "decode_tokens": (REALTIME_TOKENS_TOTAL, {"mode": frozenset({"decode"})}),
    "prefill_tokens": (REALTIME_TOKENS_TOTAL, {"mode": frozenset({"prefill_compute", "prefill_cache"})}),
    "requests": (m.NUM_REQUESTS_TOTAL, {}),
    "aborted_requests": (m.NUM_ABORTED_REQUESTS_TOTAL, {}),
    "retracted_requests": (m.NUM_RETRACTED_REQUESTS_TOTAL, {}),
    "spec_verify_calls": (m.SPEC_VERIFY_CALLS_TOTAL, {}),
    "decode_passes_no_graph": (m.CUDA_GRAPH_PASSES_TOTAL, {"mode": frozenset({"decode_none"})}),
    "decode_passes_graph": (m.CUDA_GRAPH_PASSES_TOTAL, {"mode": frozenset({"decode_cuda_graph"})}),
}

# Logical histogram → names without prefix, newest first.
HISTOGRAMS: Final[dict[str, tuple[str, ...]]] = {
    "ttft": (m.TIME_TO_FIRST_TOKEN_SECONDS,),
    "itl": (m.INTER_TOKEN_LATENCY_SECONDS, OLD_TIME_PER_OUTPUT_TOKEN),
    "e2e": (m.E2E_REQUEST_LATENCY_SECONDS,),
}


def _wanted_names() -> frozenset[str]:
    names: set[str] = set()
    for gauge_names, _ in GAUGES.values():
        names.update(gauge_names)
    for sample, _ in COUNTERS.values():
        names.add(sample)
    for hist_names in HISTOGRAMS.values():
        for name in hist_names:
            names.update({f"{name}_bucket", f"{name}_count", f"{name}_sum"})
    return frozenset(names)


WANTED: Final = _wanted_names()

_FAMILY_OF: Final = {
    f"{name}{suffix}": name
    for names in HISTOGRAMS.values()
    for name in names
    for suffix in ("_bucket", "_count", "_sum")
}
"""A histogram's sample names → its family name."""


@dataclass(frozen=True)
class Histogram:
    """Cumulative bucket counts (upper bound → count), all label sets added together."""

    buckets: tuple[tuple[float, float], ...]
    count: float
    total: float

    def minus(self, older: Histogram) -> Histogram | None:
        """Observations made since ``older``; None if the server restarted (a count went down)."""
        if [le for le, _ in self.buckets] != [le for le, _ in older.buckets]:
            return None
        diff = tuple((le, a - b) for (le, a), (_, b) in zip(self.buckets, older.buckets, strict=True))
        if any(c < 0 for _, c in diff) or self.count < older.count:
            return None
        return Histogram(diff, self.count - older.count, self.total - older.total)

    def quantile(self, q: float) -> float | None:
        """Prometheus' ``histogram_quantile``: linear inside the bucket; None without observations."""
        if not self.buckets:
            return None
        observed = self.buckets[-1][1]
        if observed <= 0:
            return None
        rank = q * observed
        lower_bound, lower_count = 0.0, 0.0
        for upper, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(upper):
                    return lower_bound
                in_bucket = cumulative - lower_count
                if in_bucket <= 0:
                    return upper
                return lower_bound + (upper - lower_bound) * (rank - lower_count) / in_bucket
            lower_bound, lower_count = upper, cumulative
        return lower_bound


@dataclass(frozen=True)
class MetricsReading:
    """What one read of SGLang gave; None means "not on this page", never zero."""

    source: Literal["metrics", "server_info"]
    prefix: str | None = None
    families: frozenset[str] = frozenset()
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)
    skipped_lines: int = 0

    def gauge(self, name: str) -> float | None:
        return self.gauges.get(name)

    def gauge_int(self, name: str) -> int | None:
        value = self.gauges.get(name)
        return None if value is None or math.isnan(value) else int(value)

    def counter(self, name: str) -> float | None:
        return self.counters.get(name)

    @property
    def missing(self) -> list[str]:
        """Logical fields this page did not provide (an older SGLang, or metrics not yet emitted)."""
        have = set(self.gauges) | set(self.counters) | set(self.histograms)
        return [n for n in (*GAUGES, *COUNTERS, *HISTOGRAMS) if n not in have]


def _split_prefix(name: str) -> tuple[str | None, str]:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return prefix, name[len(prefix) :]
    return None, name


_Sample = tuple[str, dict[str, str], float]
_Series = list[tuple[dict[str, str], float]]


def _trie_pattern(words: Iterable[str]) -> str:
    """A regex alternation shaped as a trie (``a(?:b|c)``), so the engine never retries a shared prefix."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def render(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + render(child) for char, child in sorted(node.items()) if char]
        optional = "" in node
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and not optional else "(?:" + "|".join(branches) + ")"
        if optional:
            body = (body if body.startswith("(?:") else "(?:" + body + ")") + "?"
        return body

    return render(trie)


# One regex finds every line of a family we read and splits the common shape (the one
# prometheus_client's exposition writes: plain label values, a value, maybe a timestamp) into
# (prefix, name, labels, value) in C; any other shape of a wanted line comes back whole in the last
# group, for prometheus_client's own parser. The pattern starts with a literal ("\nsglang") so that
# the engine scans for it at C speed; the page is searched with a newline in front so that its
# first line is found too. The hundreds of lines we skip never reach Python code.
_NAMES = _trie_pattern(WANTED)
_WANTED_LINE = re.compile(
    r"\n(sglang[:_])(" + _NAMES + r")"
    r"(?:(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"\\\n]*\",?)*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?[ \t]*(?=\n|\Z)"
    r"|(?=[{ \t])([^\n]*))"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')


def parse_sample_line(line: str) -> list[_Sample]:
    """One exposition line through prometheus_client's parser (the reference; used for odd lines)."""
    return [
        (s.name, s.labels, s.value) for f in text_string_to_metric_families(line + "\n") for s in f.samples
    ]


_label_cache: dict[str, tuple[dict[str, str], bool]] = {}
"""Label strings repeat from tick to tick: their parsed dicts (shared, never mutated), and whether
they name a rank other than 0 (so that a page from a single stats-logging rank skips rank filtering)."""
_NO_LABELS: Final[tuple[dict[str, str], bool]] = ({}, False)


def _labels(text: str) -> tuple[dict[str, str], bool]:
    entry = _label_cache.get(text)
    if entry is None:
        if len(_label_cache) > 8192:
            _label_cache.clear()
        labels = dict(_LABEL.findall(text))
        entry = _label_cache[text] = (labels, any(labels.get(r, "0") != "0" for r in RANK_LABELS))
    return entry


_HELP: Final = b"\n# HELP "
# The HELP line of a family whose name can begin a sample we read (the name is a prefix of one:
# ``x`` for ``x_bucket``, ``x_total`` for itself); the trie regex skips the other families' HELP
# lines in C, and never looks at their samples.
_WANTED_HELP = re.compile(
    rb"\n# HELP (sglang[:_]"
    + _trie_pattern({name[:i] for name in WANTED for i in range(1, len(name) + 1)}).encode()
    + rb")[ \t\n]"
)


_Chunk = tuple[dict[str, _Series], str | None, int, bool]
"""What one stretch of a page gave: samples by name without prefix, the prefix seen, lines skipped,
whether a series names a rank other than 0."""


def _family_texts(page: bytes) -> list[tuple[bytes, bytes]]:
    """``(HELP name, text)`` of each family we read, and ``(b"", text)`` for what comes before the
    first HELP line; each text with a newline in front, for the line regex.

    A 0.5.23 page has 1,100 lines in 160 families; we read ~100 lines of ~30. prometheus_client
    writes each family as ``# HELP name``, ``# TYPE name`` and then its samples, so a family runs
    from its HELP line to the next one, and the families we do not read are skipped without
    looking at their lines. A page without HELP lines is read whole.
    """
    data = b"\n" + page
    first = data.find(_HELP)
    if first < 0:
        return [(b"", data)]
    texts = [(b"", data[:first])]
    for match in _WANTED_HELP.finditer(data, first):
        end = data.find(_HELP, match.end() - 1)
        texts.append((match.group(1), data[match.start() : end if end >= 0 else len(data)]))
    return texts


_Head = tuple[str, str, dict[str, str], bool]
"""A sample line's name and labels read once: prefix, name without it, labels, names a rank > 0."""
_SKIP: Final[_Head] = ("", "", {}, False)
_heads: dict[bytes, _Head] = {}
"""Sample lines are ``<name>{<labels>} <value>``, and from one page to the next only the value
changes: what each ``<name>{<labels>}`` means is read once (by the regex) and then looked up."""


def _chunk_samples(text: bytes) -> _Chunk:
    """The samples of one stretch of a page. Each line is split at its last space; a line whose
    head was seen before costs a dictionary lookup and a ``float``, any other goes through the line
    regex (and prometheus_client's own parser when its shape is unusual)."""
    by_name: dict[str, _Series] = {}
    prefix_seen: str | None = None
    skipped = 0
    ranked = False
    for line in text.split(b"\n"):
        if not line or line[0] == 35:  # b"#": HELP, TYPE and comments
            continue
        head, _, value = line.rpartition(b" ")
        known = _heads.get(head)
        if known is not None:
            if known is _SKIP:
                continue
            try:
                number = float(value)
            except ValueError:
                known = None
        if known is None:
            found, line_skipped = _slow_line(line, head)
            skipped += line_skipped
            for prefix, base, labels, number in found:
                prefix_seen = prefix_seen or prefix
                ranked = ranked or any(labels.get(r, "0") != "0" for r in RANK_LABELS)
                by_name.setdefault(base, []).append((labels, number))
            continue
        prefix, base, labels, nonzero = known
        if prefix_seen is None:
            prefix_seen = prefix
        ranked = ranked or nonzero
        series = by_name.get(base)
        if series is None:
            series = by_name[base] = []
        series.append((labels, number))
    return by_name, prefix_seen, skipped, ranked


def _slow_line(line: bytes, head: bytes) -> tuple[list[tuple[str, str, dict[str, str], float]], int]:
    """A line not seen before: the regex decides whether we read it and splits it (remembering its
    head when the line has the common shape); an unusual shape goes to prometheus_client."""
    found: list[tuple[str, str, dict[str, str], float]] = []
    skipped = 0
    text = line.decode("utf-8", "replace")
    matches = _WANTED_LINE.findall("\n" + text)
    if not matches:
        _remember(head, _SKIP)
    for prefix, base, labels_text, value, odd in matches:
        if not odd:
            try:
                number = float(value)
            except ValueError:
                skipped += 1
                continue
            labels, nonzero = _labels(labels_text) if labels_text else _NO_LABELS
            if f"{prefix}{base}{{{labels_text}}}" == head.decode("utf-8", "replace") or (
                not labels_text and prefix + base == head.decode("utf-8", "replace")
            ):
                _remember(head, (prefix, base, labels, nonzero))
            found.append((prefix, base, labels, number))
            continue
        try:
            for name, parsed, number in parse_sample_line(prefix + base + odd):
                found.append((prefix, _split_prefix(name)[1], parsed, number))
        except Exception:
            skipped += 1
    return found, skipped


def _remember(head: bytes, entry: _Head) -> None:
    if len(_heads) > 16_384:
        _heads.clear()
    _heads[head] = entry


def _merge(chunks: Iterable[_Chunk]) -> _Chunk:
    by_name: dict[str, _Series] = {}
    prefix_seen: str | None = None
    skipped = 0
    ranked = False
    for part, prefix, part_skipped, part_ranked in chunks:
        for name, series in part.items():
            have = by_name.get(name)
            by_name[name] = series if have is None else have + series  # never extend a cached list
        prefix_seen = prefix_seen or prefix
        skipped += part_skipped
        ranked = ranked or part_ranked
    return by_name, prefix_seen, skipped, ranked


def _samples(page: str | bytes) -> _Chunk:
    """Samples of the families we read (see ``_Chunk``), from a whole page."""
    data = page.encode() if isinstance(page, str) else page
    return _merge(_chunk_samples(text) for _, text in _family_texts(data))


class MetricsParser:
    """``parse_metrics`` for one engine's successive pages: a family whose text is the same as on
    the last page is not read again, and a page whose families all are gives the last reading.

    On an idle server most families stand still between ticks; on a busy one the counters, KV
    gauges and latency histograms move and are read again, the configuration gauges are not.
    """

    def __init__(self) -> None:
        self._last: dict[bytes, tuple[bytes, _Chunk]] = {}
        self._reading: MetricsReading | None = None

    def parse(self, page: bytes) -> MetricsReading:
        texts = _family_texts(page)
        chunks: list[_Chunk] = []
        seen: dict[bytes, tuple[bytes, _Chunk]] = {}
        changed = len(texts) != len(self._last) or self._reading is None
        for name, text in texts:
            last = self._last.get(name)
            if last is not None and last[0] == text and name not in seen:
                chunk = last[1]
            else:
                chunk = _chunk_samples(text)
                changed = True
            chunks.append(chunk)
            seen[name] = (text, chunk)
        self._last = seen
        if not changed and self._reading is not None:
            return self._reading
        self._reading = _reading(_merge(chunks))
        return self._reading


def _rank_order(rank: str) -> tuple[bool, int, str]:
    return (not rank.isdigit(), int(rank) if rank.isdigit() else 0, rank)


def _lowest_ranks(series: _Series) -> _Series:
    keep = series
    for label in RANK_LABELS:
        ranks = {labels[label] for labels, _ in keep if label in labels}
        if not ranks or (len(ranks) == 1 and "0" in ranks):
            continue
        lowest = "0" if "0" in ranks else min(ranks, key=_rank_order)
        keep = [(labels, v) for labels, v in keep if labels.get(label, lowest) == lowest]
    return keep


def _aggregate(values: list[float], agg: Agg) -> float | None:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return None
    if agg == "sum":
        return math.fsum(values)
    if agg == "max":
        return max(values)
    return math.fsum(values) / len(values)


def parse_metrics(page: str | bytes) -> MetricsReading:
    """Everything we read from one ``/metrics`` page (see the module docstring for the rules); the
    body as it came (bytes) is cheapest. ``MetricsParser`` does the same for successive pages."""
    return _reading(_samples(page))


def _reading(samples: _Chunk) -> MetricsReading:
    by_name, prefix_seen, skipped, ranked = samples
    ranks = _lowest_ranks if ranked else _all

    gauges: dict[str, float] = {}
    for logical, (names, agg) in GAUGES.items():
        for name in names:
            if name in by_name:
                value = _aggregate([v for _, v in ranks(by_name[name])], agg)
                if value is not None:
                    gauges[logical] = value
                break

    counters: dict[str, float] = {}
    for logical, (name, where) in COUNTERS.items():
        if name not in by_name:
            continue
        picked = [
            v
            for labels, v in ranks(by_name[name])
            if all(labels.get(k) in allowed for k, allowed in where.items())
        ]
        if picked:
            counters[logical] = math.fsum(picked)

    histograms: dict[str, Histogram] = {}
    for logical, names in HISTOGRAMS.items():
        for name in names:
            hist = _histogram(by_name, name, ranks)
            if hist is not None:
                histograms[logical] = hist
                break

    families = frozenset(_FAMILY_OF.get(name, name) for name in by_name)
    return MetricsReading(
        source="metrics",
        prefix=prefix_seen,
        families=families,
        gauges=gauges,
        counters=counters,
        histograms=histograms,
        skipped_lines=skipped,
    )


def _le(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _all(series: _Series) -> _Series:
    return series


def _histogram(
    by_name: Mapping[str, _Series], name: str, ranks: Callable[[_Series], _Series]
) -> Histogram | None:
    buckets = by_name.get(f"{name}_bucket")
    if not buckets:
        return None
    totals: dict[float, float] = {}
    for labels, value in ranks(buckets):
        le = _le(labels.get("le", ""))
        if le is not None:
            totals[le] = totals.get(le, 0.0) + value
    if not totals:
        return None
    count = math.fsum(v for _, v in ranks(by_name.get(f"{name}_count", [])))
    total = math.fsum(v for _, v in ranks(by_name.get(f"{name}_sum", [])))
    ordered = tuple(sorted(totals.items()))
    return Histogram(ordered, count or ordered[-1][1], total)


# -- /server_info ------------------------------------------------------------------------------

LAUNCH_COMMAND: Final = si.LAUNCH_COMMAND
REDACTED: Final = "<redacted>"
_SECRET_WORDS: Final = frozenset(
    {"key", "token", "secret", "password", "passwd", "credential", "credentials", "auth"}
)
_SECRET_IN_TEXT = re.compile(
    r"(--?(?:admin-)?api[-_]key[= ]|--?[\w-]*(?:token|secret|password)[\w-]*[= ])(\S+)", re.IGNORECASE
)


@functools.lru_cache(maxsize=4096)
def _is_secret_key(key: str) -> bool:
    """``api_key``, ``admin_api_key``, ``hf_token``, ``HF_TOKEN``, ``ssl_keyfile_password``: yes.
    ``max_total_num_tokens``, ``tokenizer_path``: no (a word of the key must be a secret word)."""
    words = re.split(r"[_\-.\s]+", key.lower())
    return key in si.SECRET_FIELDS or any(w in _SECRET_WORDS for w in words) or key.lower().endswith("apikey")


@functools.lru_cache(maxsize=4096)
def _scrub_flags(text: str) -> str:
    """``--api-key VALUE``-shaped pairs redacted (cached: /server_info repeats its strings, read
    every few ticks)."""
    return _SECRET_IN_TEXT.sub(lambda m: m.group(1) + REDACTED, text)


def _scrub_text(text: str, secrets: Iterable[str]) -> str:
    text = (
        _scrub_flags(text) if len(text) < 4096 else _SECRET_IN_TEXT.sub(lambda m: m.group(1) + REDACTED, text)
    )
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def redact_server_info(info: Mapping[str, Any], secrets: Iterable[str] = ()) -> dict[str, Any]:
    """A copy of ``/server_info`` with every credential replaced by ``<redacted>``.

    Keys whose name has a secret word (key, token, secret, password, auth...) lose their value unless
    it is empty; ``launch_command`` is dropped to its redacted form; any string that still contains a
    known secret (``secrets``, e.g. the API key the agent itself sent) or an ``--api-key VALUE`` pair
    is scrubbed too.
    """
    known = [s for s in secrets if s]

    def clean(value: Any, key: str | None) -> Any:
        if key is not None and _is_secret_key(key):
            if value in (None, "", [], {}, False):
                return value
            if key == LAUNCH_COMMAND and isinstance(value, str):
                return _scrub_text(value, known)
            return REDACTED
        kind = type(value)
        if kind is str:
            return _scrub_text(value, known)
        if kind is int or kind is float or kind is bool or value is None:  # most of the answer
            return value
        if isinstance(value, Mapping):
            return {str(k): clean(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v, None) for v in value]
        if isinstance(value, str):
            return _scrub_text(value, known)
        return value

    return {str(k): clean(v, str(k)) for k, v in info.items()}


def internal_state(info: Mapping[str, Any]) -> dict[str, Any]:
    """``internal_states[0]`` (TP rank 0 of DP rank 0), or an empty dict."""
    states = info.get(si.INTERNAL_STATES)
    if isinstance(states, list) and states and isinstance(states[0], Mapping):
        return dict(states[0])
    return {}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def reading_from_server_info(info: Mapping[str, Any]) -> MetricsReading:
    """The part of a ``MetricsReading`` that ``/server_info`` can give when ``/metrics`` is off.

    It has no running/queued counts and no counters; ``avg_spec_accept_length`` is lifetime, not a
    window (reference §4.3), so it stands in for the accept length only for want of better.
    """
    states = [s for s in info.get(si.INTERNAL_STATES) or [] if isinstance(s, Mapping)]
    gauges: dict[str, float] = {}

    def put(name: str, value: float | None) -> None:
        if value is not None:
            gauges[name] = value

    throughputs = [_num(s.get(si.LAST_GEN_THROUGHPUT)) for s in states]
    put("gen_throughput", math.fsum(t for t in throughputs if t is not None) if any(throughputs) else None)
    first = states[0] if states else {}
    put("spec_accept_length", _num(first.get(si.AVG_SPEC_ACCEPT_LENGTH)))
    put("spec_num_steps", _num(first.get("speculative_num_steps", info.get("speculative_num_steps"))))
    put(
        "spec_num_draft_tokens",
        _num(first.get("speculative_num_draft_tokens", info.get("speculative_num_draft_tokens"))),
    )
    memory = first.get(si.MEMORY_USAGE)
    capacity = _num(info.get(si.MAX_TOTAL_NUM_TOKENS))
    if capacity is None and isinstance(memory, Mapping):
        capacity = _num(memory.get("token_capacity"))
    put("max_total_num_tokens", capacity)
    put("page_size", _num(info.get("page_size")))
    return MetricsReading(source="server_info", families=frozenset(), gauges=gauges)
