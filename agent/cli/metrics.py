"""``agent metrics FILE|URL [--json]``: what the agent reads from a saved or live /metrics page.

For an operator checking a page pasted into a ticket, or a server of another SGLang version: every
Snapshot field the page feeds, with the metric it came from (older names and fallbacks named as
such), the fields the page cannot give, and what was wrong with it. The page is read by the same
reader as the agent's telemetry and the benchmark (``agent.sglang.reading``). Exit status: 0 for an
SGLang page, 1 for an empty or non-SGLang page (in ``--json`` mode too), 2 when it cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from agent.sglang import paths
from agent.sglang.reading import read_page
from agent.telemetry.page_view import page_fields, page_summary

MAX_PAGE_BYTES = 64 * 1024 * 1024


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "metrics",
        help=f"show what the agent reads from a {paths.METRICS} page (file, '-' for stdin, or URL)",
        description=(
            f"Parse a saved or live SGLang {paths.METRICS} page the way the agent's telemetry does and print "
            f"the Snapshot fields it feeds. A URL without a path gets {paths.METRICS} appended."
        ),
    )
    parser.add_argument(
        "source",
        metavar="FILE|URL",
        help=f"a saved page, '-' for stdin, or http(s)://host:port[{paths.METRICS}]",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--timeout", type=_seconds, default=10.0, help="seconds to wait for a URL (default 10)"
    )
    parser.set_defaults(handler=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f"{text} is outside 0 < seconds <= 600")
    return value


def _read(source: str, timeout: float) -> bytes:
    if source.startswith(("http://", "https://")):
        url = httpx.URL(source)
        if url.path in ("", "/"):
            url = url.copy_with(path=paths.METRICS)
        try:
            resp = httpx.get(url, timeout=timeout, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise ValueError(f"{url}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code == 404:
            raise ValueError(f"{url}: 404 — is the server started with --enable-metrics?")
        if resp.status_code != 200:
            raise ValueError(f"{url}: HTTP {resp.status_code}")
        return resp.content[:MAX_PAGE_BYTES]
    if source == "-":
        return sys.stdin.buffer.read(MAX_PAGE_BYTES)
    try:
        with open(source, "rb") as fh:
            return fh.read(MAX_PAGE_BYTES)
    except OSError as exc:
        raise ValueError(f"{source}: {exc.strerror or exc}") from exc


def _fmt(value: float | int | None, lower_bound: bool = False) -> str:
    if value is None:
        return "-"
    fraction = isinstance(value, float) and not value.is_integer()
    text = f"{value:.4g}" if fraction else f"{int(value):,}"
    return f">{text}" if lower_bound else text


def run(args: argparse.Namespace) -> int:
    try:
        page = _read(args.source, args.timeout)
    except ValueError as exc:
        print(f"agent metrics: {exc}", file=sys.stderr)
        return 2
    reading = read_page(page)
    sglang = reading.is_sglang
    if args.json:
        summary = page_summary(reading)
        if not sglang:
            summary["error"] = "no SGLang metrics on this page (names start with sglang: or sglang_)"
        print(json.dumps(summary, indent=2, allow_nan=False))
        return 0 if sglang else 1
    if not sglang:
        print(
            f"agent metrics: {args.source}: no SGLang metrics on this page (names start with sglang: or sglang_)"
        )
        return 1
    fields = page_fields(reading)
    width = max(len(f.field) for f in fields)
    print(f"{args.source}: SGLang metrics with prefix {reading.prefix!r}")
    for f in fields:
        print(f"  {f.field:<{width}}  {_fmt(f.value, f.lower_bound):>14}  {f.source}")
    if reading.missing:
        print(f"not on this page: {', '.join(reading.missing)}")
    for problem in reading.problems:
        print(f"problem: {problem}")
    if reading.skipped_lines:
        print(f"{reading.skipped_lines} malformed line(s) skipped")
    print("(one page has no rates: the agent computes tokens/s and recent percentiles from two readings)")
    return 0
