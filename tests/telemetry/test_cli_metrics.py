"""``agent metrics FILE|URL [--json]`` through the real ``agent`` entry point."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent.cli.main import main

from .conftest import PAGE_0523, ScriptedSglang


def test_table_for_the_full_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", str(PAGE_0523)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")}
    assert rows["load.running"] == ["48", "sglang:num_running_reqs"]
    assert rows["speculation.accept_length"] == ["2.61", "sglang:spec_accept_length"]
    assert rows["counter.decode_tokens"] == ["1,851,904", "sglang:realtime_tokens_total{mode=decode}"]
    assert "not on this page" not in out


def test_json_for_an_older_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.txt"
    old.write_text('sglang:num_running_reqs{name="m"} 7\nsglang:generation_tokens_total{name="m"} 90\n')
    assert main(["metrics", str(old), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["prefix"] == "sglang:"
    assert data["fields"]["load.running"] == 7
    assert data["fields"]["counter.generation_tokens"] == 90
    assert data["fields"]["speculation.accept_length"] is None
    assert "spec_accept_length" in data["missing"] and "ttft" in data["missing"]


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
