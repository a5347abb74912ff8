"""The command palette's provider, fed by the same registry as the keys and `?` help."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.registry import COMMANDS, Command, key_label, writing_actions


class ConsoleCommands(Provider):
    def _available(self) -> list[tuple[str, Command]]:
        readonly = bool(getattr(self.app, "readonly", False))
        blocked = writing_actions() if readonly else frozenset()
        session = getattr(self.app, "session", None)
        words = session.command_words() if session is not None else None
        out = []
        for c in COMMANDS:
            name = c.action.removeprefix("app.").split("(")[0]
            if name in blocked:
                continue
            key = f"  ({key_label(c)})" if c.key else ""
            out.append((f"{c.group}: {c.title_in(words)}{key}", c))
        return out

    async def _run(self, command: Command) -> None:
        """A screen's own command runs on that screen: show it first, then run the action there."""
        if command.screens and not command.action.startswith("app."):
            await self.app.switch_mode(command.screens[0])  # awaited: the screen is composed first
            await self.app.run_action(command.action, self.app.screen)
        else:
            await self.app.run_action(command.action)

    async def discover(self) -> Hits:
        for title, command in self._available():
            yield DiscoveryHit(title, partial(self._run, command), help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, command in self._available():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, command), help=command.help)
