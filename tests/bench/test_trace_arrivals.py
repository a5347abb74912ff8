"""``bench/real/trace_arrivals.py``: what an arrival and a finish cost, from a profiler trace.

The traces come from SGLang's profiler on the GPU host; here one is written by hand in the same
trace-event format, small enough that every figure can be worked out on paper.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.real import trace_arrivals, trace_frames

REPO = Path(__file__).resolve().parents[2]

HOST = {"pid": 7, "tid": 7}
GPU = {"pid": 0, "tid": 13}


def ann(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": dur, **HOST}


def gann(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "gpu_user_annotation", "name": name, "ts": ts, "dur": dur, **GPU}


def kernel(ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, **GPU}


def loop(ts: float, step: str, run_us: float, result_us: float) -> list[dict]:
    """One scheduler iteration starting at ``ts``: receive, pick, run (with its step), process."""
    return [
        ann("scheduler.recv_requests", ts, 10),
        ann("scheduler.get_next_batch_to_run", ts + 10, 90),
        ann("scheduler.run_batch", ts + 100, run_us),
        ann(step, ts + 110, run_us - 20),
        ann("scheduler.process_batch_result", ts + 100 + run_us, result_us),
    ]


def trace() -> list[dict]:
    """Decode 64, decode 64 (2 finish), an arrival of 2 (the target's extend, the draft's extend
    with its forward inside), decode 64, decode 64, then the loop's last start. Iteration walls:
    1000, 1200, 3000, 1000 us."""
    ev: list[dict] = []
    ev += loop(0, "step[DECODE bs=64]", 600, 300)
    ev += [gann("step[DECODE bs=64]", 150, 500), kernel(150, 500)]
    ev += loop(1000, "step[DECODE bs=64]", 600, 500)
    ev += [gann("step[DECODE bs=64]", 1150, 500), kernel(1150, 500)]
    # arrival: run_batch 2000 us: target extend 150-1350 (GPU 1200 busy), draft extend 1300-2000
    # (GPU: 700 span, of which the draft forward 300)
    ev += loop(2200, "step[EXTEND bs=2 toks=512]", 2000, 800)
    ev += [ann("draft_extend", 3600, 500), ann("step[DRAFT bs=2 toks=512]", 3700, 200)]
    ev += [gann("step[EXTEND bs=2 toks=512]", 2350, 1200), kernel(2350, 1200)]
    ev += [gann("draft_extend", 3600, 700), kernel(3600, 700)]
    ev += [gann("step[DRAFT bs=2 toks=512]", 3700, 300)]
    ev.append(
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 4000, "dur": 50, **HOST}
    )
    ev += loop(5200, "step[DECODE bs=64]", 600, 300)
    ev += [gann("step[DECODE bs=64]", 5350, 500), kernel(5350, 500)]
    ev += loop(6200, "step[DECODE bs=64]", 600, 300)
    ev.append(ann("scheduler.recv_requests", 7200, 10))
    return ev


def test_iterations_are_split_by_kind_with_their_parts() -> None:
    its = trace_arrivals.iterations(trace())
    assert [it.kind for it in its] == ["decode", "decode", "arrival", "decode", "decode"]
    arrival = its[2]
    assert (arrival.batch, arrival.tokens, arrival.wall_us) == (2, 512, 3000)
    assert arrival.gpu_parts_us == {"target_extend": 1200, "draft_extend": 400, "draft_forward": 300}
    assert arrival.waits == 1 and arrival.wait_us == 50
    assert arrival.host_us["scheduler.run_batch"] == 2000


def test_finishes_come_from_batch_sizes_and_arrivals() -> None:
    fin = trace_arrivals.finishes(trace_arrivals.iterations(trace()))
    # 64 -> 64: none; 64 + 2 arrived -> 64: two finished; 64 -> 64: none
    assert [n for _, n in fin] == [0, 2, 0]


def test_per_arrival_and_per_finish() -> None:
    a = trace_arrivals.analyse(trace())
    assert a["arrivals"] == 2 and a["finishes"] == 2
    assert a["arrival"]["count"] == 1
    assert a["arrival"]["gpu_parts_ms"] == {"draft_extend": 0.4, "draft_forward": 0.3, "target_extend": 1.2}
    assert a["arrival_wall_ms_per_arrival"] == 1.5
    # process_batch_result: 300 with no finish, 500 with two: 0.1 ms per finish
    assert a["finish_process_result_ms_per_finish"] == 0.1
    assert a["decode"]["count"] == 4
    # four decode iterations of 64 over the 7.2 ms from the first loop start to the last
    assert a["decode_tokens_per_s"] == round(4 * 64 / 0.0072, 1)


def test_a_trace_without_loop_iterations_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": [kernel(0, 5)]}).encode()))
    done = subprocess.run(
        [sys.executable, "-m", "bench.real.trace_arrivals", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert "3 or more are needed" in done.stderr


def test_the_report_names_every_part(tmp_path: Path) -> None:
    path = tmp_path / "spec.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": trace()}).encode()))
    out = tmp_path / "a.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.real.trace_arrivals", str(path), "--json", str(out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert "target_extend 1.200" in done.stdout
    assert "per finish: +0.100 ms" in done.stdout
    assert json.loads(out.read_text())[path.name]["arrivals"] == 2


@pytest.mark.parametrize("name", ["step[DECODE bs=3]", "draft_extend", "step[DRAFT bs=1 toks=2]"])
def test_parts_are_named(name: str) -> None:
    assert trace_arrivals._part_of(name) is not None


def test_frames_side_by_side() -> None:
    """``trace_frames.py``: inclusive time per frame inside run_batch, per decode iteration."""

    def py(name: str, ts: float, dur: float) -> dict:
        return {"ph": "X", "cat": "python_function", "name": name, "ts": ts, "dur": dur, **HOST}

    first = [*trace(), py("a/b/worker.py(10): forward", 120, 400), py("a/b/ring.py(3): put", 130, 100)]
    second = trace()
    fa = trace_frames.frames(first)
    assert fa[0] == 4  # the four decode iterations; the arrival is not one
    assert fa[1][(2, "worker.py(10): forward")] == 400  # run_batch > step[DECODE] > forward
    assert fa[1][(3, "ring.py(3): put")] == 100
    rows = trace_frames.side_by_side(fa, trace_frames.frames(second), min_us=20)
    by_name = {name: (a, b) for _, name, a, b in rows}
    assert by_name["worker.py(10): forward"] == (0.1, None)  # 400 us over 4 iterations; absent in the second
    assert by_name["scheduler.run_batch"] == (0.6, 0.6)
