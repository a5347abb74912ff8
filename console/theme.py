"""The console's colours: three themes, and the named styles every screen, badge, table and chart uses.

No Python module under console/ spells a colour (a test greps for one). Text is styled by name
(``Text("applied", style="$ok")``, ``"$badge-bad"``, ``"$series-1"``); each name is defined here in
theme variables (``$k-ok``), and each theme gives those variables its colours (Harlequin's model: one
Theme, .tcss variables). A name is written ``$name`` because text reaches the screen two ways, and
both read it: Textual parses a whole-text style as its own markup, where ``$ok`` is a CSS variable
(the App adds each name to the theme's variables, ``css_variables``); Rich resolves a span's style,
a table's or a log's through its console theme, where ``$ok`` is a named style (``rich_styles``).
Changing the theme rebuilds both, so every text, badge, table and chart restyles; ``app.tcss`` uses
the same ``k-`` variables.
The themes' colours themselves are data, in ``styles/themes.toml``.

A theme that does not define a ``k-`` variable (Textual's own, picked from the palette) gets it from
its standard ones (``$success``, ``$error``, ``$warning``...), so every theme draws every name.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

from rich.style import Style
from rich.theme import Theme as RichTheme
from textual.color import Color
from textual.theme import Theme

FALLBACK: dict[str, str] = {
    "k-ok": "$success",
    "k-bad": "$error",
    "k-warn": "$warning",
    "k-info": "$primary",
    "k-note": "$accent",
    "k-blue": "$secondary",
    "k-rule": "$accent",
    "k-muted": "$foreground-darken-3",
    "k-band": "$panel-lighten-2",
    "k-on-badge": "$background",
    "k-on-bad-badge": "$foreground",
    "k-off-badge": "$panel-lighten-3",
    "k-kv-used": "$primary",
    "k-kv-reserved": "$warning",
    "k-kv-free": "$panel-lighten-2",
    "k-current-line": "$panel",
}
"""Every ``k-`` variable, as a theme that does not set it gets it."""

STYLES: dict[str, str] = {
    "ok": "$k-ok",
    "ok-bold": "bold $k-ok",
    "bad": "$k-bad",
    "bad-bold": "bold $k-bad",
    "warn": "$k-warn",
    "warn-bold": "bold $k-warn",
    "info": "$k-info",
    "info-bold": "bold $k-info",
    "note": "$k-note",
    "note-bold": "bold $k-note",
    "plain-bold": "bold $foreground",
    "muted": "$k-muted",
    "badge-ok": "bold $k-on-badge on $k-ok",
    "badge-warn": "bold $k-on-badge on $k-warn",
    "badge-info": "bold $k-on-badge on $k-info",
    "badge-bad": "bold $k-on-bad-badge on $k-bad",
    "badge-off": "bold $k-on-badge on $k-off-badge",
    "log-match": "bold $k-on-badge on $k-warn",
    "log-current": "on $k-current-line",
    "kv-used": "$k-kv-used",
    "kv-reserved": "$k-kv-reserved",
    "kv-free": "$k-kv-free",
    # Chart colours (lines, rules, markers, bands), drawn by plotext in the colour the style names.
    "series-1": "$k-info",
    "series-2": "$k-ok",
    "series-3": "$k-bad",
    "series-4": "$k-note",
    "series-5": "$k-warn",
    "series-6": "$k-blue",
    "rule": "$k-rule",
    "band": "$k-band",
}
"""Every named style the console draws with, in theme variables."""

THEMES_FILE = Path(__file__).parent / "styles" / "themes.toml"


def load_themes(path: Path = THEMES_FILE) -> dict[str, Theme]:
    """The ``--theme`` choices (dark, light, high-contrast) from themes.toml; each is also in the
    palette's theme list under its own name (k25-dark, k25-light, k25-high-contrast)."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    return {choice: Theme(**fields) for choice, fields in data.items()}


THEMES = load_themes()
DEFAULT_THEME = "dark"


def _resolve(value: str, variables: Mapping[str, str], depth: int = 0) -> str:
    """A variable's colour as #rrggbb: through the fallback chain, with alpha blended away."""
    if value.startswith("$") and depth < 4:
        name = value[1:]
        return _resolve(variables.get(name) or FALLBACK.get(name, "$foreground"), variables, depth + 1)
    try:
        return Color.parse(value).hex6
    except Exception:  # an "auto" or other non-colour: the text colour
        return _resolve("$foreground", variables, depth + 1) if depth < 4 else Color(128, 128, 128).hex6


def _spec(name: str, variables: Mapping[str, str]) -> str:
    """A named style in the theme's colours: "bold", then the text colour, "on" and the background."""
    return " ".join(_resolve(w, variables) if w.startswith("$") else w for w in STYLES[name].split())


def rich_styles(variables: Mapping[str, str]) -> RichTheme:
    """The named styles, as Rich names them (``$ok``), in the colours of a theme's variables."""
    return RichTheme({f"${name}": Style.parse(_spec(name, variables)) for name in STYLES}, inherit=True)


def css_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """The variables the console adds to a theme's: the ``k-`` ones it lacks (so app.tcss can use
    ``$k-ok`` under any theme) and one per named style (``$ok``, for Textual's own markup)."""
    added = {name: _resolve(f"${name}", variables) for name in FALLBACK if name not in variables}
    every = {**variables, **added}
    return {**added, **{name: _spec(name, every) for name in STYLES}}
