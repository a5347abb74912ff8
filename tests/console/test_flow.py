"""``console.widgets.flow.Flow``: lines that break between figures, never inside one."""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from rich.text import Text

from console.widgets.flow import SEPARATOR, Flow


def drawn(flow: Flow, width: int) -> list[str]:
    console = Console(file=StringIO(), width=width, color_system=None)
    console.print(flow)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    return [line.rstrip() for line in output.splitlines()]


def test_groups_share_a_line_while_they_fit_and_move_whole_when_not() -> None:
    flow = Flow("TTFT p50 124 ms p99 380 ms", "ITL p50 72 ms over 29 s")
    whole = f"TTFT p50 124 ms p99 380 ms{SEPARATOR}ITL p50 72 ms over 29 s"
    assert drawn(flow, len(whole)) == [whole]
    assert drawn(flow, len(whole) - 1) == ["TTFT p50 124 ms p99 380 ms", "ITL p50 72 ms over 29 s"]
    assert flow.plain == whole, "the plain text reads as on a wide screen"


def test_each_line_starts_anew_and_only_a_group_wider_than_the_screen_wraps_inside() -> None:
    flow = Flow(Text("SPEC OFF"), "threshold 130 · 65 running").add_line(
        "a reason that is a whole sentence long"
    )
    assert drawn(flow, 40) == [
        "SPEC OFF   threshold 130 · 65 running",
        "a reason that is a whole sentence long",
    ]
    assert drawn(flow, 20) == [
        "SPEC OFF",
        "threshold 130 · 65",
        "running",
        "a reason that is a",
        "whole sentence long",
    ]
    assert Flow("a", "", Text(""), "b").plain == f"a{SEPARATOR}b", "empty groups are left out"
