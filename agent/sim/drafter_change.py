"""A drafter that changes while the simulated engine runs: how the demo and the tests make the
acceptance findings happen.

``agent sim --drafter-change AFTER_S:NAME`` serves with the profile's drafter (``--draft-acceptance``)
and, once the engine's clock passes ``AFTER_S`` modelled seconds, draws the acceptance of every request
that arrives from then on from ``NAME`` (one of ``agent.sim.workload.ACCEPTANCE_NAMES``):

* ``random`` or ``low``: a drafter that stops matching the traffic (the accept length falls to 1, or
  to about 1.45): the acceptance-collapse and wasted-drafts findings;
* ``oracle``: a looping client, whose repetitive output the drafter predicts every time (the accept
  length holds at steps + 1): the loop finding.

Requests already running keep what they drew, as a real request keeps its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agent.sim.calibration import Acceptance
from agent.sim.workload import ACCEPTANCE_NAMES, acceptance_named

MAX_AFTER_S: Final = 86_400.0


@dataclass(frozen=True)
class DrafterChange:
    after_s: float
    """Modelled seconds after the engine started."""
    name: str

    @property
    def acceptance(self) -> Acceptance:
        return acceptance_named(self.name)

    def __str__(self) -> str:
        return f"{self.after_s:g}:{self.name}"


def parse_drafter_change(text: str) -> DrafterChange:
    """``AFTER_S:NAME``; a ValueError says what is allowed (argparse shows it as the option's error)."""
    after, sep, name = text.strip().partition(":")
    allowed = ", ".join(ACCEPTANCE_NAMES)
    if not sep or name not in ACCEPTANCE_NAMES:
        raise ValueError(f"want AFTER_S:NAME with NAME one of {allowed}, e.g. 60:random; got {text[:40]!r}")
    try:
        seconds = float(after)
    except ValueError:
        raise ValueError(f"AFTER_S must be a number of seconds, got {after[:20]!r}") from None
    if not 0.0 <= seconds <= MAX_AFTER_S:
        raise ValueError(f"AFTER_S must be between 0 and {MAX_AFTER_S:g} seconds, got {seconds:g}")
    return DrafterChange(seconds, name)
