"""The order a run measures in (passes over the levels, mirrored) and how its expected duration and ETA are made."""

from __future__ import annotations

import pytest

from agent.bench.progress import BenchProgress, RunTracker
from agent.bench.schedule import DurationModel, format_duration, plan


def test_repeats_are_passes_over_every_level_each_the_mirror_of_the_last() -> None:
    """An arm's repeats at a level lie a whole run apart (their spread holds the drift a second run
    meets), and each arm-level's repeats are symmetric about the middle of the run: a drift linear
    over the run adds the same to every arm's mean at every level."""
    steps = plan((1, 4), ("on", "off", "adaptive"), repeats=3)
    assert [(s.concurrency, s.repeat, s.arm) for s in steps] == [
        (1, 0, "on"), (1, 0, "off"), (1, 0, "adaptive"), (4, 0, "on"), (4, 0, "off"), (4, 0, "adaptive"),
        (4, 1, "adaptive"), (4, 1, "off"), (4, 1, "on"), (1, 1, "adaptive"), (1, 1, "off"), (1, 1, "on"),
        (1, 2, "on"), (1, 2, "off"), (1, 2, "adaptive"), (4, 2, "on"), (4, 2, "off"), (4, 2, "adaptive"),
    ]  # fmt: skip
    assert [s.index for s in steps] == list(range(18))
    assert {s.level_index for s in steps if s.concurrency == 4} == {1}
    two = plan((1, 4, 16), ("on", "off"), repeats=2)
    middle = (len(two) - 1) / 2
    for cell in {(s.concurrency, s.arm) for s in two}:
        at = [s.index for s in two if (s.concurrency, s.arm) == cell]
        assert sum(at) / 2 == middle, cell


def test_the_guess_follows_what_was_measured() -> None:
    model = DurationModel(min_window_s=1.0, probe_s=0.2)
    before = model.guess(64)
    assert before == pytest.approx(0.15 + 1.6 + 2 * 1.6), "probe x sqrt(C): a request, then two of them"
    model.record(1, 1.3, request_s=0.2)
    model.record(2, 1.4, request_s=0.3)
    assert model.guess(1) == pytest.approx(1.3) and model.guess(2) == pytest.approx(1.4)
    # request time grew 1.5x per doubling from 1 to 2: at 8 (two doublings on) it is 0.3 x 1.5^2
    assert model.request_s(8) == pytest.approx(0.3 * 1.5**2)
    model.record(4, 2.0, request_s=0.3)
    assert model.request_s(16) == pytest.approx(0.3), "flat from 2 to 4: flat onwards (growth kept >= 1)"
    model.record(8, 2.0, request_s=2.4)
    assert model.request_s(16) == pytest.approx(2.4 * 2), "growth per doubling kept <= 2"


def test_a_probe_at_the_top_level_is_interpolated_to() -> None:
    model = DurationModel(min_window_s=1.0, probe_s=0.2, probes={128: 0.8})
    assert model.request_s(128) == pytest.approx(0.8)
    # log-log between (1, 0.2) and (128, 0.8): halfway in log C (c = sqrt(128)) is the geometric mean
    assert model.request_s(128**0.5) == pytest.approx((0.2 * 0.8) ** 0.5)
    model.record(16, 1.5, request_s=0.5)
    assert 0.5 < model.request_s(32) < 0.8, "a measured level replaces the probe below it"


def test_progress_reports_the_plan_and_an_eta_that_counts_down() -> None:
    seen: list[BenchProgress] = []
    steps = plan((1, 2), ("sweep",), repeats=2)
    tracker = RunTracker(steps, DurationModel(min_window_s=1.0, probe_s=0.1), 2, 2, seen.append)
    expected = tracker.planned()
    assert seen[0].phase == "planned" and "4 steps (2 levels x 1 arms x 2 repeats)" in seen[0].message
    assert seen[0].eta_s == pytest.approx(expected, abs=0.1) and seen[0].fraction == pytest.approx(
        0, abs=0.01
    )
    for step in steps:
        tracker.begin(step)
        tracker.measured(step, "done", request_s=0.1)
    last = seen[-1]
    assert last.phase == "measured" and last.step == last.steps == 4 and last.eta_s == 0
    assert [p.eta_s for p in seen[1:]] == sorted((p.eta_s for p in seen[1:]), reverse=True)


def test_durations_read_as_words() -> None:
    assert format_duration(42.4) == "42 s" and format_duration(150) == "2 min 30 s"
