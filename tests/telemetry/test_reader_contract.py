"""The names the reader reads, and the 0.5.23 page the tests use, come from the pinned wheel's source."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest
from contract.sglang_source import declared_metric_names

from agent.sglang import metrics as m
from agent.sglang.metric_fields import COUNTERS, GAUGES, HISTOGRAMS

from .conftest import FIXTURES, PAGE_0523

pytestmark = pytest.mark.contract


def test_every_name_we_read_is_declared_by_0523(sglang_src: Path) -> None:
    declared = declared_metric_names(sglang_src)
    wanted = {n for gauge in GAUGES.values() for n in gauge.names if n not in m.ALIASES}
    wanted |= {counter.name for counter in COUNTERS.values()}
    wanted |= {n for names in HISTOGRAMS.values() for n in names if n not in m.ALIASES}
    missing = sorted(n for n in wanted if f"sglang:{n}" not in declared)
    assert missing == []
    older = [n for n in m.ALIASES if f"sglang:{n}" in declared]
    assert older == []  # really older names (or another endpoint's): 0.5.23's /metrics has none of them
    # /v1/loads?format=prometheus writes sglang_<field> of LoadSnapshot, which calls the queue this:
    assert m.LOADS_NUM_WAITING_REQS in (sglang_src / "srt/managers/load_snapshot.py").read_text()


def test_the_fixture_page_is_what_the_wheel_generates(sglang_wheel: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_pages", FIXTURES / "metrics" / "make_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_pages"] = module
    spec.loader.exec_module(module)
    with zipfile.ZipFile(sglang_wheel) as wheel:
        source = wheel.read(module.SOURCE).decode()
    assert module.build(source) == PAGE_0523.read_bytes(), (
        "regenerate with tests/fixtures/metrics/make_pages.py"
    )
