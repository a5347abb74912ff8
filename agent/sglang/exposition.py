"""Scanning a Prometheus text page for the samples the agent reads, fast, and never raising.

A 0.5.23 page has ~1,100 lines in ~160 families; the agent reads ~100 lines of ~30 families (the
names in ``metric_fields.SAMPLE_NAMES``). prometheus_client writes each family as ``# HELP name``,
``# TYPE name`` and then its samples, so a page is cut at its HELP lines and the families we do not
read are skipped without looking at their lines (a page without HELP lines is read whole). Inside a
family each line is split at its last space; a ``<name>{<labels>}`` head seen on an earlier page
costs a dictionary lookup and a ``float``, any other goes through one regex (and prometheus_client's
own parser when its shape is unusual). What the values mean is decided by ``agent.sglang.reading``.

Label dicts are interned: two series with the same labels share one dict object, so a series that
a page repeats is found by identity (``reading`` reports it instead of adding it twice).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final, NamedTuple, cast

from prometheus_client.parser import text_string_to_metric_families

from agent.sglang import metrics as m
from agent.sglang.metric_fields import SAMPLE_NAMES

Series = list[tuple[dict[str, str], float]]
"""One sample name's series: (labels, value) per line, in page order."""


class Chunk(NamedTuple):
    """What one stretch of a page gave (a named tuple: one is made per family per page)."""

    samples: dict[str, Series]
    """By sample name without prefix."""
    prefix: str | None
    skipped: int
    """Lines of a family we read that could not be parsed."""
    ranked: bool
    """Some series names a scheduler rank other than 0: copies of one batch must be told apart."""


_chunk: Final = cast(Callable[[type[Chunk], tuple[Any, ...]], Chunk], tuple.__new__)
"""``Chunk(...)`` without the named tuple's Python-level ``__new__`` (one is made per family per tick)."""


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


# One regex finds a line of a family we read and splits the common shape (plain label values, a
# value, maybe a timestamp) into (prefix, name, labels, value) in C; any other shape of a wanted
# line comes back whole in the last group, for prometheus_client's parser.
_WANTED_LINE = re.compile(
    r"\n(sglang[:_])(" + _trie_pattern(SAMPLE_NAMES) + r")"
    r"(?:(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"\\\n]*\",?)*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?[ \t]*(?=\n|\Z)"
    r"|(?=[{ \t])([^\n]*))"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
_HELP: Final = b"\n# HELP "
# The HELP line of a family whose name can begin a sample we read (``x`` for ``x_bucket``).
_WANTED_HELP = re.compile(
    rb"\n# HELP (sglang[:_]"
    + _trie_pattern({name[:i] for name in SAMPLE_NAMES for i in range(1, len(name) + 1)}).encode()
    + rb")[ \t\n]"
)


def parse_sample_line(line: str) -> list[tuple[str, dict[str, str], float]]:
    """One exposition line through prometheus_client's parser (the reference; used for odd lines)."""
    return [
        (s.name, s.labels, s.value) for f in text_string_to_metric_families(line + "\n") for s in f.samples
    ]


_interned: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], bool]] = {}
_label_cache: dict[str, tuple[dict[str, str], bool]] = {}
"""Label strings repeat from tick to tick: their parsed dicts (shared, never mutated), and whether
they name a rank other than 0 (so that a page from one stats-logging rank skips rank filtering)."""
_NO_LABELS: Final[tuple[dict[str, str], bool]] = ({}, False)


def intern_labels(labels: dict[str, str]) -> tuple[dict[str, str], bool]:
    """The one shared dict for this label set, and whether it names a rank other than 0."""
    key = tuple(sorted(labels.items()))
    entry = _interned.get(key)
    if entry is None:
        if len(_interned) > 16_384:
            _interned.clear()
            _label_cache.clear()
        ranked = any(labels.get(r, "0") != "0" for r in m.RANK_LABELS)
        entry = _interned[key] = (labels, ranked)
    return entry


def _labels(text: str) -> tuple[dict[str, str], bool]:
    entry = _label_cache.get(text)
    if entry is None:
        entry = _label_cache[text] = intern_labels(dict(_LABEL.findall(text)))
    return entry


_Head = tuple[str, str, dict[str, str], bool]
"""A sample line's name and labels read once: prefix, name without it, labels, names a rank > 0."""
_SKIP: Final[_Head] = ("", "", {}, False)
_heads: dict[bytes, _Head] = {}


def _remember(head: bytes, entry: _Head) -> None:
    if len(_heads) > 16_384:
        _heads.clear()
    _heads[head] = entry


def family_texts(page: bytes) -> list[tuple[bytes, bytes]]:
    """``(HELP name, text)`` of each family we read, and ``(b"", text)`` for what comes before the
    first HELP line; each text with a newline in front, for the line regex."""
    data = b"\n" + page
    first = data.find(_HELP)
    if first < 0:
        return [(b"", data)]
    texts = [(b"", data[:first])]
    for match in _WANTED_HELP.finditer(data, first):
        end = data.find(_HELP, match.end() - 1)
        texts.append((match.group(1), data[match.start() : end if end >= 0 else len(data)]))
    return texts


def open_family(texts: list[tuple[bytes, bytes]], page: bytes) -> bytes | None:
    """The HELP name of the family we read whose text runs to the end of the page (``family_texts``
    slices the page; no HELP line follows it): on a page that was cut, the family the cut went
    through. None when another family follows the last one we read."""
    name, text = texts[-1]
    return name if name and (b"\n" + page).endswith(text) else None


def declared_names(declared: Iterable[bytes]) -> frozenset[str]:
    """Family names without prefix, from the HELP names ``family_texts`` found (samples or not)."""
    names = (d.decode("utf-8", "replace") for d in declared)
    return frozenset(n[len(p) :] for n in names for p in m.PREFIXES if n.startswith(p))


def chunk_samples(text: bytes) -> Chunk:
    """The samples of one stretch of a page (see the module docstring for how lines are read)."""
    by_name: dict[str, Series] = {}
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
            for prefix, base, labels, nonzero, number in found:
                prefix_seen = prefix_seen or prefix
                ranked = ranked or nonzero
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
    return _chunk(Chunk, (by_name, prefix_seen, skipped, ranked))


def _slow_line(line: bytes, head: bytes) -> tuple[list[tuple[str, str, dict[str, str], bool, float]], int]:
    """A line not seen before: the regex decides whether we read it and splits it (remembering its
    head when the line has the common shape); an unusual shape goes to prometheus_client."""
    found: list[tuple[str, str, dict[str, str], bool, float]] = []
    skipped = 0
    text = line.decode("utf-8", "replace")
    matches = _WANTED_LINE.findall("\n" + text)
    if not matches:
        _remember(head, _SKIP)
    head_text = head.decode("utf-8", "replace")
    for prefix, base, labels_text, value, odd in matches:
        if not odd:
            try:
                number = float(value)
            except ValueError:
                skipped += 1
                continue
            labels, nonzero = _labels(labels_text) if labels_text else _NO_LABELS
            if f"{prefix}{base}{{{labels_text}}}" == head_text or (
                not labels_text and prefix + base == head_text
            ):
                _remember(head, (prefix, base, labels, nonzero))
            found.append((prefix, base, labels, nonzero, number))
            continue
        try:
            for name, parsed, number in parse_sample_line(prefix + base + odd):
                shared, nonzero = intern_labels(parsed) if parsed else _NO_LABELS
                found.append((prefix, name[len(prefix) :], shared, nonzero, number))
        except Exception:  # whatever the library makes of a broken line, it is one skipped line
            skipped += 1
    return found, skipped


def merge(chunks: Iterable[Chunk]) -> Chunk:
    by_name: dict[str, Series] = {}
    prefix_seen: str | None = None
    skipped = 0
    ranked = False
    for part in chunks:
        for name, series in part.samples.items():
            have = by_name.get(name)
            by_name[name] = series if have is None else have + series  # never extend a cached list
        prefix_seen = prefix_seen or part.prefix
        skipped += part.skipped
        ranked = ranked or part.ranked
    return _chunk(Chunk, (by_name, prefix_seen, skipped, ranked))


def page_samples(page: str | bytes) -> tuple[Chunk, list[bytes]]:
    """Samples of the families we read, from a whole page, and the HELP names of those families."""
    data = page.encode() if isinstance(page, str) else page
    texts = family_texts(data)
    return merge(chunk_samples(text) for _, text in texts), [name for name, _ in texts if name]
