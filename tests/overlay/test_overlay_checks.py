"""Every check of ``agent/install/overlay/checks``, one pytest test each (``cpu_lens`` checks twice),
as the GPU host's preflight runs them (``bench/real/zero_step_preflight.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.real.zero_step_preflight import overlay_checks

PLAN = overlay_checks().plan()


@pytest.mark.parametrize("check", PLAN, ids=[c.id for c in PLAN])
def test_overlay_check(check: Any, zero: Any) -> None:
    check.run(zero)
