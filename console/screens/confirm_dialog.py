"""A yes/no dialog that can demand a typed confirmation (k9s' text challenge) for a production host.

Returns True only on an explicit confirm; escape, n and the cancel button return False. With a
challenge, confirm stays disabled until the operator has typed it exactly (the profile's name):
a reflexive `y` on the wrong terminal cannot start a restart or a load test on production.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static


class ConfirmDialog(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Confirm"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(
        self,
        title: str,
        body: RenderableType,
        *,
        challenge: str | None = None,
        yes: str = "Confirm",
        no: str = "Cancel",
    ) -> None:
        """``yes``/``no``: what each button does, named ("Stop run", "Keep running"): where "Cancel"
        would mean the opposite of what is asked (cancelling a run keeps it going), say what happens."""
        super().__init__()
        self.yes, self.no = yes, no
        self.title_text = title
        self.body = body
        self.challenge = challenge
        self.typed: str | None = None
        """What the operator typed for the challenge, once confirmed (the agent may want it repeated)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(Text(self.title_text, style="bold"), id="confirm-title")
            with VerticalScroll(id="confirm-scroll"):  # a long plan scrolls; the buttons stay in view
                yield Static(self.body, id="confirm-plan")
            if self.challenge is not None:
                yield Static(
                    Text.assemble(
                        ("PRODUCTION. ", "$bad-bold"),
                        "Type ",
                        (self.challenge, "bold"),
                        " to confirm:",
                    ),
                    id="confirm-challenge-label",
                )
                yield Input(id="confirm-challenge", placeholder=self.challenge, compact=True)
            with Horizontal(id="confirm-buttons"):
                yield Button(
                    self.yes if self.challenge else f"{self.yes} (y)",
                    id="confirm-yes",
                    variant="warning",
                    disabled=self.challenge is not None,
                )
                yield Button(f"{self.no} (esc)", id="confirm-no")

    def on_mount(self) -> None:
        if self.challenge is not None:
            self.query_one("#confirm-challenge", Input).focus()

    @property
    def challenge_met(self) -> bool:
        if self.challenge is None:
            return True
        return self.query_one("#confirm-challenge", Input).value.strip() == self.challenge

    @on(Input.Changed, "#confirm-challenge")
    def _typed(self) -> None:
        self.query_one("#confirm-yes", Button).disabled = not self.challenge_met

    @on(Input.Submitted, "#confirm-challenge")
    def _submitted(self) -> None:
        if self.challenge_met:
            self._answer(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self._answer(event.button.id == "confirm-yes")

    def _answer(self, answer: bool) -> None:
        confirmed = answer and self.challenge_met
        if confirmed and self.challenge is not None:
            self.typed = self.query_one("#confirm-challenge", Input).value.strip()
        self.dismiss(confirmed)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and parameters == (True,) and not self.challenge_met:
            return None  # y does nothing until the challenge is typed
        return True

    def action_answer(self, answer: bool) -> None:
        self._answer(answer)
