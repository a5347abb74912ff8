"""``agent metrics FILE|URL [--json]`` through the real ``agent`` entry point."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent.cli.main import main

from .conftest import FIXTURES, PAGE_0523, ScriptedSglang

REPRO = FIXTURES / "repro"


def test_table_for_the_full_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(PAGE_0523)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")}
    assert rows["load.running"] == ["48", "sglang:num_running_reqs"]
    assert rows["speculation.accept_length"] == ["2.61", "sglang:spec_accept_length"]
    assert rows["counter.decode_tokens"] == ["1,851,904", "sglang:realtime_tokens_total{mode=decode}"]
    assert "not on this page" not in out


def test_json_for_an_older_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(REPRO / "old-names.prom"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["prefix"] == "sglang:"
    assert data["fields"]["load.running"] == 7
    assert data["sources"]["load.running"] == "sglang:num_requests_running (older name)"
    assert data["sources"]["latency.itl_p50_s"] == "sglang:time_per_output_token_seconds (lifetime)"
    assert data["fields"]["counter.generation_tokens"] == 90000
    assert data["fields"]["speculation.accept_length"] is None
    assert "spec_accept_length" in data["missing"] and "ttft" in data["missing"]


def test_fallbacks_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "fallback.txt"
    page.write_text(
        'sglang:num_used_tokens{tp_rank="0"} 500\nsglang:max_total_num_tokens{tp_rank="0"} 1000\n'
    )
    assert main(["metrics", str(page)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    assert (
        "500" in rows["kv.used_tokens"]
        and "sglang:num_used_tokens (fallback: no kv_used_tokens)" in rows["kv.used_tokens"]
    )
    page.write_text('sglang:token_usage{tp_rank="0"} 0.25\nsglang:max_total_num_tokens{tp_rank="0"} 1000\n')
    assert main(["metrics", str(page), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fields"]["kv.used_tokens"] == 250
    assert "token_usage x kv.pool_tokens" in data["sources"]["kv.used_tokens"]


def test_json_never_holds_infinity_or_nan_and_says_what_was_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(REPRO / "inf-gauge.prom"), "--json"]) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out
    data = json.loads(out)
    assert data["fields"]["load.running"] == 12 and data["fields"]["kv.token_usage"] is None
    assert len(data["problems"]) == 6
    assert main(["metrics", str(REPRO / "quantile-above-top.prom"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fields"]["latency.ttft_p99_s"] == 400.0 and data["lower_bounds"] == ["latency.ttft_p99_s"]
    assert main(["metrics", str(REPRO / "quantile-above-top.prom")]) == 0
    assert ">400" in next(line for line in capsys.readouterr().out.splitlines() if "ttft_p99" in line)


def test_json_mode_fails_on_an_empty_or_foreign_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    foreign = tmp_path / "node.txt"
    foreign.write_text("node_cpu_seconds_total 5\n")
    for page in (empty, foreign):
        assert main(["metrics", str(page), "--json"]) == 1
        data = json.loads(capsys.readouterr().out)
        assert data["prefix"] is None and "no SGLang metrics" in data["error"]


async def test_live_url_gets_metrics_appended(
    scripted_sglang: ScriptedSglang, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted_sglang.metrics = PAGE_0523.read_text().replace("sglang:", "sglang_")
    rc = await asyncio.to_thread(main, ["metrics", scripted_sglang.url, "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["prefix"] == "sglang_" and data["fields"]["load.queued"] == 12
    assert scripted_sglang.hits["/metrics"] == 1


async def test_live_url_without_metrics_says_why(
    scripted_sglang: ScriptedSglang, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted_sglang.metrics = None
    rc = await asyncio.to_thread(main, ["metrics", scripted_sglang.url + "/metrics"])
    assert rc == 2
    assert "--enable-metrics" in capsys.readouterr().err


def test_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt: No such file or directory" in capsys.readouterr().err
    other = tmp_path / "node.txt"
    other.write_text("node_cpu_seconds_total 5\n")
    assert main(["metrics", str(other)]) == 1
    assert "no SGLang metrics" in capsys.readouterr().out


def test_timeout_must_be_a_sensible_number(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["metrics", str(PAGE_0523), "--timeout", "-1"])
    assert exit_info.value.code == 2
    assert "outside 0 < seconds <= 600" in capsys.readouterr().err
