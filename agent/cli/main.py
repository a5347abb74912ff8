"""Entry point of the ``agent`` command.

Every module in this package that defines ``register(subparsers)`` adds its subcommand; adding a
command never means editing this file. A subcommand's handler returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence

import agent
import agent.cli

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent",
        description="k25console's agent on the GPU host: profiles, the SGLang stack, the daemon, benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"agent {agent.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(agent.cli.__path__), key=lambda m: m.name):
        if info.name == "main" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"agent.cli.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    plain_help(parser)
    return parser


_LITERAL = re.compile(r"``([^`]*)``")


def plain_help(parser: argparse.ArgumentParser) -> None:
    """Help is read on a terminal: a module docstring used as a description says ``name`` (its
    reStructuredText literal), which reads there as noise; every command's and subcommand's
    description, epilog and argument help says it as plain text."""
    for attr in ("description", "epilog"):
        text = getattr(parser, attr)
        if text:
            setattr(parser, attr, _LITERAL.sub(r"\1", text))
    for action in parser._actions:
        if action.help:
            action.help = _LITERAL.sub(r"\1", action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:  # the one-line help each subcommand is listed with
                if choice.help:
                    choice.help = _LITERAL.sub(r"\1", choice.help)
            for sub in dict.fromkeys(action.choices.values()):
                plain_help(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
