"""Workloads (issue 45 item 1): where a run's prompts and lengths come from, and that every result
records it. The requests a seed makes are checked as they are; then ``agent bench`` runs each kind
against the simulated engine (real HTTP; the sim counts each request's prompt from the request), and
the agent's own run refuses a dataset path a body names."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.bench.options import BenchOptionError
from agent.bench.runner import BenchRefused, BenchRuns
from agent.bench.store import BenchStore
from agent.bench.workload import SHIPPED, Workload, load, parse_dataset, resolve, words
from agent.profile.store import load_profile
from agent.sim.server import run_sim
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult
from agent.wire.bench_workload import WorkloadSpec
from console.model.bench_result import parse_result

EAGLE3 = Path(__file__).resolve().parents[2] / "profiles" / "kimi-k25-eagle3.toml"
CHAT = SHIPPED / "chat-small.jsonl"


def _len(workload: Workload, seed: int) -> tuple[int, int]:
    item = workload.item(seed)
    return len(item.prompt.input_ids) or len(item.prompt.text.split()), item.output_len


def test_random_with_a_range_ratio_draws_lengths_as_bench_serving_and_a_seed_is_one_request() -> None:
    fixed = Workload(WorkloadSpec(), 100, 40)
    assert {_len(fixed, s) for s in range(50)} == {(100, 40)}, "ratio 1: today's one shape"
    ranged = Workload(WorkloadSpec(range_ratio=0.25), 100, 40)
    lengths = [_len(ranged, s) for s in range(400)]
    assert all(25 <= i <= 100 and 10 <= o <= 40 for i, o in lengths)
    assert min(i for i, _ in lengths) < 35 and max(i for i, _ in lengths) > 90, "the whole range is drawn"
    assert ranged.item(7) == ranged.item(7), "a seed's request is the same for every arm and repeat"


def test_shared_prefix_requests_share_their_groups_system_prompt() -> None:
    workload = Workload(WorkloadSpec(kind="shared-prefix", groups=3, prefix_len=50), 80, 16)
    prompts = [workload.item(s).prompt.text.split() for s in range(60)]
    assert {len(p) for p in prompts} == {80}
    assert len({tuple(p[:50]) for p in prompts}) == 3, "three system prompts, each shared"
    assert len({tuple(p[50:]) for p in prompts}) == 60, "each question its own"
    described = workload.describe()
    assert described["shared_prefix_share"] == pytest.approx(50 / 80, abs=0.01)
    assert words(described).startswith(
        "workload: shared-prefix: 3 system prompts of 50 tokens (62% of a prompt)"
    )


def test_a_dataset_is_sharegpt_or_jsonl_capped_by_the_lengths_and_a_bad_one_is_named(tmp_path: Path) -> None:
    sharegpt = json.dumps([
        {"conversations": [{"from": "human", "value": "one two three four five"},
                           {"from": "gpt", "value": "a b c d e f g h i j"}]},
        {"conversations": [{"from": "human", "value": "six seven"}]},
        {"nothing": 1},
    ]).encode()  # fmt: skip
    entries = parse_dataset(sharegpt, "sg.json")
    assert [(len(e.words), e.output_len) for e in entries] == [(5, 10), (2, None)]
    path = tmp_path / "sg.json"
    path.write_bytes(sharegpt)
    spec = resolve(WorkloadSpec(kind="dataset", dataset=str(path)), allow_paths=True)
    workload = load(spec, 3, 8)
    assert [_len(workload, s) for s in range(2)] == [(3, 8), (2, 8)], "capped by --input-len/--output-len"
    assert workload.describe()["sha256"] == hashlib.sha256(sharegpt).hexdigest()
    for raw, said in ((b"{nope", "not JSON or JSONL"), (b"\xff", "not UTF-8"), (b'{"x": 1}\n', "no prompt")):
        with pytest.raises(BenchOptionError, match=said) as info:
            parse_dataset(raw, "bad.jsonl")
        assert info.value.field_name == "dataset"
    shipped = load(resolve(WorkloadSpec(kind="dataset", dataset="chat-small.jsonl"), False), 4096, 512)
    described = shipped.describe()
    assert described["entries"] == 48 and described["file"] == "chat-small.jsonl"
    assert described["input_len"]["min"] < 40 < 400 < described["input_len"]["max"], "short and long prompts"


def test_the_api_names_a_shipped_dataset_never_a_path(tmp_path: Path) -> None:
    for dataset in ("/etc/passwd", "../x.jsonl", "a/b.json"):
        with pytest.raises(ValidationError) as info:
            BenchRequest.model_validate({"workload": {"kind": "dataset", "dataset": dataset}})
        [error] = info.value.errors()
        assert error["loc"] == ("workload",) and "shipped with the agent" in error["msg"]
        assert dataset not in error["msg"]
    runs = BenchRuns(BenchStore(tmp_path))
    unknown = BenchRequest.model_validate({"workload": {"kind": "dataset", "dataset": "secrets.jsonl"}})
    with pytest.raises(
        BenchRefused, match=r"not a dataset shipped with the agent; those are: chat-small\.jsonl"
    ):
        runs.start("http://127.0.0.1:9", unknown)
    assert runs.list() == [], "nothing recorded, nothing started"


async def _bench(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli.main", "bench", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_each_workload_runs_on_the_sim_and_the_result_records_what_it_drew(tmp_path: Path) -> None:
    shape = ["--concurrency", "2", "--min-requests", "6", "--input-len", "300", "--output-len", "24",
             "--min-window-s", "0", "--drain-wait-s", "0", "--repeats", "1"]  # fmt: skip
    kinds = {
        "dataset": ["--dataset", "chat-small.jsonl"],
        "shared-prefix": ["--dataset", "shared-prefix", "--prefix-groups", "2", "--prefix-len", "100"],
        "random": ["--random-range-ratio", "0.5"],
    }
    results = {}
    async with run_sim(load_profile(EAGLE3), port=0, speedup=50, seed=3) as sim:
        for kind, flags in kinds.items():
            out = tmp_path / f"{kind}.json"
            rc, stdout, stderr = await _bench("sweep", "--url", sim.url, *shape, *flags, "--json", str(out))
            assert rc == 0, stderr
            results[kind] = (json.loads(out.read_text()), stdout)
        bad, _, refused = await _bench(
            "sweep", "--url", sim.url, *shape, "--dataset", str(tmp_path / "none.jsonl")
        )
    dataset, stdout = results["dataset"]
    work = dataset["workload"]
    assert work["kind"] == "dataset" and work["file"] == "chat-small.jsonl" and work["entries"] == 48
    assert work["sha256"] == hashlib.sha256(CHAT.read_bytes()).hexdigest()
    assert dataset["options"]["workload"]["kind"] == "dataset"
    assert f"workload: dataset chat-small.jsonl (sha256 {work['sha256'][:8]}…, 48 entries)" in stdout
    # The console's result says the same line beside where it ran.
    shown = dict(parse_result(BenchResult.model_validate(dataset)).where)
    assert shown["workload"] == stdout.split("workload: ", 1)[1].splitlines()[0]
    # The sim counted each request's prompt from the request: the dataset's, capped at 300 words.
    [level] = dataset["levels"]
    per_request = level["total_input_tokens"] / level["completed"]
    assert work["input_len"]["min"] <= per_request <= 300 and per_request != 300
    prefix = results["shared-prefix"][0]["workload"]
    assert prefix["kind"] == "shared-prefix" and prefix["groups"] == 2 and prefix["prefix_len"] == 100
    ranged = results["random"][0]["workload"]
    assert (
        ranged["range_ratio"] == 0.5 and 150 <= ranged["input_len"]["min"] < ranged["input_len"]["max"] <= 300
    )
    assert bad == 2 and refused.startswith("agent bench: --dataset: none.jsonl: cannot read it"), refused
