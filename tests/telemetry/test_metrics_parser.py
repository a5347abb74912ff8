"""MetricsParser: successive pages of one engine, reading again only the families that changed."""

from __future__ import annotations

import re

from agent.telemetry.scrape import MetricsParser, parse_metrics

from .conftest import PAGE_0523

PAGE = PAGE_0523.read_bytes()


def _with_running(page: bytes, running: int) -> bytes:
    """The page with every rank's num_running_reqs set to ``running``."""
    return re.sub(rb"(\nsglang:num_running_reqs\{[^}]*\}) \S+", rb"\1 %d" % running, page)


def test_successive_pages_read_like_single_pages() -> None:
    parser = MetricsParser()
    first = parser.parse(PAGE)
    assert first == parse_metrics(PAGE) and first.gauge_int("running") == 48
    assert parser.parse(PAGE) is first  # nothing changed: the same reading
    busier = _with_running(PAGE, 60)
    second = parser.parse(busier)
    assert second.gauge_int("running") == 60 and second == parse_metrics(busier)
    assert second.counters == first.counters and second.histograms == first.histograms
    assert parser.parse(PAGE).gauge_int("running") == 48


def test_a_family_that_goes_away_is_not_remembered() -> None:
    parser = MetricsParser()
    assert parser.parse(PAGE).gauge("gen_throughput") is not None
    without = re.sub(rb"\n# HELP sglang:gen_throughput .*?(?=\n# HELP )", b"", PAGE, flags=re.S)
    assert b"gen_throughput" not in without
    reading = parser.parse(without)
    assert reading.gauge("gen_throughput") is None and reading == parse_metrics(without)


def test_a_page_without_help_lines_is_read_whole() -> None:
    bare = b"\n".join(line for line in PAGE.splitlines() if not line.startswith(b"#")) + b"\n"
    reading = MetricsParser().parse(bare)
    full = parse_metrics(PAGE)
    assert (reading.gauges, reading.counters, reading.histograms) == (
        full.gauges,
        full.counters,
        full.histograms,
    )
