"""Colours come from the theme: no Python module of the console spells one, every style it names is
defined, every theme defines every colour, and a theme change restyles text and charts alike."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from rich.color import ANSI_COLOR_NAMES
from rich.text import Text
from textual.color import Color
from textual.widgets import Static

from console.app import ConsoleApp
from console.cli import THEME_CHOICES, build_parser
from console.link.replay import ReplayLink
from console.theme import FALLBACK, STYLES, THEMES, load_themes, rich_styles
from console.widgets.chart import ChartData, Series, TimeChart

CONSOLE = Path(__file__).resolve().parents[2] / "console"
RECORDING = Path(__file__).parent / "data" / "local-sim.jsonl"
COLOUR_NAMES = set(ANSI_COLOR_NAMES) | {"grey", "gray", "orange", "slate", "purple", "pink", "brown"}
ATTRIBUTES = {"bold", "b", "dim", "d", "italic", "i", "underline", "u", "reverse", "r", "strike", "s",
              "blink", "not", "on", "link", "none", "conceal", "overline"}  # fmt: skip
HEX = re.compile(r"(?<![\w-])#(?:[0-9a-fA-F]{6}|[0-9a-fA-F]{3})(?![\w-])")
RGB = re.compile(r"\b(?:rgb|rgba|hsl)\(")
MARKUP = re.compile(r"\[/?([^\[\]]+)\]")


def colour_literals(source: str) -> list[tuple[int, str]]:
    """Every colour spelled in a module's string literals: a hex colour, an rgb(…), a named colour in a
    style ("bold red", "on grey37", "green") or in markup ("[red]…[/red]")."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        value = node.value
        hits = HEX.findall(value) + RGB.findall(value)
        words = value.split()
        if words and all(w in ATTRIBUTES or w in COLOUR_NAMES or HEX.fullmatch(w) for w in words):
            hits += [w for w in words if w in COLOUR_NAMES]  # the whole string is a style
        for tag in MARKUP.findall(value):
            hits += [w for w in tag.split() if w in COLOUR_NAMES]
        found += [(node.lineno, hit) for hit in hits]
    return found


def test_the_scan_finds_colours_where_they_are_spelled() -> None:
    """The scan itself: it must catch each way a colour was spelled before the theme (so that a pass
    below means something), and leave ids, prose and named styles alone."""
    spelled = """
a = Text("x", style="bold red")
b = "[green]ok[/green]"
c = "#1e90ff"
d = "rgb(1, 2, 3)"
e = Segment("free", 3, "grey35")
f = "bold white on grey37"
"""
    assert sorted(hit for _, hit in colour_literals(spelled)) == sorted(
        ["red", "green", "green", "#1e90ff", "rgb(", "grey35", "white", "grey37"]
    )
    clean = """
a = Text("x", style="$bad-bold")
b = query_one("#bench-apply")
c = "the red line is the threshold"
d = Text("x", style="$badge-off")
"""
    assert colour_literals(clean) == []


def test_no_python_module_of_the_console_spells_a_colour() -> None:
    found = {
        str(path.relative_to(CONSOLE)): hits
        for path in sorted(CONSOLE.rglob("*.py"))
        if (hits := colour_literals(path.read_text()))
    }
    assert found == {}, f"colour literals (use a named style of console/theme.py): {found}"


def _style_args(source: str) -> list[str]:
    """Every literal passed as ``style=`` or as a style in a ``Text.assemble`` pair."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.keyword)
            and node.arg in ("style", "header_style")
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out.append(node.value.value)
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            second = node.elts[1]
            if isinstance(second, ast.Constant) and isinstance(second.value, str) and "$" in second.value:
                out.append(second.value)
    return out


def test_every_style_the_console_names_is_defined() -> None:
    """A name that is not defined draws uncoloured (or raises, in Textual's markup); a named style is
    used alone, as "bold $ok" is neither Textual's variable nor Rich's name."""
    unknown = {
        f"{path.relative_to(CONSOLE)}: {style}"
        for path in sorted(CONSOLE.rglob("*.py"))
        for style in _style_args(path.read_text())
        if not all(word.removeprefix("$") in STYLES or word in ATTRIBUTES for word in style.split())
        or (len(style.split()) > 1 and any(word.startswith("$") for word in style.split()))
    }
    assert unknown == set()


def test_every_theme_gives_every_console_colour() -> None:
    assert set(THEMES) == set(THEME_CHOICES) == {"dark", "light", "high-contrast"}
    for choice, theme in load_themes().items():
        assert set(FALLBACK) <= set(theme.variables), f"{choice} lacks {set(FALLBACK) - set(theme.variables)}"
    referenced = {w[1:] for spec in STYLES.values() for w in spec.split() if w.startswith("$k-")}
    assert referenced <= set(FALLBACK)


def test_the_themes_differ_where_it_matters() -> None:
    """Light draws dark text on white; high contrast draws on black with its own hues."""
    dark, light, contrast = (THEMES[c] for c in ("dark", "light", "high-contrast"))
    assert dark.dark and not light.dark and contrast.dark
    assert light.background != dark.background and contrast.background != dark.background
    for name in ("k-ok", "k-bad", "k-warn", "k-info"):
        assert len({dark.variables[name], light.variables[name], contrast.variables[name]}) == 3, name


def test_the_cli_takes_a_theme() -> None:
    assert build_parser().parse_args(["--theme", "high-contrast"]).theme == "high-contrast"
    assert build_parser().parse_args([]).theme == "dark"
    with pytest.raises(ValueError, match="unknown theme 'sepia': choose one of dark, light, high-contrast"):
        ConsoleApp(ReplayLink(RECORDING, speed=0), theme="sepia")


async def test_a_theme_change_restyles_text_and_charts() -> None:
    app = ConsoleApp(ReplayLink(RECORDING, speed=0), clock=lambda: 1000.0, operator="theme", theme="light")
    light_ok = rich_styles(app.get_css_variables()).styles["$ok"]
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.theme == "k25-light"
        assert app.console.get_style("$ok") == light_ok
        chart = TimeChart()
        line = Static(Text("applied", style="$ok"))
        await app.screen.mount(chart, line)
        data = ChartData(series=(Series("x", (-2.0, -1.0), (1.0, 2.0), "$series-2"),), window_s=60.0)
        assert chart.show(data)
        assert not chart.show(data), "the same data in the same theme is not drawn again"
        light_rgb = chart._rgb("$series-2")
        assert light_rgb == tuple(int(THEMES["light"].variables["k-ok"][i : i + 2], 16) for i in (1, 3, 5))

        app.theme = THEMES["high-contrast"].name
        await pilot.pause()
        contrast_ok = app.console.get_style("$ok")
        assert contrast_ok != light_ok and contrast_ok.color is not None
        assert contrast_ok.color.name == THEMES["high-contrast"].variables["k-ok"].lower()
        chart.show(data)  # drawn again now, or already on the theme's refresh
        assert chart._built_theme == app.theme, "a new theme draws the same data again, in its colours"
        assert chart._rgb("$series-2") != light_rgb
        await pilot.pause()
        drawn = [seg for seg in line.render_line(0) if "applied" in seg.text]
        want = Color.parse(THEMES["high-contrast"].variables["k-ok"]).hex.lower()
        assert drawn and all(want in str(seg.style).lower() for seg in drawn), (
            "the text is drawn in the new theme's colour"
        )
