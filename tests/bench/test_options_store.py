"""Option validation names the field; the results store writes atomically and lists runs."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from agent.bench.options import BenchOptionError, options_from_mapping, parse_concurrency
from agent.bench.store import BenchStore, UnknownBench, new_bench_id
from agent.wire.bench_result import BenchResult


def test_concurrency_is_parsed_sorted_and_checked() -> None:
    assert parse_concurrency("4,1,2") == (1, 2, 4)
    for bad, words in (
        ("1,a", "comma-separated"),
        ("0,2", "from 1 to 4096"),
        ("2,2", "unique"),
        ("", "at least"),
    ):
        with pytest.raises(BenchOptionError, match=words) as info:
            parse_concurrency(bad)
        assert info.value.field_name == "concurrency"


def test_body_options_refuse_unknown_and_bad_fields_by_name() -> None:
    opts = options_from_mapping({"concurrency": [8, 1], "input_len": 64, "output_len": 32, "mode": "sweep"})
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
        with pytest.raises(BenchOptionError) as info:
            options_from_mapping(body)
        assert info.value.field_name == field


def test_older_body_names_still_mean_the_window_options() -> None:
    opts = options_from_mapping({"requests_per_level": 5, "min_level_seconds": 0.5, "repeats": 3})
    assert (opts.min_requests, opts.min_window_s, opts.repeats) == (5, 0.5, 3)
    assert opts.requests_at(64) == 5


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


def test_a_refused_value_is_quoted_in_json_words_never_as_a_python_repr() -> None:
    for body, words in (
        ({"chat": None}, "chat: no value: must be true or false"),
        ({"input_len": True}, "input_len: true: must be an integer from"),
        ({"min_window_s": [1]}, "min_window_s: [1]: must be a number of seconds"),
        ({"requests_per_level": "ten"}, "requests_per_level: “ten”: must be an integer from"),
    ):
        with pytest.raises(BenchOptionError) as info:
            options_from_mapping(body)
        assert str(info.value).startswith(words), str(info.value)
        assert not any(r in str(info.value) for r in ("None", "True", "'"))
