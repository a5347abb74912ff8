"""Controls: the live speculation settings, and the plan → confirm → apply of a new one.

Each field shows what the server runs now and follows it, unless the operator is editing that
field; after a plan ends (applied, failed, cancelled, rejected) the field goes back to the live
value, so a reflexive Apply never re-sends an old typed value (which, for topk, would restart the
engine). An action that restarts the engine shows "applying" until the agent says it ended.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Select, Static

from agent.wire import ActionEvent, ActionRequest
from agent.wire.actions import (
    CATALOGUE,
    SWITCH_WORDS,
    ActionKind,
    ActionSpec,
    built_steps_words,
    of_kinds,
    spec_of,
)
from console.model import ConsoleModel
from console.model.live_settings import LiveSettings, live_settings
from console.screens.base import LiveScreen
from console.session import FlowEnd, Pending, Session
from console.widgets.action_words import action_line, action_words, ended_text
from console.widgets.autopilot import AutopilotToggle
from console.widgets.badge import badge_text
from console.widgets.format import DASH, clock

FIELDS: tuple[ActionSpec, ...] = of_kinds(("input", "select"))
"""Controls' fields, one per kind of the action catalogue offered here, in its order."""
KINDS: tuple[ActionKind, ...] = tuple(spec.kind for spec in FIELDS)
TYPED: tuple[ActionKind, ...] = tuple(spec.kind for spec in FIELDS if spec.place == "input")
BUTTONS: tuple[ActionSpec, ...] = of_kinds(("button",))
"""Kinds that take no value, each a button of its own (undo)."""
EVENT_LINES = 8
SHOWN_PHASES = ("action.applying", "action.applied", "action.failed", "action.expired",
                "action.cancelled", "action.rejected")  # fmt: skip
"""The actions log leaves out "planned": a plan nobody confirmed changed nothing (its cancel is shown)."""


def field_text(kind: ActionKind, live: LiveSettings) -> str | bool | None:
    """What a field shows for the live value: the catalogue's words for an Input (a threshold of 0 is
    "none", never the sentinel), a bool for a select; empty where the server gives none (steps not
    pinned)."""
    value = live.value(kind)
    spec = CATALOGUE[kind]
    if spec.takes == "switch":
        return value if isinstance(value, bool) else None
    return "" if value is None else spec.words(value)


def live_hint(kind: ActionKind, live: LiveSettings, edited: bool, active: int | None = None) -> Text:
    """``active``: the step count in force now (the badge's), so Controls and Overview say one thing."""
    value = live.value(kind)
    spec = CATALOGUE[kind]
    if kind == "steps" and value is None and live.adaptive:
        words = spec.words(None) + (f", {active} now" if active else "")  # short: it fits 80 columns
    elif kind == "steps" and value is not None:
        words = f"pinned at {value}"
    else:
        words = DASH if value is None else spec.words(value)
    if edited:
        return Text(f"edited · live {words}", style="$warn")
    return Text(f"live {words}", style="dim")


def built_text(prebuilt: list[int]) -> str:
    """The steps the server built, in the catalogue's words (the plans say the same), and whether its
    0-step state (no drafting, at and above the threshold) was built."""
    if not prebuilt:
        return f"built steps: {DASH}"
    zero = (
        " (and the 0-step state a threshold uses)"
        if 0 in prebuilt
        else " (no 0-step state: a threshold needs a restart)"
    )
    return f"built steps: {built_steps_words(prebuilt)}{zero}"


class ControlsScreen(LiveScreen):
    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._shown: dict[ActionKind, str | bool | None] = {}
        """The live value each field was last set to: a field whose value differs is being edited."""
        self._reset: set[ActionKind] = set(KINDS)
        self.pending: Pending | None = None
        self._active: int | None = None
        self._mine: set[str] = set()
        """Actions this screen planned: their own ends are its result line already."""
        self._said_at: float | None = None
        """Agent time of the newest action when the result line was written: a later action that
        ends (from any console) replaces the line, so no "applied" outlives a later change."""

    def compose_body(self) -> ComposeResult:
        yield Static(id="controls-now", classes="value")
        for spec in FIELDS:
            with Horizontal(classes="form-row"):
                yield Label(spec.name, classes="field")
                if spec.place == "select":
                    yield Select(
                        [("on", True), ("off", False)], prompt="unknown", id=f"in-{spec.kind}", compact=True
                    )
                else:
                    yield Input(id=f"in-{spec.kind}", placeholder=spec.hint, compact=True)
                yield Button("Apply", id=f"apply-{spec.kind}", classes="apply", compact=True)
                for sentinel in spec.sentinels:
                    if sentinel.button is not None:
                        yield Button(sentinel.button, id=f"{sentinel.word}-{spec.kind}", classes="apply sentinel",
                                     compact=True, disabled=True)  # fmt: skip
                yield Static(id=f"live-{spec.kind}", classes="live-hint")
        yield AutopilotToggle()
        with Horizontal(classes="form-row"):
            for spec in BUTTONS:
                yield Button(spec.name.capitalize(), id=f"apply-{spec.kind}", classes="apply", compact=True)
                yield Static("puts back what the last applied change replaced", classes="live-hint")
        yield Static("", id="control-result")
        yield Label("Recent actions", classes="section")
        yield Static(id="action-log", classes="value")

    def on_mount(self) -> None:
        if self.session.readonly:
            for widget in self.query("Input, Select, Button.apply"):
                widget.disabled = True
            self._say(Text("Read-only: controls are disabled.", style="$info"))

    # -- following the server ---------------------------------------------------------------------
    def _current(self, kind: ActionKind) -> str | bool | None:
        if kind not in TYPED:
            value = self.query_one(f"#in-{kind}", Select).value
            return value if isinstance(value, bool) else None
        return self.query_one(f"#in-{kind}", Input).value

    def _set(self, kind: ActionKind, value: str | bool | None) -> None:
        if kind not in TYPED:
            select: Select[bool] = self.query_one(f"#in-{kind}", Select)
            select.value = Select.NULL if value is None else bool(value)
        else:
            self.query_one(f"#in-{kind}", Input).value = "" if value is None else str(value)
        self._shown[kind] = value

    def editing(self, kind: ActionKind) -> bool:
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
        badge = badge_text(spec, snap.load, stale=model.stale)
        badge.add_line(Text(built_text(spec.prebuilt_steps), style="dim"))
        self.query_one("#controls-now", Static).update(badge)
        for button in self.query("Button.sentinel").results(Button):
            kind = str(button.id).rsplit("-", 1)[1]
            button.disabled = self.session.readonly or live.value(kind) is None
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

    # -- the registry's commands (palette and help): this screen's own actions ---------------------
    def action_apply(self, kind: str) -> None:
        if kind in KINDS:
            self.apply(kind)
        else:
            button = next((spec for spec in BUTTONS if spec.kind == kind), None)
            if button is not None:
                self.press(button.kind)

    def action_switch(self, kind: str, word: str) -> None:
        """The palette's "Turn the autopilot on/off": the toggle's plan, with the operator's word."""
        if kind == "autopilot":
            self.toggle_autopilot(SWITCH_WORDS[word])

    def action_sentinel(self, kind: str, word: str) -> None:
        """A sentinel's button (the catalogue's): "release" on steps releases the pin."""
        spec = spec_of(kind)
        sentinel = next((s for s in spec.sentinels if s.word == word), None) if spec is not None else None
        if spec is not None and sentinel is not None:
            self.send(spec.kind, sentinel.value)

    @on(Button.Pressed, ".apply")
    def _apply_pressed(self, event: Button.Pressed) -> None:
        if event.button.has_class("sentinel"):
            word, _, kind = str(event.button.id).rpartition("-")
            self.action_sentinel(kind, word)
            return
        kind = str(event.button.id).removeprefix("apply-")
        self.action_apply(kind)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        kind = str(event.input.id).removeprefix("in-")
        if kind in TYPED:
            self.apply(kind)

    def _value(self, kind: ActionKind) -> int | bool | str:
        """The field's value as its kind takes it; ValueError says what it allows (the catalogue's words)."""
        current = self._current(kind)
        if isinstance(current, bool):
            return current
        parsed = None if current is None else CATALOGUE[kind].parse(current)
        if parsed is None:
            raise ValueError(f"{kind} needs a value: {CATALOGUE[kind].allowed}")
        return parsed

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
            event = next((e for e in reversed(model.events) if isinstance(e, ActionEvent)
                          and e.data.action_id == last.action_id and e.name in SHOWN_PHASES), None)  # fmt: skip
            line = Text("Latest: ", style="dim")
            line.append_text(action_words(event, model.actions) if event is not None else Text(last.message))
            line.append(f" at {clock(last.time)} UTC.", style="dim")
            self.query_one("#control-result", Static).update(line)
            self._said_at = last.time

    async def _flow(self, kind: ActionKind, value: int | bool | str | None) -> FlowEnd:
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

    @work(exclusive=True, group="control")
    async def press(self, kind: ActionKind) -> None:
        """A kind that takes no value (undo): its plan names what it puts back; confirmed like any change."""
        if self.session.readonly:
            self._say(Text("Read-only: controls are disabled.", style="$info"))
            return
        if self.pending is not None:
            self._say(Text("An action is still applying; wait until the agent says it ended.", style="$warn"))
            return
        await self._flow(kind, None)
        self._reset.update(KINDS)
        self.painted_version = -1
        self.session.paint_now()

    @work(exclusive=True, group="control")
    async def send(self, kind: ActionKind, value: int) -> None:
        """A sentinel's value (the step pin's release): planned, confirmed and audited like any change."""
        if self.session.readonly:
            self._say(Text("Read-only: controls are disabled.", style="$info"))
            return
        end = await self._flow(kind, value)
        if end.outcome != "unreachable":
            self._reset.add(kind)
        self.painted_version = -1
        self.session.paint_now()

    @work(exclusive=True, group="control")
    async def apply(self, kind: ActionKind) -> None:
        """Plan → (rejected: say why) → confirm → apply. Never changes anything without a confirm."""
        if self.session.readonly:
            self._say(Text("Read-only: controls are disabled.", style="$info"))
            return
        if self.pending is not None:
            self._say(Text("An action is still applying; wait until the agent says it ended.", style="$warn"))
            return
        try:
            value = self._value(kind)
        except ValueError as exc:
            # Nothing is sent. An empty field goes back to the live value (it is no edit: there is
            # nothing to fix in it); a typed one stays, so the operator sees what was refused.
            empty = not str(self._current(kind) or "").strip()
            self._say(
                Text(f"{exc}" + (". The field shows the live value again." if empty else "."), style="$bad")
            )
            if empty:
                self._reset.add(kind)
                self.painted_version = -1
                self.session.paint_now()
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


def _kind(request: ActionRequest) -> ActionKind:
    return request.kind if request.kind in KINDS else KINDS[0]
