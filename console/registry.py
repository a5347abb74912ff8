"""The one list of operator commands: it makes the key bindings, the footer, the palette and `?` help.

Adding a command here is enough for it to appear in all four places; a command that changes the
server is marked ``writes`` and is greyed everywhere under ``--readonly`` or while replaying.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding

from agent.wire.actions import of_kinds

Group = Literal["Screens", "View", "Logs", "Controls", "Bench", "Profiles", "App"]


@dataclass(frozen=True)
class Command:
    title: str
    action: str
    help: str
    group: Group
    key: str | None = None
    key_display: str | None = None
    footer: bool = True
    writes: bool = False
    screens: tuple[str, ...] = ()
    """Bound on these screens (modes) only, and shown in their footers; empty: bound on the app."""
    short: str | None = None
    """The footer's word for it, where the title is too long for 100 columns."""

    @property
    def footer_label(self) -> str:
        return self.short or self.title

    def title_in(self, words: Mapping[str, str] | None = None) -> str:
        """The title with the view's words in it ("Start bench {bench_mode}" → "Start bench compare"):
        a command that acts as the screen is set says what it will do now (``Session.command_words``)."""
        return self.title.format_map({**VIEW_WORDS, **(words or {})})


VIEW_WORDS: dict[str, str] = {"bench_mode": "compare"}
"""The words a command title may name (``{bench_mode}``), as a new session has them."""


SCREENS: tuple[tuple[str, str, str, str], ...] = (
    # (mode name, key, title, help)
    ("overview", "o", "Overview", "Throughput, load, speculation state, latency and health at a glance"),
    (
        "history",
        "h",
        "History",
        "Throughput, load, TTFT, ITL, accept length and KV usage over the window you pick",
    ),
    ("kv", "k", "KV", "The KV pool, the reserve speculation costs, and what fits at a context length"),
    ("gpus", "g", "GPUs", "One row per GPU with a short history"),
    (
        "controls",
        "c",
        "Controls",
        "Threshold, steps, topk, adaptive, the autopilot and undo: plan, confirm, apply",
    ),
    (
        "bench",
        "b",
        "Bench",
        "Benchmark the server (compare on/off or sweep) and see the recommended threshold",
    ),
    ("profiles", "p", "Profiles", "List, view, diff, load and save operator profiles"),
    ("logs", "l", "Logs", "Engine log tail with search; events and audit lines"),
    ("audit", "a", "Audit", "The audit log: what changed, who asked, from where, what came of it"),
)


def _control_commands() -> tuple[Command, ...]:
    """Controls' commands, one per field of the action catalogue (``agent.wire.actions``) and one per
    sentinel with a button of its own: a kind added there is in the palette and help here."""
    out: list[Command] = []
    for spec in of_kinds(("input", "select")):
        out.append(Command(f"Apply {spec.name}", f"apply('{spec.kind}')",
                           f"Plan and confirm {spec.name}: {spec.allowed}", "Controls", footer=False,
                           screens=("controls",), writes=True))  # fmt: skip
        out.extend(
            Command(
                sentinel.label.capitalize(),
                f"sentinel('{spec.kind}', '{sentinel.word}')",
                f"Plan and confirm {spec.name} → {sentinel.long}",
                "Controls",
                footer=False,
                screens=("controls",),
                writes=True,
            )
            for sentinel in spec.sentinels
            if sentinel.button is not None
        )
    for spec in of_kinds(("button",)):  # undo: a button of its own on Controls
        out.append(Command(spec.label.capitalize(), f"apply('{spec.kind}')",
                           f"Plan and confirm {spec.name}: {spec.allowed}", "Controls", footer=False,
                           screens=("controls",), writes=True))  # fmt: skip
    for spec in of_kinds(("toggle",)):  # the autopilot: on and off, each planned and confirmed
        out.extend(
            Command(
                f"Turn the {spec.name} {word}",
                f"switch('{spec.kind}', '{word}')",
                f"Plan and confirm {spec.name} → {word}",
                "Controls",
                footer=False,
                screens=("controls",),
                writes=True,
            )
            for word in ("on", "off")
        )
    return tuple(out)


COMMANDS: tuple[Command, ...] = (
    *(
        Command(title, f"app.show('{mode}')", help_text, "Screens", key=key)
        for mode, key, title, help_text in SCREENS
    ),
    Command("Pause", "app.toggle_pause", "Freeze what is drawn; data keeps arriving", "View", "space"),
    Command(
        "Window",
        "app.cycle_window",
        "Chart time window: 1 m, 5 m, 15 m, 1 h (kept until you change it)",
        "View",
        "w",
        screens=("overview", "history"),
    ),
    Command(
        "Raw tok/s",
        "app.toggle_raw",
        "Show the last tick's raw tok/s beside the rate smoothed over the agent's window",
        "View",
        "r",
        screens=("overview", "history"),
    ),
    Command("SVG", "app.svg", "Save an SVG screenshot in the current directory", "View", "s", footer=False),
    Command("Help", "app.help", "Every command with its key", "App", "question_mark", key_display="?"),
    Command(
        "Leave field",
        "app.blur",
        "Leave a text field so letter keys switch screens again (shown while a field has the keys)",
        "App",
        "escape",
        key_display="esc",
    ),
    Command(
        "Go to command",
        "app.go_to_command",
        "Type a command's name and run it (k9s' command mode; the palette, ctrl+p)",
        "App",
        "colon",
        key_display=":",
        footer=False,
    ),
    Command(
        "Reconnect now",
        "app.reconnect",
        "Connect to the agent again at once (after the console gave up, or to skip a long wait)",
        "App",
        footer=False,
    ),
    Command("Quit", "app.quit", "Leave the console (a --demo agent stops with it)", "App", "q"),
    *_control_commands(),
    Command(
        "Do what the finding offers",
        "do_offer",
        "Plan and confirm the action the most severe health finding offers (the Overview's what-to-do line)",
        "Controls",
        "d",
        screens=("overview",),
        footer=False,  # the what-to-do line says "[d] plan it" where it applies; at 80 columns q Quit stays
        writes=True,
    ),
    Command(
        "KV what-if",
        "kv_whatif",
        "Ask the agent what fits at the chosen context length",
        "View",
        footer=False,
        screens=("kv",),
    ),
    Command(
        "Start bench {bench_mode}",
        "bench_start",
        "Start a benchmark in the Bench screen's mode (compare: on, off and adaptive at each level; "
        "sweep: the server as it runs), after a confirm",
        "Bench",
        footer=False,
        screens=("bench",),
        writes=True,
    ),
    Command(
        "Cancel bench run",
        "cancel_run",
        "Stop the running benchmark after a confirm: its requests are cut, the threshold put back",
        "Bench",
        "ctrl+k",
        key_display="^k",
        writes=True,
        screens=("bench",),
        short="Cancel run",
    ),
    *(
        Command(
            f"Filter {what}",
            "filter",
            f"Type to show only the {what} that contain it (Esc leaves the field; clear it to show all)",
            "View",
            "slash",
            key_display="/",
            screens=(mode,),
            short="Filter",
        )
        for mode, what in (("bench", "bench runs"), ("profiles", "profiles"), ("audit", "audit lines"))
    ),
    Command(
        "Diff profile",
        "profile_diff",
        "Compare the selected profile with what runs",
        "Profiles",
        footer=False,
        screens=("profiles",),
    ),
    Command(
        "Load profile",
        "profile('load')",
        "Plan and confirm running the selected profile",
        "Profiles",
        footer=False,
        screens=("profiles",),
        writes=True,
    ),
    Command(
        "Save running as profile",
        "profile('save')",
        "Save the running settings under a new name",
        "Profiles",
        footer=False,
        screens=("profiles",),
        writes=True,
    ),
    Command(
        "Refresh audit",
        "refresh_audit",
        "Fetch the audit log again",
        "View",
        footer=False,
        screens=("audit",),
    ),
    Command(
        "Refresh logs",
        "logs_refresh",
        "Fetch the engine log tail again",
        "View",
        footer=False,
        screens=("logs",),
    ),
    Command(
        "Search",
        "search",
        "Type a term to highlight in the engine log and the events pane",
        "Logs",
        "slash",
        key_display="/",
        screens=("logs",),
    ),
    Command(
        "Next match",
        "next_match",
        "Jump to the next line that matches",
        "Logs",
        "n",
        screens=("logs",),
        footer=False,  # the search status line says "n next · N previous" where it matters
        short="next",
    ),
    Command(
        "Previous match",
        "previous_match",
        "Jump to the previous match",
        "Logs",
        "N",
        screens=("logs",),
        footer=False,  # the search status line says "n next · N previous" where it matters
        short="prev",
    ),
    Command(
        "Follow",
        "toggle_follow",
        "Follow the log's end as lines arrive, or hold the view where it is",
        "Logs",
        "f",
        screens=("logs",),
    ),
)


SCREENS_GROUP = Binding.Group("screens", compact=True)
"""The screen keys share one footer entry on a narrow terminal ("ohkgcbpla screens"), so the keys
that matter most (pause, help, quit) are never cut at 100 columns."""


def bindings() -> list[Binding]:
    """App bindings for every command that has a key and belongs to no one screen."""
    return [
        Binding(
            c.key,
            c.action.removeprefix("app."),
            c.footer_label,
            show=c.footer,
            key_display=c.key_display,
            group=SCREENS_GROUP if c.group == "Screens" else None,
        )
        for c in COMMANDS
        if c.key is not None and not c.screens
    ]


def screen_bindings(mode: str) -> list[Binding]:
    """The bindings of the commands that belong to one screen (its footer shows them)."""
    return [
        Binding(c.key, c.action, c.footer_label, show=c.footer, key_display=c.key_display)
        for c in COMMANDS
        if c.key is not None and mode in c.screens
    ]


def writing_actions() -> frozenset[str]:
    """Action names (without arguments) that change the server."""
    return frozenset(c.action.removeprefix("app.").split("(")[0] for c in COMMANDS if c.writes)


def key_label(command: Command) -> str:
    if command.key_display:
        return command.key_display
    return command.key or ""
