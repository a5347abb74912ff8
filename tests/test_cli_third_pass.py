"""Issue 39, item 10: the command lines as a newcomer meets them. Each test fails on the code before
issue 39: ``k25console`` printed ten lines of CryptographyDeprecationWarning on every start (``--help``
included), ``agent --help`` listed ``get`` and ``save`` beside ``agent profile get/save`` with raw
double backticks in the help texts, ``agent audit --help`` had no summary and listed its kinds as
"...", and ``agent status`` could not find the demo's agent (its state dir is a temp dir).

The commands run as processes, as a newcomer types them; the demo is the real ``DemoStack``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli.main import build_parser
from agent.wire.actions import ACTION_KINDS
from agent.wire.audit import AGENT_KINDS

REPO = Path(__file__).resolve().parents[1]


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("args", [["--help"], ["--fleet"]])
def test_every_k25console_start_is_free_of_the_crypto_libraries_deprecation_noise(args: list[str]) -> None:
    """The warnings are the libraries' (asyncssh still names DSA), not the operator's to act on. Python
    is run with warnings shown by default (-W default), as a newcomer's terminal would show them;
    ``--fleet`` alone is an argument error that comes after the console's own imports (asyncssh's)."""
    done = run("-W", "default", "-c", "import sys; from console.cli import main; sys.exit(main())", *args)
    assert "CryptographyDeprecationWarning" not in done.stderr, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    if args == ["--help"]:
        assert done.returncode == 0 and done.stdout.startswith("usage: k25console")
    else:
        assert done.returncode == 2 and "--fleet goes with --demo" in done.stderr


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_agent_help_has_no_duplicate_top_level_commands() -> None:
    """``get`` and ``save`` are ``agent profile``'s; at the top level they were the same commands again."""
    top = _subcommands(build_parser())
    assert "get" not in top and "save" not in top, sorted(top)
    profile = _subcommands(top["profile"])
    assert {"get", "save"} <= set(profile)
    shown = run("-m", "agent.cli.main", "--help")
    assert shown.returncode == 0
    listed = [
        line.split()[0] for line in shown.stdout.splitlines() if line.startswith("    ") and line.split()
    ]
    assert "get" not in listed and "save" not in listed, shown.stdout


def _all_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.extend(_all_parsers(sub, (*path, name)))
    return out


def test_every_agent_help_is_plain_text_without_double_backticks() -> None:
    """Help is read on a terminal: ``name`` is reStructuredText for a docstring, noise on a screen."""
    parser = build_parser()
    paths = _all_parsers(parser)
    assert len(paths) > 20  # every command and subcommand, not a few
    for path in paths:
        sub = parser
        for name in path:
            sub = _subcommands(sub)[name]
        text = sub.format_help()
        assert "``" not in text, (path, [line for line in text.splitlines() if "``" in line])


def test_agent_audit_help_says_what_it_does_and_lists_its_kinds() -> None:
    done = run("-m", "agent.cli.main", "audit", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "..." not in text
    summary = text.split("options:")[0].lower()
    assert "what changed" in summary and "who asked" in summary, summary
    for kind in (*ACTION_KINDS, *AGENT_KINDS):
        assert kind in text, kind


def test_agent_audit_refuses_a_kind_it_does_not_know_and_names_the_kinds() -> None:
    done = run("-m", "agent.cli.main", "audit", "--kind", "thresold", "--state-dir", "/nonexistent")
    assert done.returncode == 2
    assert "thresold" in done.stderr and "threshold" in done.stderr and "bench_start" in done.stderr


def test_agent_status_finds_the_running_demo_and_says_where_it_is(tmp_path: Path) -> None:
    """A newcomer runs ``./dev demo``, then ``agent status`` in another terminal: it finds the demo's
    agent (its state dir is a temp dir), says which state dir it read, and still says when none runs."""
    from console.demo.stack import DemoStack

    home = {"XDG_STATE_HOME": str(tmp_path / "state"), "TMPDIR": str(tmp_path)}
    before = run("-m", "agent.cli.main", "status", env=home)
    assert before.returncode == 1 and "not running" in before.stderr
    os.environ["TMPDIR"] = str(tmp_path)
    try:
        import tempfile

        tempfile.tempdir = None  # the demo makes its state dir under this TMPDIR
        demo = DemoStack(traffic=False)
        try:
            demo.start()
            demo.wait_engine_ready()
            found = run("-m", "agent.cli.main", "status", env=home)
        finally:
            demo.stop()
    finally:
        del os.environ["TMPDIR"]
        tempfile.tempdir = None
    assert found.returncode == 0, found.stderr
    assert str(demo.state_dir) in found.stdout + found.stderr
    assert "the demo's agent" in found.stdout + found.stderr
    assert "engine: sim ready" in found.stdout, found.stdout
    after = run("-m", "agent.cli.main", "status", env=home)
    assert after.returncode == 1 and "not running" in after.stderr
