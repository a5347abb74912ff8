"""What every live screen shares: the status line, the link banner, the footer, and painting from the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import on
from textual.app import ComposeResult
from textual.containers import Container
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Input

from console.model import ConsoleModel
from console.widgets.footer import ConsoleFooter
from console.widgets.link_banner import LinkBanner
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
        yield LinkBanner(id="link-banner")
        with Container(id="body"):
            yield from self.compose_body()
        yield ConsoleFooter(compact=True)

    def compose_body(self) -> ComposeResult:
        raise NotImplementedError

    @on(Input.Submitted)
    def _leave_field(self, event: Input.Submitted) -> None:
        """A submitted field lets go of the keyboard (after the screen's own handler ran), so the
        screen keys work again at once: typed "o" or "k" never land in a field that was done."""
        field = event.input

        def leave() -> None:
            if self.focused is field:
                self.set_focus(None)

        self.call_later(leave)

    def on_screen_resume(self) -> None:
        self.painted_version = -1
        self.console.paint_now()

    def repaint(self) -> None:
        """Draw the body again now (a view setting changed: the chart window, raw throughput)."""
        self.painted_version = -1
        self.console.paint_now()

    def paint(self, model: ConsoleModel, *, frozen: bool) -> None:
        app = self.console
        status = self.query_one_optional(StatusLine)
        if status is None:
            return  # not composed yet (a paint can come before the first frame)
        status.show(model, app.link.describe(), paused=frozen, readonly=app.readonly, unseen=app.unseen)
        banner = self.query_one_optional(LinkBanner)
        if banner is not None:
            banner.show(model.link)
        self.set_class(model.stale, "-stale")
        if frozen or model.version == self.painted_version:
            return
        try:
            self.paint_body(model)
        except NoMatches:
            return  # still composing: painted on the next cadence, as painted_version did not move
        self.painted_version = model.version

    def paint_body(self, model: ConsoleModel) -> None:
        raise NotImplementedError
