"""The runner says when the simulator falls behind the wall clock (the host too busy for the speedup)."""

from __future__ import annotations

import logging

import pytest

from agent.profile.schema import Profile
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.runner import LAG_WARN_S, LAG_WINDOW_S, EngineRunner


def test_a_window_with_a_late_step_is_logged_once(
    local_sim: Profile, caplog: pytest.LogCaptureFixture
) -> None:
    runner = EngineRunner(Engine(sim_config(local_sim), seed=1), speedup=20)
    caplog.set_level(logging.WARNING, logger="agent.sim.runner")
    runner._note_lag(LAG_WARN_S / 2, 1.0)  # on time enough: nothing to say
    runner._note_lag(0.0, LAG_WINDOW_S + 0.5)
    assert runner.lag_warnings == 0 and not caplog.records

    runner._note_lag(0.080, LAG_WINDOW_S + 1.0)
    runner._note_lag(0.040, LAG_WINDOW_S + 2.0)
    assert not caplog.records, "reported once per window, when the window closes"
    runner._note_lag(0.0, 2 * LAG_WINDOW_S + 1.0)
    assert runner.lag_warnings == 1
    message = caplog.records[0].getMessage()
    assert "fell behind" in message and "2 steps" in message and "80 ms" in message
    assert "1.60 modelled s" in message  # 80 ms wall at speedup 20

    runner._note_lag(0.0, 3 * LAG_WINDOW_S + 2.0)
    assert runner.lag_warnings == 1, "a window without late steps says nothing"
