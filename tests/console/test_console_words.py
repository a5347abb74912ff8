"""Human words only: values in an operator's units, dialogs that name what they change."""

from __future__ import annotations

from io import StringIO

from rich.console import Console, RenderableType

from agent.wire import ActionRequest, Change, Event, Load, Plan, Speculation
from console.model.actions import ActionTracker
from console.screens.action_flow import action_line
from console.screens.confirm import plan_text, plan_title
from console.widgets.badge import accept_text, badge_text
from console.widgets.format import duration, human, human_setting

REPRS = ("{'", "None", "True", "False", "[]")


def rendered(renderable: RenderableType, width: int = 100) -> str:
    buffer = StringIO()
    Console(file=buffer, width=width, color_system=None).print(renderable)
    return buffer.getvalue()


def test_values_read_as_an_operator_writes_them() -> None:
    assert [human(v) for v in (None, True, False, [], [1, 2, 3], {"threshold": 64}, 0.85, 3.0, "x")] == [
        "unset", "on", "off", "none", "1, 2, 3", "threshold = 64", "0.85", "3", "x",
    ]  # fmt: skip
    assert human_setting("speculation.threshold", None) == "none (speculate at every batch size)"
    assert human_setting("speculation.live_steps", None) == "unset"
    assert [duration(s) for s in (5, 130, 1800, 3900)] == ["5 s", "2 m 10 s", "30 m", "1 h 5 m"]


def plan(kind: str, value: object, changes: list[Change], mode: str = "restart") -> Plan:
    request = ActionRequest(request_id="r" * 8, kind=kind, value=value)  # type: ignore[arg-type]
    return Plan(action_id="act-1", request=request, mode=mode, reason="why", changes=changes,  # type: ignore[arg-type]
                expected_downtime_s=20.0, drain_timeout_s=60.0)  # fmt: skip


def test_a_dialog_names_the_profile_and_writes_no_python() -> None:
    load = plan("apply_profile", "kimi-k25-baseline", [Change(key="speculation.threshold", old=64, new=None),
                Change(key="speculation.adaptive", old=True, new=False), Change(key="speculation.live_steps",
                old=[1, 2, 3], new=[])])  # fmt: skip
    assert (
        plan_title(load, "kimi-k25-eagle3") == "Load profile kimi-k25-baseline in place of kimi-k25-eagle3?"
    )
    text = rendered(plan_text(load))
    assert "64 → none (speculate at every batch size)" in text
    assert "on → off" in text and "1, 2, 3 → none" in text
    assert not [r for r in REPRS if r in text]
    adaptive = plan("adaptive", False, [])
    assert plan_title(adaptive, "local-sim") == "Turn adaptive speculation off on local-sim?"
    assert (
        plan_title(plan("threshold", 0, [], "live"))
        == "Remove the speculation threshold (speculate at every batch size)?"
    )


def test_the_badge_keeps_the_threshold_before_the_reason_and_the_whole_reason() -> None:
    detail = ("130 requests are running, at or above the threshold of 125: the server decodes without "
              "drafting until the batch is smaller than that.")  # fmt: skip
    spec = Speculation(configured=True, on=False, off_reason="above_threshold", off_detail=detail,
                       threshold=125, threshold_available=True)  # fmt: skip
    text = badge_text(spec, Load(running=130))
    first_line = text.plain.splitlines()[0]
    assert first_line.startswith(" SPEC OFF ") and "threshold 125 · 130 running" in first_line
    assert text.plain.splitlines()[1] == detail


def test_accept_length_is_a_dash_unless_drafting_with_traffic() -> None:
    on = Speculation(on=True, accept_length=2.46)
    assert accept_text(on, Load(running=3)).plain == "2.46"
    assert accept_text(on, Load(running=0)).plain == "– (idle)"
    assert (
        accept_text(Speculation(on=False, accept_length=1.0), Load(running=300)).plain == "– (not drafting)"
    )


def test_the_actions_log_uses_the_consoles_words_for_its_own_actions() -> None:
    tracker = ActionTracker()
    tracker.label("act-1", "adaptive → off")
    applied = Event(seq=1, time=0.0, kind="action", name="action.applied", message="adaptive False: done",
                    data={"action_id": "act-1"})  # fmt: skip
    assert action_line(applied, tracker).plain == "00:00:00 adaptive → off: applied"
    failed = Event(seq=2, time=0.0, kind="action", name="action.failed", message="topk 2: engine crashed",
                   data={"action_id": "act-2", "kind": "topk", "value": 2})  # fmt: skip
    assert action_line(failed, tracker).plain == "00:00:00 topk → 2: failed — engine crashed"
