"""Controls: the live speculation settings, and the plan → confirm → apply of a new one.

Each field shows what the server runs now and follows it, unless the operator is editing that
field; after a plan ends (applied, failed, cancelled, rejected) the field goes back to the live
value, so a reflexive Apply never re-sends an old typed value (which, for topk, would restart the
engine). An action that restarts the engine shows "applying" until the agent says it ended.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Select, Static

from agent.wire import ActionRequest
from console.model import ConsoleModel
from console.model.live_settings import LiveSettings, live_settings
from console.screens.base import LiveScreen
from console.screens.confirm import RELEASE_PINNED_STEPS
from console.session import FlowEnd, Pending, Session
from console.widgets.action_words import action_line, action_words, ended_text
from console.widgets.autopilot import AutopilotToggle
from console.widgets.badge import badge_text
from console.widgets.format import DASH, clock, human

Kind = Literal["threshold", "steps", "topk", "adaptive"]
KINDS: tuple[Kind, ...] = ("threshold", "steps", "topk", "adaptive")
EVENT_LINES = 8
SHOWN_PHASES = ("action.applying", "action.applied", "action.failed", "action.expired",
                "action.cancelled", "action.rejected")  # fmt: skip
"""The actions log leaves out "planned": a plan nobody confirmed changed nothing (its cancel is shown)."""


def field_text(kind: Kind, live: LiveSettings) -> str | bool | None:
    """What a field shows for the live value: digits for an Input, a bool for the adaptive Select."""
    value = live.value(kind)
    if kind == "adaptive":
        return value if isinstance(value, bool) else None
    return "" if value is None else str(value)


def live_hint(kind: Kind, live: LiveSettings, edited: bool, active: int | None = None) -> Text:
    """``active``: the step count in force now (the badge's), so Controls and Overview say one thing."""
    value = live.value(kind)
    if kind == "steps" and value is None and live.adaptive:
        words = "SGLang's policy chooses" + (f" ({active} now)" if active else "")
    elif kind == "steps" and value is not None:
        words = f"pinned at {value}"
    elif kind == "threshold" and value == 0:
        words = "none"
    else:
        words = DASH if value is None else human(value)
    if edited:
        return Text(f"edited · live {words}", style="$warn")
    return Text(f"live {words}", style="dim")


class ControlsScreen(LiveScreen):
    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._shown: dict[Kind, str | bool | None] = {}
        """The live value each field was last set to: a field whose value differs is being edited."""
        self._reset: set[Kind] = set(KINDS)
        self.pending: Pending | None = None
        self._active: int | None = None
        self._mine: set[str] = set()
        """Actions this screen planned: their own ends are its result line already."""
        self._said_at: float | None = None
        """Agent time of the newest action when the result line was written: a later action that
        ends (from any console) replaces the line, so no "applied" outlives a later change."""

    def compose_body(self) -> ComposeResult:
        yield Static(id="controls-now", classes="value")
        for kind, placeholder in (
            ("threshold", "running batch"),
            ("steps", "live step"),
            ("topk", "restart"),
        ):
            with Horizontal(classes="form-row"):
                yield Label(kind, classes="field")
                yield Input(
                    id=f"in-{kind}", type="integer", max_length=5, placeholder=placeholder, compact=True
                )
                yield Button("Apply", id=f"apply-{kind}", classes="apply", compact=True)
                if kind == "steps":
                    yield Button("Release", id="release-steps", classes="apply", compact=True, disabled=True)
                yield Static(id=f"live-{kind}", classes="live-hint")
        with Horizontal(classes="form-row"):
            yield Label("adaptive", classes="field")
            yield Select([("on", True), ("off", False)], prompt="unknown", id="in-adaptive", compact=True)
            yield Button("Apply", id="apply-adaptive", classes="apply", compact=True)
            yield Static(id="live-adaptive", classes="live-hint")
        yield AutopilotToggle()
        yield Static("", id="control-result")
        yield Label("Recent actions", classes="section")
        yield Static(id="action-log", classes="value")

    def on_mount(self) -> None:
        if self.session.readonly:
            for widget in self.query("Input, Select, Button.apply"):
                widget.disabled = True
            self._say(Text("Read-only: controls are disabled.", style="$info"))

    # -- following the server ---------------------------------------------------------------------
    def _current(self, kind: Kind) -> str | bool | None:
        if kind == "adaptive":
            value = self.query_one("#in-adaptive", Select).value
            return value if isinstance(value, bool) else None
        return self.query_one(f"#in-{kind}", Input).value

    def _set(self, kind: Kind, value: str | bool | None) -> None:
        if kind == "adaptive":
            select: Select[bool] = self.query_one("#in-adaptive", Select)
            select.value = Select.NULL if value is None else bool(value)
        else:
            self.query_one(f"#in-{kind}", Input).value = "" if value is None else str(value)
        self._shown[kind] = value

    def editing(self, kind: Kind) -> bool:
        """The operator has typed or chosen something in this field that is not the live value."""
        return kind in self._shown and self._current(kind) != self._shown[kind]

    def _follow(self, live: LiveSettings) -> None:
        for kind in KINDS:
            value = field_text(kind, live)
            if kind in self._reset or not self.editing(kind):
                if self._current(kind) != value or kind not in self._shown:
                    self._set(kind, value)
                self._shown[kind] = value
                self._reset.discard(kind)
            self.query_one(f"#live-{kind}", Static).update(
                live_hint(kind, live, self.editing(kind), self._active)
            )

    def paint_body(self, model: ConsoleModel) -> None:
        snap = model.latest
        if snap is None:
            return
        spec = snap.speculation
        live = live_settings(spec)
        self._active = spec.steps if spec.on else None
        self._follow_pending(model)  # first: an action that just ended puts its field back on live
        self._follow(live)
        text = badge_text(spec, snap.load, stale=model.stale)
        prebuilt = human(spec.prebuilt_steps) if spec.prebuilt_steps else DASH
        text.append(f"\nbuilt step states: {prebuilt}", style="dim")
        self.query_one("#controls-now", Static).update(text)
        self.query_one("#release-steps", Button).disabled = self.session.readonly or live.steps is None
        self._forget_old_result(model)
        self.query_one(AutopilotToggle).show(snap.autopilot)
        actions = [e for e in model.events if e.name in SHOWN_PHASES][-EVENT_LINES:]
        log = Text()
        for n, event in enumerate(actions):
            if n:
                log.append("\n")
            log.append_text(action_line(event, model.actions))
        self.query_one("#action-log", Static).update(log if actions else Text("none yet", style="dim"))

    def _follow_pending(self, model: ConsoleModel) -> None:
        pending = self.pending
        if pending is None:
            return
        state = model.actions.get(pending.action_id)
        if state is not None and state.ended:
            self.pending = None
            self._say(ended_text(pending.request, state))
            self._reset.add(_kind(pending.request))

    # -- applying ---------------------------------------------------------------------------------
    # -- the registry's commands (palette and help): this screen's own actions ---------------------
    def action_apply(self, kind: str) -> None:
        if kind in KINDS:
            self.apply(kind)

    def action_release_steps(self) -> None:
        self.release_steps()

    @on(Button.Pressed, ".apply")
    def _apply_pressed(self, event: Button.Pressed) -> None:
        kind = str(event.button.id).removeprefix("apply-")
        if kind in KINDS:
            self.apply(kind)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        kind = str(event.input.id).removeprefix("in-")
        if kind in ("threshold", "steps", "topk"):
            self.apply(kind)

    def _value(self, kind: Kind) -> int | bool | None:
        current = self._current(kind)
        if kind == "adaptive" or current is None:
            return current if isinstance(current, bool) else None
        try:
            return int(str(current).strip())
        except ValueError:
            return None

    def _say(self, text: Text | str) -> None:
        self.query_one("#control-result", Static).update(text)
        ended = self.session.model.actions.ended_since(0.0)
        self._said_at = ended[-1].time if ended else 0.0

    def _forget_old_result(self, model: ConsoleModel) -> None:
        """A result line is about the last action this screen ran; once another action ends after it
        (a profile load, another console's change), the line says that one instead."""
        if self._said_at is None or self.pending is not None:
            return
        later = [a for a in model.actions.ended_since(self._said_at + 1e-6) if a.action_id not in self._mine]
        if later:
            last = later[-1]
            event = next((e for e in reversed(model.events) if e.data.get("action_id") == last.action_id
                          and e.name in SHOWN_PHASES), None)  # fmt: skip
            line = Text("Latest: ", style="dim")
            line.append_text(action_words(event, model.actions) if event is not None else Text(last.message))
            line.append(f" at {clock(last.time)} UTC.", style="dim")
            self.query_one("#control-result", Static).update(line)
            self._said_at = last.time

    async def _flow(self, kind: Kind, value: int | bool) -> FlowEnd:
        end = await self.session.plan_confirm_apply(kind, value, self._say)
        if end.action_id is not None:
            self._mine.add(end.action_id)
        return end

    @on(AutopilotToggle.Asked)
    def _autopilot_asked(self, event: AutopilotToggle.Asked) -> None:
        self.toggle_autopilot(event.enable)

    @work(exclusive=True, group="control")
    async def toggle_autopilot(self, enable: bool | None) -> None:
        """Plan the opposite of what the agent reports, confirm it, apply it; never without the confirm."""
        say = self.query_one("#control-result", Static).update
        if self.session.readonly:
            say(Text("Read-only: controls are disabled.", style="$info"))
            return
        if enable is None:
            say(Text("This agent reports no autopilot.", style="$warn"))
            return
        await self.session.plan_confirm_apply("autopilot", enable, say)

    @on(Button.Pressed, "#release-steps")
    def _release_pressed(self) -> None:
        self.release_steps()

    @work(exclusive=True, group="control")
    async def release_steps(self) -> None:
        """Hand the step choice back to SGLang's policy: planned, confirmed and audited like any change."""
        if self.session.readonly:
            self._say(Text("Read-only: controls are disabled.", style="$info"))
            return
        end = await self._flow("steps", RELEASE_PINNED_STEPS)
        if end.outcome != "unreachable":
            self._reset.add("steps")
        self.painted_version = -1
        self.session.paint_now()

    @work(exclusive=True, group="control")
    async def apply(self, kind: Kind) -> None:
        """Plan → (rejected: say why) → confirm → apply. Never changes anything without a confirm."""
        if self.session.readonly:
            self._say(Text("Read-only: controls are disabled.", style="$info"))
            return
        if self.pending is not None:
            self._say(Text("An action is still applying; wait until the agent says it ended.", style="$warn"))
            return
        value = self._value(kind)
        if value is None:
            self._say(Text(f"{kind} needs a value" + ("" if kind == "adaptive" else " (a whole number)"),
                           style="$bad"))  # fmt: skip
            return
        end = await self._flow(kind, value)
        result = end.result
        if result is not None and result.status == "applying":
            self.pending = Pending(result.plan.request, result.action_id)
        else:
            # Applied, failed, cancelled, refused or nothing to do: the field shows what runs again (a
            # refused value changed nothing; the result line names it and why it was refused).
            self._reset.add(kind)
        self.painted_version = -1  # the terminal event may already be in the model
        self.session.paint_now()


def _kind(request: ActionRequest) -> Kind:
    return request.kind if request.kind in KINDS else "threshold"
