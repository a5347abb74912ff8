"""``agent smoke`` against the simulated engine: the whole flow (derived profile, the Supervisor, the
agent's Collector on real HTTP, live controls, accept length from meta_info) on CPU.

The sim's ``--draft-acceptance oracle``/``random`` stand in for the two tiny EAGLE-3 heads. Failure
paths: an engine that dies before ready is reported with its log's error, and the engines are always
stopped (also when the smoke is cancelled, as SIGINT does).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.engine import proc
from agent.profile import load_profile
from agent.smoke.checks import Report, oracle_accept, tolerance
from agent.smoke.run import SmokeError, SmokeOptions, run_smoke
from agent.smoke.shapes import shape_for

REPO = Path(__file__).resolve().parents[2]
TINY_PROFILE = REPO / "tests" / "smoke" / "profile-tiny-oracle.toml"


def _options(
    tmp_path: Path, profile_path: Path = TINY_PROFILE, drafts: tuple[str, ...] = ("oracle", "random")
) -> SmokeOptions:
    return SmokeOptions(
        profile=load_profile(profile_path),
        engine="sim",
        drafts=drafts,
        work_dir=tmp_path / "smoke",
        shape=shape_for("tiny"),
        preset="tiny",
        startup_timeout_s=60,
        sim_speedup=20,
    )


def _engine_pids(tmp_path: Path) -> list[int]:
    """Processes still running from this smoke's run folders (their argv names the run dir)."""
    runs = str(tmp_path / "smoke" / "runs")
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            cmd = proc.read_cmdline(int(entry.name)) or []
            if any(runs in part for part in cmd) and proc.read_stat(int(entry.name)) is not None:
                stat = proc.read_stat(int(entry.name))
                if stat is not None and stat.state not in ("Z", "X"):
                    found.append(int(entry.name))
    return found


def test_expected_accept_lengths_follow_the_real_engines_count() -> None:
    # The real capture: 48 tokens → 12 verify calls at 3 steps (4.00), 24 at 1 (2.00), 47 unspeculated.
    assert oracle_accept(3, 48) == 4.0 and oracle_accept(1, 48) == 2.0 and oracle_accept(0, 48) == 48 / 47
    assert oracle_accept(3) == 129 / 32
    assert tolerance(4.0) == pytest.approx(16 / 129 + 0.02)


async def test_both_heads_pass_against_the_sim_and_the_engines_are_stopped(tmp_path: Path) -> None:
    lines: list[str] = []
    report = await run_smoke(_options(tmp_path), lines.append, Report())
    failed = [(r.engine, r.check, r.measured, r.detail) for r in report.rows if not r.ok]
    assert failed == []
    checks = {(r.engine, r.check) for r in report.rows}
    assert ("oracle", "threshold 1 (never speculate)") in checks
    assert ("oracle", "steps pinned to 2") in checks
    assert ("oracle", "steps 7 (not built) refused") in checks
    assert ("random", "threshold 0, random head") in checks
    assert len(report.rows) == 15
    by_check = {(r.engine, r.check): r for r in report.rows}
    assert by_check[("oracle", "steps pinned to 1")].measured.startswith("2.02 (129 tokens / 64 verify)")
    assert by_check[("random", "steps pinned to 3, random head")].measured.startswith("1.01")
    assert "source metrics" in by_check[("oracle", "snapshot from real /metrics and /server_info")].measured
    assert any("engine stopped in" in line for line in lines)
    assert _engine_pids(tmp_path) == []
    assert list((tmp_path / "smoke" / "runs").glob("*-report.json"))


async def test_a_wrong_expectation_fails_its_row(tmp_path: Path) -> None:
    """The oracle checks run against a calibrated drafter (a real one, not an oracle): they must fail."""
    from agent.smoke import run as smoke_run

    options = _options(tmp_path, drafts=("oracle",))
    original = smoke_run._spec_for

    def calibrated(opts: SmokeOptions, draft: str, run_dir: Path):  # type: ignore[no-untyped-def]
        return original(opts, "calibrated", run_dir)

    smoke_run._spec_for = calibrated  # type: ignore[assignment]
    try:
        report = await run_smoke(options, lambda line: None, Report())
    finally:
        smoke_run._spec_for = original  # type: ignore[assignment]
    failed = {r.check for r in report.rows if not r.ok}
    assert "steps pinned to 3" in failed and "threshold 1 (never speculate)" not in failed
    assert _engine_pids(tmp_path) == []


async def test_an_engine_that_dies_at_start_is_reported_with_its_error(tmp_path: Path) -> None:
    options = _options(tmp_path, drafts=("oracle",))
    # A bad environment (put in through the spec) makes the engine die at once, with its error logged.
    from agent.smoke import run as smoke_run

    original = smoke_run._spec_for

    def faulty(opts: SmokeOptions, draft: str, run_dir: Path):  # type: ignore[no-untyped-def]
        make = original(opts, draft, run_dir)

        def spec_for(profile):  # type: ignore[no-untyped-def]
            spec = make(profile)
            return type(spec)(**{**spec.__dict__, "env": {**spec.env, "PYTHONHOME": "/nonexistent-k25"}})

        return spec_for

    smoke_run._spec_for = faulty  # type: ignore[assignment]
    try:
        report = await run_smoke(options, lambda line: None, Report())
    finally:
        smoke_run._spec_for = original  # type: ignore[assignment]
    (row,) = report.rows
    assert row.check == "ready within 60 s" and not row.ok
    assert "No module named 'encodings'" in row.detail and "engine log" in row.detail
    assert _engine_pids(tmp_path) == []


async def test_cancelling_the_smoke_stops_its_engines(tmp_path: Path) -> None:
    lines: list[str] = []
    started = asyncio.Event()

    def say(line: str) -> None:
        lines.append(line)
        if "engine.ready" in line:
            started.set()

    task = asyncio.create_task(run_smoke(_options(tmp_path), say, Report()))
    await asyncio.wait_for(started.wait(), 60)
    task.cancel()  # what the CLI's SIGINT/SIGTERM handler does
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _engine_pids(tmp_path) == []
    assert sum("engine stopped in" in line for line in lines) >= 1


async def test_a_cancel_as_the_first_engine_turns_ready_stops_the_smoke_at_once(tmp_path: Path) -> None:
    """The CI hang: SIGTERM sent on the "engine.ready" line reached the smoke in the very tick the
    supervisor's state turned ready. The cancel is delivered here at exactly that point (inside the
    event that prints the line); no check may run after it, and the engines are stopped."""
    report = Report()
    holder: list[asyncio.Task[Report]] = []

    def say(line: str) -> None:
        if "engine.ready" in line and holder[0].cancelling() == 0:
            holder[0].cancel()  # what the CLI's SIGTERM handler does, at the riskiest moment

    holder.append(asyncio.create_task(run_smoke(_options(tmp_path), say, report)))
    with pytest.raises(asyncio.CancelledError):
        await holder[0]
    assert [(r.engine, r.check) for r in report.rows] == []
    assert _engine_pids(tmp_path) == []


async def test_a_profile_without_speculation_is_refused(tmp_path: Path) -> None:
    options = _options(tmp_path, REPO / "profiles" / "kimi-k25-baseline.toml")
    with pytest.raises(SmokeError, match="without speculation"):
        await run_smoke(options, lambda line: None, Report())


def test_the_cli_exits_0_and_prints_the_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "smoke", "--profile", str(TINY_PROFILE), "--engine", "sim",
         "--draft", "random", "--work-dir", str(tmp_path / "w"), "--sim-speedup", "20"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agent smoke: PASSED (5 checks)" in done.stdout
    assert "engine   check" in done.stdout
    for bad in ("{'", "None", "True", "False", "[]"):
        assert bad not in done.stdout


def test_sigterm_stops_the_engines_and_exits(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "agent.cli.main", "smoke", "--profile", str(TINY_PROFILE), "--engine", "sim",
         "--work-dir", str(tmp_path / "smoke"), "--sim-speedup", "0.05"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    for line in child.stdout:
        if "engine.ready" in line:
            break
    child.send_signal(signal.SIGTERM)
    out = child.communicate(timeout=60)[0]
    assert child.returncode == 130
    assert "stopping the engines" in out
    assert _engine_pids(tmp_path) == []


def test_tp_derives_a_tensor_parallel_profile_whose_heads_divide() -> None:
    """Issue 15's check: ``--tp N`` runs the tiny engines over N GPUs; the shape must shard over them."""
    from agent.smoke.derive import smoke_profile

    profile = load_profile(TINY_PROFILE)
    models = REPO / "models"
    derived = smoke_profile(
        profile, target=models / "t", draft=models / "d", port=30999, gpu=None, label="oracle", tp_size=4
    )
    assert derived.server.tp_size == 4
    assert "CUDA_VISIBLE_DEVICES" not in derived.server.env  # the first 4 visible GPUs
    assert derived.speculation == profile.speculation


async def test_tp_refuses_a_shape_it_cannot_shard_and_a_single_gpu(tmp_path: Path) -> None:
    odd = dataclasses.replace(_options(tmp_path), shape=shape_for("tiny", heads=12, kv_heads=4), tp_size=8)
    with pytest.raises(SmokeError, match=r"heads \(12\) must be divisible by the TP size 8"):
        await run_smoke(odd, lambda line: None, Report())
    pinned = dataclasses.replace(_options(tmp_path), tp_size=2, gpu=3)
    with pytest.raises(SmokeError, match="with --tp 2 the engines use the first 2"):
        await run_smoke(pinned, lambda line: None, Report())
    assert not (tmp_path / "smoke" / "runs").exists()  # refused before anything started
