"""The speculation autopilot in the console: its state on Overview, its toggle on Controls.

The agent decides everything (``Snapshot.autopilot``, ``agent.wire.AutopilotState``); these widgets
only draw it. The toggle posts ``AutopilotToggle.Asked`` and its screen runs the same plan → confirm
→ apply as every other control: a widget draws and asks, it never acts on the agent itself.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Label, Static

from agent.wire import CATALOGUE, AutopilotMove, AutopilotState
from console.widgets.flow import Flow
from console.widgets.format import DASH, clock

_MODE_STYLE = {
    "tracking": "$badge-ok",
    "learning": "$badge-info",
    "probing": "$badge-warn",
    "waiting": "$badge-info",
    "holding": "$badge-bad",
    "unavailable": "$badge-bad",
}


def threshold_words(threshold: int | None) -> str:
    """The catalogue's words ("none" for 0); a dash for a value the agent did not give."""
    return DASH if threshold is None else CATALOGUE["threshold"].words(threshold)


def steps_words(steps: int | None) -> str:
    """The catalogue's words ("not pinned": SGLang's policy chooses); a dash for no value."""
    return DASH if steps is None else CATALOGUE["steps"].words(steps)


def crossover_words(state: AutopilotState) -> str:
    if state.crossover is not None:
        span = ""
        if state.crossover_low is not None and state.crossover_high is not None:
            span = f" ({state.crossover_low:.0f}–{state.crossover_high:.0f})"
        return f"≈ {state.crossover:.0f}{span}"
    return state.crossover_note or "not measured yet"


def move_words(move: AutopilotMove) -> str:
    what = {"move": "moved", "probe": "probe", "probe_end": "probe ended", "revert": "reverted",
            "restore": "restored"}.get(move.kind, move.kind)  # fmt: skip
    change = f"threshold {threshold_words(move.threshold_from)} → {threshold_words(move.threshold_to)}"
    if move.steps_from != move.steps_to:
        change += f", steps {steps_words(move.steps_from)} → {steps_words(move.steps_to)}"
    failed = "" if move.ok else " (failed)"
    return f"{clock(move.time)} {what}{failed}: {change}"


def autopilot_text(state: AutopilotState | None, pinned: int | None = None) -> Flow:
    """Overview's lines: on/off, what it holds, the crossover with its uncertainty, the last move and why.

    Off, the operator's setting is what runs, and who decides the steps is said from ``pinned``, the
    engine's read-back (``Speculation.pinned_steps``, -1: SGLang's policy) that the badge, Controls
    and ``agent status`` read too: one source, so no line says "steps 3" while the badge says
    SGLang's policy chooses. None: no read-back this tick (a dash). Each figure is a group of the
    :class:`Flow` (the crossover with its span, the expected gain): a narrow screen moves it whole."""
    flow = Flow()
    if state is None:
        return flow  # an agent without one: nothing to say
    if not state.enabled:
        off = Text.assemble((" AUTOPILOT OFF ", "$badge-off"))
        off.append(
            f" the operator's setting runs: threshold {threshold_words(state.operator_threshold)}, "
            f"steps {steps_words(pinned)}",
            style="dim",
        )
        flow.add_line(off)
    else:
        holds = Text.assemble((f" AUTOPILOT {state.mode.upper()} ", _MODE_STYLE.get(state.mode, "bold")))
        holds.append(f" threshold {threshold_words(state.threshold)} · steps {steps_words(state.steps)}")
        crossover = Text.assemble(("crossover ", "dim"), (crossover_words(state), "bold"))
        gain = ""
        if state.expected_gain is not None:
            gain = (
                f"est. {state.expected_gain * 100:+.1f} % over the operator's "
                f"{threshold_words(state.operator_threshold)}"
            )
        flow.add_line(holds, crossover, Text(gain, style="dim"), separator=" · ")
        if state.detail and state.mode in ("holding", "unavailable", "waiting"):
            flow.add_line(Text(state.detail, style="$warn"))
        if state.prior is not None and state.crossover is None and state.crossover_note is None:
            flow.add_line(Text(f"starts from {state.prior}", style="$info"))
        if state.held is not None:
            flow.add_line(Text(f"not moving: {state.held}", style="dim"))
    move = state.last_move
    if move is not None:
        last = Text.assemble(("last: ", "dim"), (move_words(move), "" if move.ok else "$bad"))
        flow.add_line(last, Text(f"— {move.why}", style="dim"), separator=" ")  # the move whole, then why
    return flow


class AutopilotLine(Static):
    """Overview's autopilot lines; hidden for an agent that reports no autopilot (an older one)."""

    def on_mount(self) -> None:
        self.display = False

    def show(self, state: AutopilotState | None, pinned: int | None = None) -> None:
        self.display = state is not None
        if state is not None:
            self.update(autopilot_text(state, pinned))


class AutopilotToggle(Horizontal):
    """Controls' toggle: asks its screen to plan "autopilot on" or "off", confirm and apply."""

    DEFAULT_CSS = """
    AutopilotToggle { height: auto; }
    AutopilotToggle #autopilot-now { width: 1fr; height: auto; margin-left: 1; }
    """

    def __init__(self) -> None:
        super().__init__(classes="form-row", id="autopilot-row")
        self.enabled: bool | None = None

    def compose(self) -> ComposeResult:
        yield Label("autopilot", classes="field")
        yield Button("Turn on", id="apply-autopilot", classes="apply", compact=True)
        yield Static("", id="autopilot-now")

    def on_mount(self) -> None:
        self.display = False

    def show(self, state: AutopilotState | None) -> None:
        """Hidden for an agent that reports no autopilot (an older one)."""
        self.display = state is not None
        self.enabled = None if state is None else state.enabled
        if state is None:
            return
        button = self.query_one("#apply-autopilot", Button)
        now = self.query_one("#autopilot-now", Static)
        button.label = "Turn off" if state.enabled else "Turn on"
        shown = Text(f"{'on' if state.enabled else 'off'}", style="bold")
        if state.enabled:
            shown.append(f" ({state.mode}): threshold {threshold_words(state.threshold)}, ")
            shown.append(f"steps {steps_words(state.steps)}; crossover {crossover_words(state)}")
        else:
            shown.append(f": the operator's threshold {threshold_words(state.operator_threshold)} runs")
        limit = Text(f"at most {state.max_moves_per_minute or DASH} changes a minute", style="dim")
        now.update(Flow(shown, limit))  # the limit moves whole to the next line, never "4" / "changes"

    class Asked(Message):
        """The operator pressed the toggle: ``enable`` is the opposite of what the agent reports,
        or None when this agent reports no autopilot."""

        def __init__(self, enable: bool | None) -> None:
            super().__init__()
            self.enable = enable

    @on(Button.Pressed, "#apply-autopilot")
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()  # the screen's own Apply handler is for its fields
        self.post_message(self.Asked(None if self.enabled is None else not self.enabled))
