"""The console over several hosts: the Fleet screen first, each host's console one Enter away.

Built on the single-host App (``console.app.ConsoleApp``): its screens, dialogs and paint cadence
stay as they are; here every host gets a link, a model and a Session of its own, with its own
reconnect loop (``console.follow``), and the screens of the host in view are that host's. ``F`` goes
back to the fleet; the status line of every host screen leads with the host's name.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ScreenStackError
from textual.binding import Binding, BindingType
from textual.events import Mount, Unmount
from textual.widget import AwaitMount

from agent.wire import ActionEvent, Event, Snapshot
from console.app import SCREENS, STATUS_INTERVAL_S, ConsoleApp
from console.fleet.change import FleetChange
from console.fleet.dialogs import AskChange, ConfirmFleetPlans
from console.fleet.host import Host
from console.fleet.hosts import HostTarget
from console.fleet.ledger import ChangesFile, account_of, default_changes_file
from console.fleet.screen import ChangeAsked, FleetScreen, OpenHost
from console.fleet.state import FleetState
from console.follow import Follower, checked_status, follow
from console.link import Link, LinkError
from console.link.backoff import Backoff
from console.messages import ModelUpdated
from console.model import ConsoleModel
from console.session import Session
from console.theme import DEFAULT_THEME
from console.widgets.action_words import action_label, label_of

FLEET_HISTORY = 16
"""Whole snapshots each host's model holds (the single-host console holds 1200): the GPU screen's
history needs 12, the charts read the point ring. A held snapshot of an 8-GPU host is ~40 objects the
garbage collector walks on each full pass: 16 hosts x 1200 would be ~800,000, and the passes held the
loop (and every host's ticks) for hundreds of milliseconds (bench/costs/fleet_console.py)."""
ROUTER_POLL_S = 2.0
"""How often the router's view is read while the Fleet screen is in view."""
LATENESS_KEPT = 10_000


class FleetApp(ConsoleApp):
    BINDINGS: ClassVar[list[BindingType]] = [
        *ConsoleApp.BINDINGS,
        Binding("F", "fleet", "Fleet"),
    ]

    def __init__(
        self,
        targets: Sequence[HostTarget],
        *,
        links: Sequence[Link] | None = None,
        readonly: bool = False,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
        operator: str | None = None,
        screenshot_dir: Path | None = None,
        theme: str = DEFAULT_THEME,
        changes_file: Path | None = None,
    ) -> None:
        links = list(links) if links is not None else [t.link() for t in targets]
        self.changes_file = ChangesFile(changes_file or default_changes_file())
        """Every fleet change's whole account, kept after the console closes (``--fleet-changes``)."""
        super().__init__(
            links[0],
            readonly=readonly,
            clock=clock,
            backoff=backoff,
            operator=operator,
            screenshot_dir=screenshot_dir,
            theme=theme,
        )
        self.first = targets[0].name
        self.model.snapshots = deque(maxlen=FLEET_HISTORY)  # nothing arrived yet: the App just made it
        self.session.host_name = self.first
        self.hosts: dict[str, Host] = {
            self.first: Host(targets[0], self.link, self.model, self.session, self.backoff)
        }
        for target, link in zip(targets[1:], links[1:], strict=True):
            model = ConsoleModel(clock=clock, history=FLEET_HISTORY)
            session = Session(
                link,
                model,
                operator=self.session.operator,
                readonly=readonly,
                confirm_plan=self._confirm_plan,
                ask=self.push_screen_wait,
                notify_error=self._notify_error,
                paint=self.paint_now,
            )
            session.host_name = target.name
            self._add_screens(session, suffix=f"@{target.name}")
            self.hosts[target.name] = Host(target, link, model, session, backoff or Backoff())
        self.fleet = FleetState({name: host.model for name, host in self.hosts.items()}, clock=clock)
        self.fleet_screen = FleetScreen(self.fleet, readonly=readonly)
        self.add_mode("fleet", lambda: self.fleet_screen)
        self.in_host: str | None = None
        """The host whose console is in view; None: the Fleet screen."""
        self.tick_lateness: dict[str, deque[float]] = {n: deque(maxlen=LATENESS_KEPT) for n in self.hosts}
        """Per host: arrival here minus the agent's tick time, seconds (bench/costs/fleet_console.py)."""

    # -- life cycle ---------------------------------------------------------------------------
    def on_mount(self, event: Mount) -> None:  # type: ignore[override]  # Textual passes the event
        event.prevent_default()  # Textual would run the single-host App's on_mount too (one stream, overview)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())
        self.switch_mode("fleet")
        # What exists now (the modules, Textual's and pydantic's machinery, the screens) lives as
        # long as the console: out of the collector's full passes, which otherwise walk all of it
        # every few seconds while 16 hosts' snapshots arrive, holding the loop for hundreds of ms.
        gc.freeze()
        self.set_interval(STATUS_INTERVAL_S, self.paint_now)
        self.set_interval(ROUTER_POLL_S, self.poll_router)
        for host in self.hosts.values():
            self.run_worker(
                self._follow(host), group=f"stream-{host.name}", exclusive=True, exit_on_error=False
            )

    async def on_unmount(self, event: Unmount) -> None:  # type: ignore[override]
        event.prevent_default()
        gc.unfreeze()  # collectable again: an App run in a longer process (the tests) leaves nothing pinned
        for host in self.hosts.values():
            await host.link.close()

    async def _follow(self, host: Host) -> None:
        await follow(
            Follower(
                host.link,
                host.client,
                host.model,
                host.backoff,
                check=partial(self._check_host, host),
                arrived=partial(self._host_arrived, host),
                changed=self._link_changed,
                failed=partial(self._host_failed, host),
            )
        )

    async def _check_host(self, host: Host) -> None:
        host.agent_status = await checked_status(host.client)
        if host.engine_url is not None:
            self.fleet.engine_urls[host.name] = host.engine_url
        if host.name == self.in_host:
            self.agent_status = host.agent_status

    def _host_arrived(self, host: Host, item: Snapshot | Event) -> None:
        self._arrival = time.perf_counter()
        if isinstance(item, Snapshot):
            self.tick_lateness[host.name].append(time.time() - item.time)
        self.post_message(ModelUpdated(host.model.version))
        if isinstance(item, ActionEvent):
            action_id = host.model.actions.needs_label(item)
            if action_id is not None:
                host.model.actions.looking_up.add(action_id)
                self.run_worker(self._look_up(host, action_id), group="actions", exit_on_error=False)

    async def _look_up(self, host: Host, action_id: str) -> None:
        try:
            result = await host.client.action(action_id)
        except LinkError:
            host.model.label_action(action_id, None)
        else:
            host.model.label_action(action_id, action_label(result.plan.request))
        self.post_message(ModelUpdated(host.model.version))

    def _host_failed(self, host: Host, message: str) -> None:
        self.notify(message, title=f"Cannot connect to {host.name}", severity="error", timeout=30)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fleet" and self.in_host is None:
            return False  # on the Fleet screen already: not in its footer
        return super().check_action(action, parameters)

    def action_reconnect(self) -> None:
        """Every host whose link gave up is tried again (the ones following keep following)."""
        for host in self.hosts.values():
            if host.model.link.state in ("failed", "ended"):
                self.run_worker(
                    self._follow(host), group=f"stream-{host.name}", exclusive=True, exit_on_error=False
                )
        self.paint_now()

    # -- moving between the fleet and a host ------------------------------------------------------
    def _mode_of(self, mode: str, host: str) -> str:
        return mode if host == self.first else f"{mode}@{host}"

    def switch_mode(self, mode: str) -> AwaitMount:
        """A screen's plain name (a key, the palette) means that screen of the host in view; from the
        Fleet screen, of the host under the cursor."""
        if mode in SCREENS:
            if self.in_host is None:
                self._enter(self.fleet_screen.cursor_host or self.first)
            assert self.in_host is not None
            mode = self._mode_of(mode, self.in_host)
        return super().switch_mode(mode)

    def _enter(self, name: str) -> None:
        """The host whose screens, Session and model the App's own paths (paint, keys) now use."""
        host = self.hosts[name]
        self.link, self.model, self.session = host.link, host.model, host.session
        self.client, self.backoff, self.agent_status = host.client, host.backoff, host.agent_status
        self.in_host = name
        self.sub_title = name

    def open_host(self, name: str, mode: str = "overview") -> None:
        self._enter(name)
        self.switch_mode(mode)

    def action_show(self, mode: str) -> None:
        self.switch_mode(mode)

    def action_fleet(self) -> None:
        self.in_host = None
        self.sub_title = "fleet"
        self.switch_mode("fleet")
        self.paint_now()

    def on_open_host(self, message: OpenHost) -> None:
        self.open_host(message.host)

    # -- painting -----------------------------------------------------------------------------
    def on_model_updated(self, message: ModelUpdated) -> None:
        """On the Fleet screen a host's tick is not painted by itself: the screen is drawn once a
        second (STATUS_INTERVAL_S), all hosts at once, and at once on what the operator does."""
        if self.in_host is None:
            message.prevent_default()  # not the single-host App's paint-per-update either

    def paint_now(self) -> None:
        if self.in_host is not None:
            super().paint_now()
            return
        self._paint_pending = False
        self._last_paint = time.monotonic()
        try:
            screen = self.screen
        except ScreenStackError:
            return
        if screen is self.fleet_screen:
            with self.batch_update():
                self.fleet_screen.paint(self.fleet)

    # -- the router ---------------------------------------------------------------------------
    @work(group="router", exclusive=True, exit_on_error=False)
    async def poll_router(self) -> None:
        if self.in_host is not None:
            return
        for host in self.hosts.values():
            if host.connected and host.agent_status is not None and host.agent_status.router_url:
                try:
                    view = await host.client.router()
                except LinkError:
                    continue
                self.fleet.take_router(view, host.name)
                self.paint_now()
                return

    # -- a change to several hosts --------------------------------------------------------------
    def on_change_asked(self, message: ChangeAsked) -> None:
        if self.fleet.change_note:
            self.notify("A fleet change is under way; wait for it to end", title="Fleet", severity="warning")
            return
        self.run_worker(self._change(message.hosts), group="fleet-change", exit_on_error=False)

    def _note(self, note: str) -> None:
        self.fleet.change_note = note
        self.fleet.version += 1
        self.paint_now()

    def _keep(self, change: FleetChange, step: str) -> None:
        """The whole change's account, every host it was meant for, into the changes file."""
        why = self.changes_file.write(account_of(change, step))
        if why is not None:
            self.notify(
                f"The account of {change.change_id} was not kept: {why}", title="Fleet", severity="warning"
            )

    async def _change(self, hosts: list[str]) -> None:
        asked = await self.push_screen_wait(AskChange(hosts))
        if asked is None:
            return
        kind, value = asked
        change = FleetChange(kind, value, hosts, self.session.operator)
        self.fleet.change = change
        self._note("asking each host for its plan…")
        plans = await change.plan({n: self.hosts[n].writable_client() for n in hosts})
        self._keep(change, "planned")
        self._note("waiting for your confirm")
        words = label_of(kind, value)
        title = f"Fleet change {change.change_id}: {words} on {len(hosts)} host(s)"
        production = sorted(
            {
                latest.profile_name or host
                for hp in plans
                if hp.plan is not None and hp.plan.mode == "restart"
                for host, latest in [(hp.host, self.hosts[hp.host].model.latest)]
                if latest is not None and latest.production
            }
        )
        challenge = " ".join(production) if production else None
        if not await self.push_screen_wait(ConfirmFleetPlans(title, plans, challenge=challenge)):
            await change.cancel({n: self.hosts[n].writable_client() for n in hosts})
            self._keep(change, "cancelled")
            self._note("")
            return

        def progress(host: str, index: int) -> None:
            self._note(f"applying {host} ({index + 1} of {len(plans)})…")

        outcomes = await change.apply(lambda n: self.hosts[n].writable_client(), progress)
        self._keep(change, "ended")
        self._note("")
        done = sum(1 for o in outcomes if o.outcome in ("applied", "applying"))
        bad = [o.host for o in outcomes if o.outcome in ("failed", "unreachable", "lost", "rejected")]
        message = f"{done} of {len(outcomes)} applied" + (f"; not on {', '.join(bad)}" if bad else "")
        self.notify(
            message, title=f"Fleet change {change.change_id}", severity="error" if bad else "information"
        )
