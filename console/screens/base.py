"""What every live screen shares: the status line, the link banner, the footer, and painting from the model."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Container
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Input

from console.model import ConsoleModel
from console.registry import writing_actions
from console.session import Session
from console.widgets.footer import ConsoleFooter
from console.widgets.link_banner import LinkBanner
from console.widgets.status import StatusLine


class LiveScreen(Screen[None]):
    """A screen the app paints on its cadence; hidden screens are never painted.

    Subclasses write ``compose_body`` and ``paint_body``; ``paint_body`` runs only when the model
    changed since this screen last drew it (or when the screen comes back into view).
    """

    AUTO_FOCUS = ""
    """Nothing takes focus on arrival, so the screen keys work at once; a click or tab enters a field."""

    WRITING: ClassVar[frozenset[str]] = writing_actions()

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        """The agent, the operator and the view settings: all a screen needs, given when it is built."""
        self.painted_version = -1

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A command that changes the server is shown greyed and does nothing under --readonly."""
        if self.session.readonly and action in self.WRITING:
            return None
        return True

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
        self.session.showing(self)
        self.repaint()

    def on_screen_suspend(self) -> None:
        """Switched away from, or covered by a dialog: not painted until it is back in view."""
        self.session.hidden(self)

    def repaint(self) -> None:
        """Draw the body again now (a view setting changed: the chart window, raw throughput)."""
        self.painted_version = -1
        self.session.paint_now()

    def paint(self, model: ConsoleModel, *, frozen: bool) -> None:
        session = self.session
        status = self.query_one_optional(StatusLine)
        if status is None:
            return  # not composed yet (a paint can come before the first frame)
        status.show(
            model,
            session.link.describe(),
            paused=frozen,
            readonly=session.readonly,
            unseen=session.unseen,
            host=session.host_name,
        )
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
