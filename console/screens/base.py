"""What every live screen shares: the status line, the footer, and painting from the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.containers import Container
from textual.screen import Screen
from textual.widgets import Footer

from console.model import ConsoleModel
from console.widgets.status import StatusLine

if TYPE_CHECKING:
    from console.app import ConsoleApp


class LiveScreen(Screen[None]):
    """A screen the app paints on its cadence; hidden screens are never painted.

    Subclasses write ``compose_body`` and ``paint_body``; ``paint_body`` runs only when the model
    changed since this screen last drew it (or when the screen comes back into view).
    """

    AUTO_FOCUS = ""
    """Nothing takes focus on arrival, so the screen keys work at once; a click or tab enters a field."""

    def __init__(self) -> None:
        super().__init__()
        self.painted_version = -1

    @property
    def console(self) -> ConsoleApp:
        return cast("ConsoleApp", self.app)

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Container(id="body"):
            yield from self.compose_body()
        yield Footer(compact=True)

    def compose_body(self) -> ComposeResult:
        raise NotImplementedError

    def on_screen_resume(self) -> None:
        self.painted_version = -1
        self.console.paint_now()

    def paint(self, model: ConsoleModel, *, frozen: bool) -> None:
        app = self.console
        self.query_one(StatusLine).show(
            model, app.link.describe(), paused=frozen, readonly=app.readonly, unseen=app.unseen
        )
        self.set_class(model.stale, "-stale")
        if frozen or model.version == self.painted_version:
            return
        self.painted_version = model.version
        self.paint_body(model)

    def paint_body(self, model: ConsoleModel) -> None:
        raise NotImplementedError
