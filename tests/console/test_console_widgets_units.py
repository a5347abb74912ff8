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
