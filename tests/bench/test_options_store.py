"""A request's fields name what they allow (``BenchRequest``); the results store writes atomically and lists runs."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent.bench.store import BenchStore, UnknownBench, new_bench_id
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult


def _refused(body: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ValidationError) as info:
        BenchRequest.model_validate(body)
    [error] = info.value.errors()
    return dict(error)


def test_concurrency_is_sorted_and_checked() -> None:
    assert BenchRequest(concurrency=[4, 1, 2]).options.concurrency == (1, 2, 4)
    for bad in (["a"], [0, 2], [2, 2], [], [True], 4, [1] * 65):
        error = _refused({"concurrency": bad})
        assert error["loc"] == ("concurrency",), bad
        assert error["msg"] == (
            "concurrency levels: a list of 1 to 64 different whole numbers from 1 to 4096, e.g. [1, 4, 16]"
        )


def test_body_options_refuse_unknown_and_bad_fields_by_name() -> None:
    opts = BenchRequest.model_validate(
        {"concurrency": [8, 1], "input_len": 64, "output_len": 32, "mode": "sweep"}
    ).options
    assert opts.concurrency == (1, 8) and opts.input_len == 64 and opts.requests_at(8) == 16
    assert opts.repeats == 2 and opts.requests_at(1) == 8
    for body, field in (
        ({"concurency": [1]}, "concurency"),
        ({"output_len": 1}, "output_len"),
        ({"requests_per_level": "ten"}, "requests_per_level"),
        ({"chat": "yes"}, "chat"),
        ({"concurrency": 4}, "concurrency"),
        ({"min_level_seconds": -1}, "min_level_seconds"),
        ({"min_window_s": "long"}, "min_window_s"),
        ({"repeats": 0}, "repeats"),
        ({"repeats": 21}, "repeats"),
        ({"min_requests": 2, "requests_per_level": 2}, "requests_per_level"),
    ):
        assert _refused(body)["loc"] == (field,), body


def test_older_body_names_still_mean_the_window_options() -> None:
    request = BenchRequest.model_validate({"requests_per_level": 5, "min_level_seconds": 0.5, "repeats": 3})
    opts = request.options
    assert (opts.min_requests, opts.min_window_s, opts.repeats) == (5, 0.5, 3)
    assert opts.requests_at(64) == 5
    assert request.body()["min_requests"] == 5  # sent on under the field's own name


def test_store_saves_lists_and_refuses_bad_ids(tmp_path: Path) -> None:
    store = BenchStore(tmp_path)
    assert store.list() == []
    first, second = new_bench_id(1_700_000_000), new_bench_id(1_700_000_100)
    store.save(BenchResult(bench_id=first, mode="sweep", state="finished", levels=[]))
    store.save(BenchResult(bench_id=second, mode="compare", state="running"))
    assert [r.bench_id for r in store.list()] == [second, first]
    assert store.get(first).levels == []
    assert json.loads(store.path(first).read_text())["levels"] == []  # what was set, written
    path = store.path(first)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp files left
    with pytest.raises(UnknownBench):
        store.get("../../etc/passwd")
    with pytest.raises(UnknownBench):
        store.get(new_bench_id())
    assert store.mark_abandoned("agent restarted") == [second]
    assert store.get(second).state == "failed" and store.get(second).error == "agent restarted"


def test_unreadable_result_is_listed_as_failed(tmp_path: Path) -> None:
    store = BenchStore(tmp_path)
    bench_id = new_bench_id()
    store.root.mkdir(parents=True)
    store.path(bench_id).write_text("{not json")
    [summary] = store.list()
    assert summary.state == "failed" and summary.error is not None and "unreadable" in summary.error
    assert str(store.path(bench_id)) in summary.error  # it names the file
    json.dumps(summary.run_line())


def test_a_refused_value_is_said_in_words_never_quoted_nor_as_a_python_repr() -> None:
    for body, words in (
        ({"chat": "yes"}, "chat: true or false"),
        ({"input_len": True}, "prompt length in tokens: a whole number from 1 to 1000000"),
        ({"min_window_s": [1]}, "shortest window: a number of seconds from 0 to 3600"),
        ({"requests_per_level": "ten"}, "completed requests per window: a whole number from 1 to 100000"),
        ({"budget_s": 3.5964e6}, "the run's time budget: a number of seconds from 10 to 86400 (24 h)"),
        ({"mode": None}, "mode: sweep or compare"),
        ({"baseline_url": True}, "the baseline server: an http:// or https:// URL"),
        ({"arms": {"a": 1}}, "arms: a list of 1 to 4 different arms of on, off, adaptive, baseline"),
        ({"drain_wait_s": "\ud800"}, "wait for other clients' requests: a number of seconds from 0 to 3600"),
    ):
        msg = _refused(body)["msg"]
        assert msg.startswith(words), msg
        assert not any(r in msg for r in ("None", "True", "{'", "e+06", "\ud800", "ten", "yes"))
