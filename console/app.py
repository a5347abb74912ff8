"""The Textual app: one worker follows the agent's stream into the model; a timer paints the screen in view.

Ingest and paint are decoupled (Dolphie, Memray): the worker only appends to ring buffers and posts a
coalescing message. The visible screen is redrawn when that message arrives, but never twice within
``PAINT_INTERVAL_S`` (a burst becomes one paint at the end of the interval), and only when the model
changed; a slow timer keeps the link's age current. Screens that are not in view, or are covered by
a dialog, are not painted.

Everything a screen needs (the client, the operator, read-only, the model, the view settings, the
plan → confirm → apply flow) is in ``console.session.Session``; each screen is built with it and
never sees this App. The App only follows the stream, paints, and owns the dialogs.
"""

from __future__ import annotations

import getpass
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, ScreenStackError
from textual.binding import BindingType
from textual.widgets import Input, Select, TextArea

from agent.wire import ActionEvent, Event, Plan, Snapshot
from agent.wire.api import AgentStatus
from console.follow import Follower, checked_status, follow
from console.link import Link, LinkError
from console.link.backoff import Backoff
from console.messages import ModelUpdated
from console.model import ConsoleModel, LinkStatus
from console.model.window import window_label
from console.palette import ConsoleCommands
from console.registry import bindings, writing_actions
from console.screens.audit import AuditScreen
from console.screens.base import LiveScreen
from console.screens.bench import BenchScreen
from console.screens.confirm import ConfirmPlan
from console.screens.controls import ControlsScreen
from console.screens.gpus import GpusScreen
from console.screens.help import HelpScreen
from console.screens.history import HistoryScreen
from console.screens.kv import KvScreen
from console.screens.logs import LogsScreen
from console.screens.overview import OverviewScreen
from console.screens.profiles import ProfilesScreen
from console.session import Session
from console.theme import DEFAULT_THEME, THEMES, css_variables, rich_styles
from console.widgets.action_words import action_label

PAINT_INTERVAL_S = 0.2
"""Five frames a second at most: a 4-per-second stream is painted as it comes, a burst is bounded."""

STATUS_INTERVAL_S = 1.0
"""The status line's "data 12s ago" moves even when nothing arrives."""

SCREENS: dict[str, Callable[[Session], LiveScreen]] = {
    "overview": OverviewScreen,
    "history": HistoryScreen,
    "kv": KvScreen,
    "gpus": GpusScreen,
    "controls": ControlsScreen,
    "bench": BenchScreen,
    "profiles": ProfilesScreen,
    "logs": LogsScreen,
    "audit": AuditScreen,
}
"""The modes (registry.SCREENS names them for keys and help); each is built with the session."""


class ConsoleApp(App[None]):
    TITLE = "k25console"
    CSS_PATH = Path(__file__).parent / "styles" / "app.tcss"  # absolute: subclasses elsewhere find it too
    COMMANDS: ClassVar = App.COMMANDS | {ConsoleCommands}
    BINDINGS: ClassVar[list[BindingType]] = [*bindings()]

    def __init__(
        self,
        link: Link,
        *,
        readonly: bool = False,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
        operator: str | None = None,
        screenshot_dir: Path | None = None,
        theme: str = DEFAULT_THEME,
    ) -> None:
        super().__init__()
        if theme not in THEMES:
            raise ValueError(f"unknown theme {theme!r}: choose one of {', '.join(THEMES)}")
        for choice in THEMES.values():
            self.register_theme(choice)
        self.theme = THEMES[theme].name
        self._rich_theme_pushed = False
        self.link = link
        self.model = ConsoleModel(clock=clock)
        self.session = Session(
            link,
            self.model,
            operator=operator or getpass.getuser(),
            readonly=readonly,
            confirm_plan=self._confirm_plan,
            ask=self.push_screen_wait,
            notify_error=self._notify_error,
            paint=self.paint_now,
        )
        self.client = self.session.client
        self._restyle()
        self.backoff = backoff or Backoff()
        self._add_screens(self.session)
        self.agent_status: AgentStatus | None = None
        # Measured for bench/costs/console_cpu.py: arrival → on screen, and the agent's tick → on screen.
        self.paint_latencies: deque[float] = deque(maxlen=10_000)
        self.tick_latencies: deque[float] = deque(maxlen=10_000)
        self.screenshot_dir = screenshot_dir or Path.cwd()
        self._arrival: float | None = None
        self._last_paint = 0.0
        self._paint_pending = False

    def _add_screens(self, session: Session, suffix: str = "") -> None:
        """The screens of one agent's session, as modes (a fleet adds one set per host)."""
        for mode, screen in SCREENS.items():
            self.add_mode(mode + suffix, partial(screen, session))

    # -- theme --------------------------------------------------------------------------------
    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables, with the console's: its ``k-`` colours for a theme that lacks them,
        and its named styles (console.theme)."""
        variables = super().get_css_variables()
        variables = {**css_variables(variables), **variables}
        self.theme_variables = variables
        return variables

    def _restyle(self) -> None:
        """The named styles (console.theme) in the current theme's colours; the screen drawn again."""
        if self._rich_theme_pushed:
            self.console.pop_theme()
        self.console.push_theme(rich_styles(self.get_css_variables()))
        self._rich_theme_pushed = True
        screen = self.session.in_view
        if screen is not None:
            screen.repaint()

    # -- life cycle ---------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())
        self.switch_mode("overview")
        self.set_interval(STATUS_INTERVAL_S, self.paint_now)
        self.follow_stream()

    async def on_unmount(self) -> None:
        await self.link.close()

    @property
    def readonly(self) -> bool:
        return self.session.readonly

    @property
    def operator(self) -> str:
        return self.session.operator

    @property
    def chart_window_s(self) -> float:
        return self.session.window_s

    async def _confirm_plan(self, plan: Plan, running: str | None, production: bool) -> bool:
        return await self.push_screen_wait(ConfirmPlan(plan, running=running, production=production))

    def _notify_error(self, message: str, title: str) -> None:
        self.notify(message, title=title, severity="error")

    # -- ingest -------------------------------------------------------------------------------
    @work(exclusive=True, group="stream", exit_on_error=False)
    async def follow_stream(self) -> None:
        """Connect, catch up from the ring buffer, follow; on a drop, back off and do it again
        (``console.follow``). Never exits on a drop; only a failure that retrying cannot fix (a refused
        host key) stops it."""
        await follow(
            Follower(
                self.link,
                self.client,
                self.model,
                self.backoff,
                check=self._check_agent,
                arrived=self._arrived,
                changed=self._link_changed,
                failed=lambda message: self.notify(
                    message, title="Cannot connect", severity="error", timeout=30
                ),
            )
        )

    def _link_changed(self) -> None:
        self.call_later(self.paint_now)  # in the app's loop: a paint error never ends the stream

    def _arrived(self, item: Snapshot | Event) -> None:
        self._arrival = time.perf_counter()
        self.post_message(ModelUpdated(self.model.version))
        if isinstance(item, ActionEvent):
            self._learn_action(item)

    def _learn_action(self, event: ActionEvent) -> None:
        action_id = self.model.actions.needs_label(event)
        if action_id is not None:
            self.model.actions.looking_up.add(action_id)
            self.look_up_action(action_id)

    @work(group="actions", exit_on_error=False)
    async def look_up_action(self, action_id: str) -> None:
        """Another console's action: the agent's typed record of it gives the words for its lines
        (its event messages are for logs, not for an operator's screen)."""
        try:
            result = await self.client.action(action_id)
        except LinkError:
            self.model.label_action(action_id, None)
        else:
            self.model.label_action(action_id, action_label(result.plan.request))
        self.post_message(ModelUpdated(self.model.version))

    async def _check_agent(self) -> None:
        self.agent_status = await checked_status(self.client)

    def on_model_updated(self, message: ModelUpdated) -> None:
        """Coalesced: only the newest of a backlog arrives here. Paint now, or once the interval is up."""
        if self._paint_pending:
            return
        wait = self._last_paint + PAINT_INTERVAL_S - time.monotonic()
        if wait <= 0:
            self.paint_now()
        else:
            self._paint_pending = True
            self.set_timer(wait, self.paint_now)

    # -- paint --------------------------------------------------------------------------------
    def paint_now(self) -> None:
        self._paint_pending = False
        self._last_paint = time.monotonic()
        try:
            self.screen  # noqa: B018 - raises once the last screen went
        except ScreenStackError:
            return  # shutting down: a timer or a coalesced message came after the last screen went
        screen = self.session.in_view
        if screen is None:
            return  # a dialog covers the screen: keep ingesting, draw nothing
        before = screen.painted_version
        with self.batch_update():
            screen.paint(self.model, frozen=self.session.paused)
        if screen.painted_version != before and self._arrival is not None:
            arrival, self._arrival = self._arrival, None
            latest = self.model.latest
            tick = latest.time if latest is not None else None
            self.call_after_refresh(self._painted, arrival, tick)

    def _painted(self, arrival: float, tick: float | None) -> None:
        self.paint_latencies.append(time.perf_counter() - arrival)
        if tick is not None:
            self.tick_latencies.append(time.time() - tick)

    # -- actions ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "blur":  # in the footer only while a field holds the keys (then it is the way out)
            return isinstance(self.focused, Input | TextArea | Select)
        if self.readonly and action in writing_actions():
            return None  # shown greyed, does nothing
        return True

    def action_show(self, mode: str) -> None:
        self.switch_mode(mode)

    def action_toggle_pause(self) -> None:
        self.session.toggle_pause()
        self.paint_now()

    def action_reconnect(self) -> None:
        """Connect again now: after giving up, or to cut a long wait short (the worker is exclusive)."""
        self.model.set_link(LinkStatus("connecting"))
        self.follow_stream()
        self.paint_now()

    def action_cycle_window(self) -> None:
        self.session.cycle_window()
        self.notify(f"Charts show the last {window_label(self.session.window_s)}", title="Window", timeout=2)
        self._repaint_screen()

    def action_toggle_raw(self) -> None:
        self.session.toggle_raw()
        self._repaint_screen()

    def _repaint_screen(self) -> None:
        screen = self.session.in_view
        if screen is not None:
            screen.repaint()

    def action_svg(self) -> None:
        path = self.save_screenshot(path=str(self.screenshot_dir))
        self.notify(f"Saved {path}", title="Screenshot")

    def action_blur(self) -> None:
        self.set_focus(None)

    def on_descendant_focus(self) -> None:
        self._refresh_footer()

    def on_descendant_blur(self) -> None:
        self._refresh_footer()

    def _refresh_footer(self) -> None:
        """The footer's "esc Leave field" comes and goes with a field's focus. A blur also comes while
        the app closes, after its last screen is gone (a Pilot test ended with ScreenStackError)."""
        if self.screen_stack:
            self.refresh_bindings()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.readonly, self.session.command_words()))

    def action_go_to_command(self) -> None:
        """``:`` as in k9s: the command palette, to type a command's name and run it."""
        self.action_command_palette()
