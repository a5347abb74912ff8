"""The stopping rule: windows are added at a level until its intervals are within the operator's bound,
the run's budget would be overrun, or the level has the most windows it may take; the result says
which, per level. The loop is driven first with set noise on a set clock (every number known), then
end to end over real HTTP against the scripted engine and the simulator, with chosen arms."""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent.bench.aggregate import RunOutcome
from agent.bench.compare import run_compare
from agent.bench.engine import EngineError
from agent.bench.estimate import estimate
from agent.bench.options import BenchOptions
from agent.bench.progress import BenchProgress, RunTracker
from agent.bench.report import compare_table, sweep_table
from agent.bench.runner import BenchRuns
from agent.bench.schedule import DurationModel, Step
from agent.bench.stopping import (
    DEFAULT_MAX_WINDOWS,
    DEFAULT_MIN_WINDOWS,
    StopRule,
    StopRuleError,
    first_steps,
    measure,
    parse_budget,
    parse_until,
)
from agent.bench.store import BenchStore
from agent.bench.sweep import run_sweep
from agent.profile.store import load_profile
from agent.sglang.live_control import LIVE_THRESHOLD_KEY
from agent.sim.server import run_sim
from agent.wire.bench_request import BenchRequest
from agent.wire.bench_result import BenchResult
from tests.bench.scripted_engine import Request, ScriptedEngine, serve

# ------------------------------------------------------------------ the rule's words and limits


def test_the_bound_and_the_budget_read_as_an_operator_writes_them() -> None:
    assert parse_until("4%") == parse_until("4 %") == parse_until("0.04") == pytest.approx(0.04)
    assert parse_budget("1200") == parse_budget("1200s") == parse_budget("20m") == 1200.0
    assert parse_budget("1h30m") == 5400.0 and parse_budget("1.5h") == 5400.0
    for bad, field, words in (
        ("four", "until", "not a share"),
        ("soon", "budget", "not a duration"),
        ("", "budget", "not a duration"),
    ):
        with pytest.raises(StopRuleError, match=words) as info:
            (parse_until if field == "until" else parse_budget)(bad)
        assert info.value.field_name == field


def _refusal(body: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(ValidationError) as info:
        BenchRequest.model_validate(body)
    [error] = info.value.errors()
    return str(error["loc"][0]), error["msg"]


def test_a_rule_needs_a_bound_or_a_budget_and_sane_window_counts() -> None:
    assert BenchRequest().stop is None
    rule = BenchRequest(until=0.04).stop
    assert rule == StopRule(until=0.04, min_windows=DEFAULT_MIN_WINDOWS, max_windows=DEFAULT_MAX_WINDOWS)
    assert (DEFAULT_MIN_WINDOWS, DEFAULT_MAX_WINDOWS) == (4, 12)
    assert rule.words() == (
        "until every arm's 95 % interval is within ±4 % (4 to 12 windows of every arm at a level)"
    )
    budget = BenchRequest(budget_s=600, min_windows=2, max_windows=5).stop
    assert budget is not None and budget.words() == (
        "until the run's budget of 10 min 00 s runs out (2 to 5 windows of every arm at a level)"
    )
    for body, field in (
        ({"min_windows": 4}, "min_windows"),
        ({"until": 0.04, "min_windows": 1}, "min_windows"),
        ({"until": 0.04, "min_windows": 6, "max_windows": 5}, "max_windows"),
        ({"until": 0.04, "max_windows": 101}, "max_windows"),
        ({"until": 0.8}, "until"),
        ({"until": 0}, "until"),
        ({"budget_s": 5}, "budget_s"),
    ):
        assert _refusal(body)[0] == field, body


def test_a_body_gives_the_rule_and_the_arms_or_a_named_error() -> None:
    opts = BenchRequest.model_validate(
        {
            "mode": "compare",
            "until": 0.04,
            "budget_s": 900,
            "arms": ["baseline", "off"],
            "baseline_url": "http://127.0.0.1:9",
        }
    ).options
    assert opts.stop == StopRule(until=0.04, budget_s=900.0)
    assert opts.arms == ("off", "baseline"), "in the results' order"
    assert opts.public_dict()["arms"] == ["off", "baseline"]
    assert opts.public_dict()["stop"] == {
        "until": 0.04,
        "budget_s": 900.0,
        "min_windows": 4,
        "max_windows": 12,
    }
    for body, field, words in (
        ({"until": 0.04, "repeats": 3}, "repeats", "not with a stopping rule (until or budget_s)"),
        ({"until": "4%"}, "until", "a share from 0.005 to 0.5"),
        ({"budget_s": 1}, "budget_s", "from 10 to 86400"),
        ({"max_windows": 8}, "max_windows", "only with a stopping rule (until"),
        ({"arms": ["of"]}, "arms", "different arms of on, off, adaptive, baseline"),
        ({"arms": []}, "arms", "a list of 1 to 4"),
        ({"arms": ["on", "on"]}, "arms", "different arms"),
        ({"mode": "sweep", "arms": ["on"]}, "arms", "only a compare has arms"),
        ({"arms": ["baseline"]}, "arms", "needs baseline_url"),
    ):
        got, msg = _refusal(body)
        assert got == field and words in msg, (body, msg)


# ------------------------------------------------------------------ the loop, on a set clock


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _loop(
    noise: dict[tuple[str, int], float],
    step_s: float,
    clock: Clock,
    seed: int = 3,
    eta: list[float] | None = None,
) -> tuple[Any, list[Step]]:
    """A step runner whose windows scatter by ``noise[(arm, level)]`` (relative): four slices a window,
    each scattering twice as much (so a window's slices predict its scatter, as on a steady engine),
    each step taking ``step_s`` on ``clock``; ``eta``: the seconds the run's duration model gives
    the steps projected but not yet added, at each step."""
    rng = random.Random(seed)
    ran: list[Step] = []
    tracker: list[RunTracker] = []

    async def run_step(step: Step) -> RunOutcome:
        ran.append(step)
        if eta is not None and tracker:
            eta.append(tracker[0].model.remaining(tracker[0].projected))
        clock.now += step_s
        sigma = noise[(step.arm, step.level_index)]
        slices = [(1000.0 * math.exp(rng.gauss(0.0, 2 * sigma)), 1.0) for _ in range(4)]
        figure = sum(t for t, _ in slices) / 4
        return RunOutcome({"window_s": 4.0, "output_throughput": figure}, ([], None), slices)  # type: ignore[arg-type]

    run_step.tracker = tracker  # type: ignore[attr-defined]
    return run_step, ran


def _tracker(steps: list[Step], step_s: float, seen: list[BenchProgress]) -> RunTracker:
    model = DurationModel(min_window_s=1.0)
    for c in (1, 64):
        model.record(c, step_s)
    return RunTracker(steps, model, 2, DEFAULT_MIN_WINDOWS, seen.append)


async def test_a_quiet_level_stops_at_the_bound_a_noisy_one_at_the_cap_and_says_what_would_do() -> None:
    levels, arms = (1, 64), ["off", "baseline"]
    noise = {("off", 0): 0.005, ("baseline", 0): 0.005, ("off", 1): 0.20, ("baseline", 1): 0.005}
    rule = StopRule(until=0.04, min_windows=4, max_windows=6)
    clock = Clock()
    steps = first_steps(levels, arms, rule, repeats=2)
    assert len(steps) == 2 * 2 * 4, "the minimum windows first, in mirrored passes over every level"
    seen: list[BenchProgress] = []
    run_step, ran = _loop(noise, 5.0, clock)
    outcomes, stops = await measure(
        levels, arms, rule, steps, _tracker(steps, 5.0, seen), run_step, 0.0, clock
    )
    quiet, noisy = stops[0], stops[1]
    assert quiet.outcome == "bound" and quiet.windows == 4
    assert all(w is not None and w <= 0.04 for w in quiet.reached.values())
    assert noisy.outcome == "max_windows" and noisy.windows == 6
    assert noisy.widest()[0] == "off" and (noisy.reached["off"] or 0) > 0.04
    assert noisy.advice is not None and "--min-window-s" in noisy.advice and "windows of" in noisy.advice
    assert "stopped at the cap of 6 windows (bound ±4 % not reached); widest off ±" in noisy.words(rule)
    # only the noisy level got more windows, every arm of it, in alternating order
    extra = ran[len(steps) :]
    assert {s.level_index for s in extra} == {1} and len(extra) == 2 * 2
    assert [s.arm for s in extra] == ["off", "baseline", "baseline", "off"], (
        "passes 5 and 6: on with the mirror"
    )
    assert [len(outcomes[(a, 1)]) for a in arms] == [6, 6] and [len(outcomes[(a, 0)]) for a in arms] == [4, 4]
    assert [s.repeat for s in extra] == [4, 4, 5, 5] and [s.index for s in extra] == list(range(16, 20))


async def test_the_budget_ends_a_level_whose_next_pass_would_overrun_it() -> None:
    levels, arms = (1, 64), ["on", "off"]
    noise = {(a, li): 0.3 for a in arms for li in (0, 1)}  # never within any bound
    rule = StopRule(until=0.01, budget_s=100.0, min_windows=2, max_windows=50)
    clock = Clock()
    steps = first_steps(levels, arms, rule, repeats=2)
    eta: list[float] = []
    run_step, _ = _loop(noise, 5.0, clock, eta=eta)
    tracker = _tracker(steps, 5.0, [])
    run_step.tracker.append(tracker)
    _, stops = await measure(levels, arms, rule, steps, tracker, run_step, 0.0, clock)
    assert {s.outcome for s in stops.values()} == {"budget"}
    assert clock.now <= 100.0, "no pass was started that would overrun the budget"
    assert clock.now > 100.0 - 2 * 5.0, "and the budget was used until the next pass did not fit"
    assert sum(s.windows for s in stops.values()) * 2 * 5.0 == clock.now
    words = stops[0].words(rule)
    assert words.startswith(f"budget spent after {stops[0].windows} windows (bound ±1 % not reached)")
    # while the rule ran, the ETA counted the windows it expected to add (up to the cap: the noise
    # never lets the bound be reached), and fewer as they were added
    extra = eta[len(steps) :]
    assert extra[0] == (rule.max_windows - rule.min_windows) * 2 * 2 * 5.0 - 2 * 5.0
    assert extra[-1] < extra[0]


async def test_without_a_rule_the_windows_are_fixed_and_said_so() -> None:
    levels, arms = (1,), ["sweep"]
    steps = first_steps(levels, arms, None, repeats=3)
    clock = Clock()
    run_step, ran = _loop({("sweep", 0): 0.01}, 1.0, clock)
    _, stops = await measure(levels, arms, None, steps, _tracker(steps, 1.0, []), run_step, 0.0, clock)
    assert len(ran) == 3 and stops[0].outcome == "fixed" and stops[0].windows == 3
    assert stops[0].words(None).startswith("3 windows of every arm, as asked; widest sweep ±")


# ------------------------------------------------------------------ end to end, real HTTP

QUICK = BenchOptions(
    concurrency=(4,), input_len=16, output_len=8, repeats=1, min_window_s=0.0, sample_interval_s=0.02,
    min_requests=8,
)  # fmt: skip


async def test_a_sweep_stops_at_the_bound_and_the_table_says_so() -> None:
    engine = ScriptedEngine(tokens_per_step=lambda req, spec, batch: 1)
    options = QUICK.model_copy(
        update={"stop": StopRule(until=0.2, min_windows=2, max_windows=8), "min_window_s": 0.2}
    )
    async with serve(engine) as url:
        result = await run_sweep(url, options)
    [level] = result["levels"]
    # one token a step for everyone: windows agree to a few % (more on a loaded host: the engine steps
    # on the wall clock, and CI's once needed 4 windows of 8 requests), so with windows of at least
    # 0.2 s the bound is met after the minimum or soon after, well before the cap
    windows = level["stopping"]["windows"]
    assert level["stopping"]["outcome"] == "bound" and 2 <= windows < 8
    assert level["repeats"] == windows and level["output_throughput_ci_rel"] <= 0.2
    assert result["stopping"]["rule"]["until"] == 0.2
    typed = BenchResult.model_validate(result)
    assert typed.levels[0].stopping is not None and typed.levels[0].stopping.outcome == "bound"
    table = sweep_table(
        typed.levels, typed.stopping.rule.words if typed.stopping and typed.stopping.rule else None
    )
    assert "stopping: windows were added at a level until every arm's 95 % interval is within ±20 %" in table
    assert f"  c=4: within ±20 % after {windows} windows; widest sweep ±" in table


def _wobbly(engine: ScriptedEngine) -> Any:
    """Speculation gives nothing; each step's speed (1 or 3 tokens) follows the cache flushes, which
    the bench makes once per window: window figures scatter by a factor of 3, whatever the arm."""

    def tokens(req: Request, speculating: bool, batch: int) -> int:
        return 1 + 2 * (engine.flushes % 2)

    return tokens


async def test_a_compare_of_chosen_arms_stops_a_scattered_level_at_the_cap() -> None:
    engine = ScriptedEngine(threshold=4)
    engine.tokens_per_step = _wobbly(engine)
    options = QUICK.model_copy(
        update={"arms": ("off", "adaptive"), "stop": StopRule(until=0.05, min_windows=2, max_windows=3)}
    )
    async with serve(engine) as url:
        result = await run_compare(url, options)
    [level] = result["levels"]
    assert result["arms"] == ["off", "adaptive"] and "on" not in level and "baseline" not in level
    assert level["stopping"]["outcome"] == "max_windows" and level["stopping"]["windows"] == 3
    assert set(level["stopping"]["reached"]) == {"off", "adaptive"}
    assert [s["arm"] for s in result["switches"]] == ["off", "adaptive", "adaptive", "off", "off", "adaptive"]
    assert result["recommended_threshold"] is None
    assert "(--arms)" in result["recommendation"]["reason"]
    thresholds = [a[LIVE_THRESHOLD_KEY] for a in engine.set_calls if LIVE_THRESHOLD_KEY in a]
    assert thresholds and thresholds[-1] == 4, "the operator's threshold is put back"
    table = compare_table(BenchResult.model_validate(result))
    assert "c=4: stopped at the cap of 3 windows (bound ±5 % not reached)" in table
    assert "on tok/s" not in table and "off tok/s" in table


async def test_arms_the_server_cannot_run_are_refused_or_said() -> None:
    engine = ScriptedEngine()
    async with serve(engine) as url:
        with pytest.raises(EngineError, match="the baseline arm needs a baseline URL"):
            await run_compare(url, QUICK.model_copy(update={"arms": ("off", "baseline")}))
    assert engine.requests_seen == 0, "refused before any request"


# ------------------------------------------------------------------ the command line and the agent's side

EAGLE3 = Path(__file__).resolve().parents[2] / "profiles" / "kimi-k25-eagle3.toml"


async def _agent(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli.main", "bench", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_the_cli_runs_chosen_arms_until_the_bound_and_prints_what_ended_each_level(
    tmp_path: Path,
) -> None:
    out = tmp_path / "compare.json"
    shape = ["--concurrency", "1,4", "--min-requests", "4", "--input-len", "32", "--output-len", "16",
             "--min-window-s", "0", "--drain-wait-s", "0"]  # fmt: skip
    rule = ["--until", "35%", "--min-windows", "2", "--max-windows", "3", "--arms", "off,adaptive"]
    async with run_sim(load_profile(EAGLE3), port=0, speedup=50, seed=7) as sim:
        rc, stdout, stderr = await _agent("compare", "--url", sim.url, *shape, *rule, "--json", str(out))
    assert rc == 0, stderr
    assert "plan: 8 steps first (2 levels x 2 arms x 2 windows, expected about" in stderr
    assert "then more windows at a level until every arm's 95 % interval is within ±35 %" in stderr
    result = json.loads(out.read_text())
    assert result["arms"] == ["off", "adaptive"] and result["options"]["arms"] == ["off", "adaptive"]
    assert result["options"]["stop"]["until"] == 0.35
    lines = stdout.splitlines()
    assert (
        "stopping: windows were added at a level until every arm's 95 % interval is within ±35 % (2 to 3 windows of every arm at a level)"
        in lines
    )
    for level in result["levels"]:
        stop = level["stopping"]
        assert stop["outcome"] in ("bound", "max_windows") and 2 <= stop["windows"] <= 3
        assert f"  c={level['concurrency']:g}: {stop['words']}" in lines
        assert set(stop["reached"]) == {"off", "adaptive"}
    assert "no recommended threshold: the run measured only off, adaptive (--arms)" in stdout


async def test_the_cli_refuses_a_rule_it_cannot_follow_before_sending_anything() -> None:
    url = ["--url", "http://127.0.0.1:9"]
    for args, flag, words in (
        (["--until", "4%", "--repeats", "3"], "--repeats", "not with a stopping rule (--until or --budget)"),
        (["--until", "lots"], "--until", "not a share"),
        (["--until", "80%"], "--until", "a share from 0.005 to 0.5"),
        (["--budget", "2s"], "--budget", "a number of seconds from 10 to 86400"),
        (
            ["--max-windows", "5"],
            "--max-windows",
            "only with a stopping rule (--until, a bound on the intervals",
        ),
        (["--arms", "off,baseline"], "--arms", "needs --baseline-url"),
        (["--arms", "fast"], "--arms", "different arms of on, off, adaptive, baseline"),
        (["--concurrency", "1,1"], "--concurrency", "different whole numbers from 1 to 4096"),
        (["--input-len", "0"], "--input-len", "a whole number from 1 to 1000000"),
    ):
        rc, _, err = await _agent("compare", *url, *args)
        assert rc == 2 and err.startswith(f"agent bench: {flag}") and words in err, (args, err)


async def test_the_agents_runner_takes_the_rule_and_the_arms_from_the_body(tmp_path: Path) -> None:
    runs = BenchRuns(BenchStore(tmp_path))
    body = {"mode": "compare", "concurrency": [4], "input_len": 32, "output_len": 16, "min_requests": 4,
            "min_window_s": 0, "drain_wait_s": 0, "until": 0.35, "min_windows": 2, "max_windows": 2,
            "arms": ["on", "off"]}  # fmt: skip
    async with run_sim(load_profile(EAGLE3), port=0, speedup=50, seed=5) as sim:
        record = await runs.wait(runs.start(sim.url, BenchRequest.model_validate(body)))
    assert record.state == "finished", record.error
    [level] = record.levels
    assert level.stopping is not None and level.stopping.windows == 2
    assert level.stopping.outcome in ("bound", "max_windows") and set(level.stopping.reached) == {"on", "off"}
    assert level.adaptive is None and record.arms == ["on", "off"]
    assert record.stopping is not None and record.stopping.rule is not None
    assert record.stopping.rule.until == 0.35


def test_the_plan_says_the_first_windows_and_the_longest_the_rule_may_take() -> None:
    fixed = estimate("compare", BenchOptions(concurrency=(1, 64), repeats=2), request_s=1.0)
    ruled = estimate(
        "compare",
        BenchOptions(concurrency=(1, 64), arms=("off",), stop=StopRule(until=0.04, budget_s=600.0)),
        baseline=True,
        request_s=1.0,
    )
    assert fixed.arms == ("on", "off", "adaptive") and fixed.at_most_s is None
    assert ruled.arms == ("off",) and ruled.steps == 2 * 4, "the first 4 windows of one arm at 2 levels"
    assert ruled.at_most_s is not None and ruled.expected_s < ruled.at_most_s <= 600.0
    assert "the first 4 windows of every arm, then more where the intervals need them" in ruled.basis
