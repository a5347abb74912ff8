"""The console's transport and model work without Textual (so a future CLI or web face can reuse them)."""

from __future__ import annotations

import subprocess
import sys

from tests_console_data import production_snapshot

from agent.wire import Speculation
from console.model import ConsoleModel
from console.widgets.badge import badge_text
from console.widgets.status import status_left


def test_link_and_model_import_no_textual() -> None:
    code = (
        "import sys, console.link.ssh, console.link.local, console.link.replay, console.link.recording, "
        "console.link.client, console.model; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')]; "
        "assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_production_host_is_marked_in_the_status_line() -> None:
    model = ConsoleModel(clock=lambda: 0.0)
    model.ingest(production_snapshot(True))
    text = status_left(model, "ssh ops@gpu1")
    assert text.plain.startswith(" PRODUCTION ")
    assert any(str(span.style) == "$badge-bad" for span in text.spans), "the theme's alarm badge"
    model2 = ConsoleModel(clock=lambda: 0.0)
    model2.ingest(production_snapshot(False))
    assert "PRODUCTION" not in status_left(model2, "x").plain


def test_the_badge_says_why_speculation_is_off() -> None:
    off = badge_text(Speculation(configured=True, on=False, off_reason="above_threshold", threshold=4,
                                 threshold_available=True))  # fmt: skip
    assert "SPEC OFF" in off.plain and "at or above the threshold" in off.plain and "threshold 4" in off.plain
    on = badge_text(
        Speculation(configured=True, on=True, algorithm="EAGLE3", steps=3, topk=1, draft_tokens=4)
    )
    assert "SPEC ON" in on.plain and "3 steps" in on.plain and "topk 1" in on.plain
