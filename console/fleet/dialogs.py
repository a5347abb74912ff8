"""The fleet change's two dialogs: what to change (kind and value, for the hosts picked), and the
hosts' plans side by side with one confirm for all of them."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static

from agent.wire.actions import setting_name
from console.fleet.change import KIND_WORDS, FleetKind, HostPlan, parse_value
from console.widgets.format import human_setting

KINDS: list[tuple[str, FleetKind]] = [(words, kind) for kind, words in KIND_WORDS.items()]


class AskChange(ModalScreen[tuple[FleetKind, int | str] | None]):
    """Kind and value; Enter asks every host for its plan (nothing changes yet), Esc leaves."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "Cancel")]
    DEFAULT_CSS = """
    AskChange { align: center middle; }
    #ask-box { width: 64; height: auto; border: round $accent; padding: 0 1; background: $surface; }
    #ask-row { height: auto; }
    #ask-kind { width: 20; }
    #ask-value { width: 1fr; }
    #ask-error { height: auto; }
    """

    def __init__(self, hosts: list[str]) -> None:
        super().__init__()
        self.hosts = hosts

    def compose(self) -> ComposeResult:
        with Vertical(id="ask-box"):
            yield Static(Text(f"Change {len(self.hosts)} host(s): {', '.join(self.hosts)}", style="bold"))
            with Horizontal(id="ask-row"):
                yield Select(KINDS, value="threshold", allow_blank=False, id="ask-kind", compact=True)
                yield Input(placeholder="value (steps: a number or release)", id="ask-value", compact=True)
            yield Static(id="ask-error")
            yield Static(
                Text(
                    "Enter: ask each host's agent for its plan (nothing changes yet) · esc: cancel",
                    style="dim",
                )
            )

    def on_mount(self) -> None:
        self.query_one("#ask-value", Input).focus()

    @on(Input.Submitted, "#ask-value")
    def _submitted(self, event: Input.Submitted) -> None:
        kind: FleetKind = self.query_one("#ask-kind", Select).value  # type: ignore[assignment]
        try:
            value = parse_value(kind, event.value)
        except ValueError as exc:
            self.query_one("#ask-error", Static).update(Text(str(exc), style="$bad"))
            return
        self.dismiss((kind, value))

    def action_leave(self) -> None:
        self.dismiss(None)


def plan_text(hp: HostPlan) -> Text:
    text = Text()
    text.append(f"{hp.host}\n", style="bold")
    plan = hp.plan
    if plan is None:
        text.append("no plan\n", style="$bad-bold")
        text.append(hp.error or "", style="$bad")
        return text
    style = {"live": "$ok", "restart": "$warn-bold", "rejected": "$bad-bold", "noop": "dim"}[plan.mode]
    mode = {"live": "live", "restart": "RESTART", "rejected": "refused", "noop": "nothing to do"}[plan.mode]
    text.append(f"{mode}\n", style=style)
    for change in plan.changes:
        said = f"{human_setting(change.key, change.old)} → {human_setting(change.key, change.new)}"
        text.append(f"{setting_name(change.key)}: {said}\n")
    if plan.mode == "restart" and plan.expected_downtime_s is not None:
        text.append(f"down about {plan.expected_downtime_s:.0f} s after a drain\n", style="$warn")
    text.append(plan.reason, style="dim")
    return text


class ConfirmFleetPlans(ModalScreen[bool]):
    """Every host's plan side by side; one confirm applies them host by host, in this order."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Apply"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]
    DEFAULT_CSS = """
    ConfirmFleetPlans { align: center middle; }
    #plans-box { width: 96%; max-width: 140; height: auto; max-height: 90%; border: round $warning;
                 padding: 0 1; background: $surface; }
    #plans { height: auto; max-height: 16; }
    .plan { width: 1fr; min-width: 22; height: auto; padding: 0 1; border-right: vkey $panel; }
    #plans-buttons { height: auto; margin-top: 1; }
    """

    def __init__(self, title: str, plans: list[HostPlan], *, challenge: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.plans = plans
        self.challenge = challenge
        """A restart on a production host wants its profile's name typed first (k9s' text challenge),
        as the single-host confirm does; several production profiles: their names, space-separated."""

    def compose(self) -> ComposeResult:
        applying = [hp.host for hp in self.plans if hp.will_apply]
        with Vertical(id="plans-box"):
            yield Static(Text(self.title_text, style="bold"))
            with VerticalScroll(id="plans"), Horizontal():
                for hp in self.plans:
                    yield Static(plan_text(hp), classes="plan")
            skipped = [hp.host for hp in self.plans if not hp.will_apply]
            note = f"Applies to {', '.join(applying) or 'no host'}, one after another"
            if skipped:
                note += f"; not to {', '.join(skipped)} (see why above)"
            yield Static(Text(note + ". Nothing is retried.", style="$warn"))
            if self.challenge is not None:
                yield Static(Text.assemble(("PRODUCTION restart. ", "$bad-bold"), "Type ",
                                           (self.challenge, "bold"), " to confirm:"))  # fmt: skip
                yield Input(id="plans-challenge", placeholder=self.challenge, compact=True)
            with Horizontal(id="plans-buttons"):
                yield Button(
                    "Apply" if self.challenge else "Apply (y)",
                    id="plans-yes",
                    variant="warning",
                    disabled=not applying or self.challenge is not None,
                )
                yield Button("Cancel (esc)", id="plans-no")

    def on_mount(self) -> None:
        if self.challenge is not None:
            self.query_one("#plans-challenge", Input).focus()

    def _met(self) -> bool:
        if self.challenge is None:
            return True
        return self.query_one("#plans-challenge", Input).value.strip() == self.challenge

    @on(Input.Changed, "#plans-challenge")
    def _typed(self) -> None:
        self.query_one("#plans-yes", Button).disabled = not self._met()

    @on(Input.Submitted, "#plans-challenge")
    def _submitted(self) -> None:
        if self._met():
            self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "plans-yes" and self._met())

    def action_answer(self, yes: bool) -> None:
        if yes and (not any(hp.will_apply for hp in self.plans) or not self._met()):
            return
        self.dismiss(yes)
