"""``bench/real/trace_gaps.py``: a decode trace's GPU idle time per round, laid on what the host did.

The traces come from SGLang's profiler on the GPU host; here they are written by hand in the same
trace-event format, small enough that every figure can be worked out on paper.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.real import trace_gaps

REPO = Path(__file__).resolve().parents[2]

HOST = {"pid": 7, "tid": 7}


def x(cat: str, name: str, ts: float, dur: float, **where: int) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **(where or HOST)}


def kernel(ts: float, dur: float, stream: int = 1) -> dict:
    return x("kernel", "decode_kernel", ts, dur, pid=0, tid=stream)


def two_rounds() -> list[dict]:
    """Graph launches at 0, 1000 and 2000 us (two rounds). Round 1: the GPU is busy 10-700 on stream
    1 and 600-720 on stream 2, then idle until its next kernel at 1010 while the host copies (650-800, a stream
    synchronize inside) and runs uncovered Python; round 2: busy 1010-1700, idle until 2000, with an
    index_put_ from 1750 to 1850 and one eager kernel launch."""
    return [
        x("cuda_runtime", "cudaGraphLaunch", 0, 10),
        x("cuda_runtime", "cudaGraphLaunch", 1000, 10),
        x("cuda_runtime", "cudaGraphLaunch", 2000, 10),
        kernel(10, 690),
        kernel(600, 120, stream=2),
        kernel(1010, 690),
        x("cpu_op", "aten::copy_", 650, 150),
        x("cuda_runtime", "cudaStreamSynchronize", 660, 130),
        x("cpu_op", "aten::index_put_", 1750, 100),
        x("cuda_runtime", "cudaLaunchKernel", 1760, 5),
        # another thread's work is not the launching thread's and lays on no gap
        x("cpu_op", "aten::mm", 720, 280, pid=7, tid=8),
        x("user_annotation", "step[DECODE bs=23]", 1, 5),
        x("user_annotation", "step[EXTEND bs=1]", 1200, 5),
        {"ph": "i", "name": "instant", "ts": 5, **HOST},
    ]


def test_cycle_busy_and_idle_per_round() -> None:
    a = trace_gaps.analyse(two_rounds())
    assert a["rounds"] == 2
    assert a["cycle_ms"] == {"mean": 1.0, "median": 1.0, "max": 1.0}
    # busy: 10..720 (both streams merged) + 1010..1700 = 710 + 690 us over two rounds
    assert a["gpu_busy_ms_per_round"] == 0.7
    assert a["gpu_idle_ms_per_round"] == 0.3


def test_gaps_are_laid_on_the_launching_threads_top_level_ops() -> None:
    a = trace_gaps.analyse(two_rounds())
    by_op = a["gap_by_host_op_ms_per_round"]
    # gap 1 is 720..1010 (290 us): aten::copy_ covers 720..800; gap 2 is 1700..2000 (300 us): index_put_ 100 us
    assert by_op["aten::copy_"] == 0.04
    assert by_op["aten::index_put_"] == 0.05
    assert by_op["cudaGraphLaunch"] == 0.005  # the launch at 1000 (10 us) ends gap 1
    assert by_op[trace_gaps.UNCOVERED] == pytest.approx((200 + 200) / 2 / 1000)
    assert "aten::mm" not in by_op  # another thread
    assert "cudaStreamSynchronize" not in by_op  # inside copy_, not top level
    assert a["gaps"]["ms_per_round"] == 0.295
    assert a["waits_per_round"] == {"cudaStreamSynchronize": {"count": 0.5, "ms": 0.065}}
    assert a["eager_launches_per_round"] == 0.5


def test_host_time_by_top_level_operation_and_the_annotated_steps() -> None:
    a = trace_gaps.analyse(two_rounds())
    # copy_ lasts 150 us, 130 of them in its stream synchronize: 20 us of Python, over two rounds
    assert a["host_ms_per_round"]["aten::copy_"] == {"ms": 0.075, "python_ms": 0.01}
    assert a["host_ms_per_round"]["aten::index_put_"] == {"ms": 0.05, "python_ms": 0.048}
    assert "cudaStreamSynchronize" not in a["host_ms_per_round"]  # a child, not top level
    assert a["steps"] == {"DECODE": 1, "EXTEND": 1}


def test_short_gaps_are_left_out_of_the_laying_but_not_of_the_idle_time() -> None:
    a = trace_gaps.analyse(two_rounds(), min_gap_us=295)
    assert a["gaps"]["count"] == 1  # only the 300-us gap of round 2
    assert a["gpu_idle_ms_per_round"] == 0.3
    assert "aten::copy_" not in a["gap_by_host_op_ms_per_round"]


def test_a_trace_without_two_graph_launches_says_so() -> None:
    with pytest.raises(ValueError, match="1 CUDA graph launches"):
        trace_gaps.analyse(two_rounds()[1:2])


def test_the_command_reads_gzip_traces_and_writes_its_report(tmp_path: Path) -> None:
    trace = tmp_path / "plain-1-TP-0.trace.json.gz"
    trace.write_bytes(gzip.compress(json.dumps({"traceEvents": two_rounds()}).encode()))
    out = tmp_path / "gaps.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.real.trace_gaps", str(trace), "--json", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "plain-1-TP-0.trace.json.gz: 2 rounds; cycle 1.000 ms mean" in done.stdout
    assert "0.5 x, 0.0650 ms  cudaStreamSynchronize" in done.stdout
    assert json.loads(out.read_text())[trace.name]["gpu_idle_ms_per_round"] == 0.3


def test_the_command_names_a_torn_trace_and_fails(tmp_path: Path) -> None:
    torn = tmp_path / "torn.trace.json.gz"
    torn.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"')[:-4])
    done = subprocess.run(
        [sys.executable, "-m", "bench.real.trace_gaps", str(torn)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert str(torn) in done.stderr
