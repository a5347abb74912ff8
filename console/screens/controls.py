"""Controls: ask the agent for a plan, show it, confirm it, apply it; a rejection changes nothing."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Select, Static

from console.model import ConsoleModel
from console.screens.action_flow import plan_confirm_apply
from console.screens.base import LiveScreen
from console.widgets.autopilot import AutopilotToggle
from console.widgets.badge import badge_text
from console.widgets.format import DASH, clock

Kind = Literal["threshold", "steps", "topk", "adaptive"]
EVENT_LINES = 8


class ControlsScreen(LiveScreen):
    def compose_body(self) -> ComposeResult:
        yield Static(id="controls-now", classes="value")
        with Horizontal(classes="form-row"):
            yield Label("threshold", classes="field")
            yield Input(
                id="in-threshold", type="integer", max_length=5, placeholder="running batch", compact=True
            )
            yield Button("Apply", id="apply-threshold", classes="apply", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("steps", classes="field")
            yield Input(
                id="in-steps", type="integer", max_length=3, placeholder="prebuilt step", compact=True
            )
            yield Button("Apply", id="apply-steps", classes="apply", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("topk", classes="field")
            yield Input(id="in-topk", type="integer", max_length=3, placeholder="restart", compact=True)
            yield Button("Apply", id="apply-topk", classes="apply", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("adaptive", classes="field")
            yield Select(
                [("on", True), ("off", False)], value=True, allow_blank=False, id="in-adaptive", compact=True
            )
            yield Button("Apply", id="apply-adaptive", classes="apply", compact=True)
        yield AutopilotToggle()
        yield Static("", id="control-result")
        yield Label("Recent actions", classes="section")
        yield Static(id="action-log", classes="value")

    def on_mount(self) -> None:
        if self.console.readonly:
            for widget in self.query("Input, Select, Button.apply"):
                widget.disabled = True
            self.query_one("#control-result", Static).update(
                Text("Read-only: controls are disabled.", style="cyan")
            )

    def paint_body(self, model: ConsoleModel) -> None:
        snap = model.latest
        if snap is None:
            return
        spec = snap.speculation
        text = badge_text(spec)
        prebuilt = ", ".join(map(str, spec.prebuilt_steps)) or DASH
        text.append(f"\nbuilt step states: {prebuilt}   pinned steps: ", style="dim")
        pinned = spec.pinned_steps
        text.append("adaptive policy" if pinned is None or pinned < 0 else str(pinned))
        self.query_one("#controls-now", Static).update(text)
        self.query_one(AutopilotToggle).show(snap.autopilot)
        actions = [e for e in model.events if e.kind == "action"][-EVENT_LINES:]
        log = Text()
        for n, event in enumerate(actions):
            if n:
                log.append("\n")
            log.append(f"{clock(event.time)} ", style="dim")
            log.append(event.message)
        self.query_one("#action-log", Static).update(log if actions else Text("none yet", style="dim"))

    @on(Button.Pressed, ".apply")
    def _apply_pressed(self, event: Button.Pressed) -> None:
        kind = str(event.button.id).removeprefix("apply-")
        if kind in ("threshold", "steps", "topk", "adaptive"):
            self.apply(kind)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        kind = str(event.input.id).removeprefix("in-")
        if kind in ("threshold", "steps", "topk"):
            self.apply(kind)

    def _value(self, kind: Kind) -> int | bool | None:
        if kind == "adaptive":
            return bool(self.query_one("#in-adaptive", Select).value)
        text = self.query_one(f"#in-{kind}", Input).value.strip()
        try:
            return int(text)
        except ValueError:
            return None

    def _say(self, text: Text | str) -> None:
        self.query_one("#control-result", Static).update(text)

    @work(exclusive=True, group="control")
    async def apply(self, kind: Kind) -> None:
        """Plan → (rejected: say why) → confirm → apply. Never changes anything without a confirm."""
        if self.console.readonly:
            self._say(Text("Read-only: controls are disabled.", style="cyan"))
            return
        value = self._value(kind)
        if value is None:
            self._say(Text(f"{kind} needs a whole number", style="red"))
            return
        await plan_confirm_apply(self, self.console.client, kind, value, self.console.operator, self._say)
