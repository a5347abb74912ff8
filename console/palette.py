"""The command palette's provider, fed by the same registry as the keys and `?` help."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.registry import COMMANDS, key_label, writing_actions


class ConsoleCommands(Provider):
    def _available(self) -> list[tuple[str, str, str]]:
        readonly = bool(getattr(self.app, "readonly", False))
        blocked = writing_actions() if readonly else frozenset()
        out = []
        for c in COMMANDS:
            name = c.action.removeprefix("app.").split("(")[0]
            if name in blocked:
                continue
            key = f"  [{key_label(c)}]" if c.key else ""
            out.append((f"{c.group}: {c.title}{key}", c.action, c.help))
        return out

    async def discover(self) -> Hits:
        for title, action, help_text in self._available():
            yield DiscoveryHit(title, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, action, help_text in self._available():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(title), partial(self.app.run_action, action), help=help_text
                )
