"""Widget helpers and the command registry."""

from __future__ import annotations

from console.registry import COMMANDS, SCREENS, bindings, writing_actions
from console.widgets.format import sparkline
from console.widgets.stacked_bar import Segment, render_bar


def test_stacked_bar_fills_the_width_in_proportion() -> None:
    bar = render_bar([Segment("a", 50, "red"), Segment("b", 25, "blue"), Segment("c", 25, "green")], 40)
    assert bar.cell_len == 40
    spans = {(s.start, s.end): str(s.style) for s in bar.spans}
    assert spans[(0, 20)] == "red"
    assert spans[(20, 30)] == "blue"
    assert spans[(30, 40)] == "green"


def test_stacked_bar_eighths_and_empty_pool() -> None:
    bar = render_bar([Segment("a", 1, "red"), Segment("b", 99, "blue")], 10)
    assert bar.cell_len == 10 and bar.plain[0] in "▏▎▍▌▋▊▉█"
    assert render_bar([Segment("a", 0, "red")], 5).plain == "░░░░░"


def test_sparkline_scales_and_blanks_unknowns() -> None:
    assert sparkline([0, 50, 100, None], 100) == "▁▅█ "


def test_every_screen_has_a_key_and_every_writing_command_is_marked() -> None:
    keys = [b.key for b in bindings()]
    assert len(keys) == len(set(keys)), "two commands share a key"
    for mode, key, _, _ in SCREENS:
        assert key in keys
        assert any(c.action == f"app.show('{mode}')" for c in COMMANDS)
    assert {"apply", "bench_start", "profile"} <= writing_actions()
    assert not {"show", "profile_diff", "kv_whatif", "toggle_pause"} & writing_actions()


def test_the_what_to_do_line_offers_the_findings_action_else_its_advice_else_nothing() -> None:
    """Issue 48: one "what to do" line beside the live threshold (the Overview draws it)."""
    from agent.wire import Finding
    from agent.wire.snapshot import ActionOffer
    from console.model.health import HealthItem
    from console.widgets.todo import todo_text

    def finding(severity: str, offer: ActionOffer | None = None) -> Finding:
        return Finding(code="x", severity=severity, title="Drafting at 250 running", explanation="",  # type: ignore[arg-type]
                       action="Set the threshold to 142", offer=offer)  # fmt: skip

    offered = finding("warning", ActionOffer(kind="threshold", value=142))
    line = todo_text([HealthItem(offered)], offered).plain
    assert line.startswith("What to do: threshold → 142 (Drafting at 250 running)") and "[d] plan it" in line
    assert todo_text([HealthItem(finding("critical"))], None).plain == "What to do: Set the threshold to 142"
    assert (
        "nothing urgent (1 finding below, for information)"
        in todo_text([HealthItem(finding("info"))], None).plain
    )
    assert todo_text([], None).plain == "What to do: nothing: no health findings"
    assert any(c.action == "do_offer" and c.key == "d" and c.writes for c in COMMANDS)
