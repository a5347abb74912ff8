"""The agent's own dependencies, as ``pyproject.toml`` says them, for the offline GPU host.

``carry.sh`` downloads them (``--list``: one requirement a line) and ``gpu.sh setup`` checks, before
anything else runs, that the wheels it carried hold every one (``--check DIR``): on 2026-12-06 a
dependency added after the wheels were downloaded (tomlkit) left the agent unable to start on the
host, and the set-up waited 536 s for engines no agent could launch. A list written by hand drifts;
this reads the one the package itself declares.

    python -m bench.real.agent_deps --list
    python -m bench.real.agent_deps --check .carry/agent-deps      # exit 1 naming what is missing

Only the standard library is used (the GPU image's python runs it before anything is installed).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

from bench import REPO

PYPROJECT = REPO / "pyproject.toml"
EXTRA = ("pip",)
"""Carried beside the dependencies: the stack's venv may have no ensurepip (docs/gpu-host.md)."""


def requirements(pyproject: Path = PYPROJECT) -> list[str]:
    """``[project].dependencies`` as written, then ``EXTRA``."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return [*project["dependencies"], *EXTRA]


def name_of(requirement: str) -> str:
    """The normalized distribution name of a requirement (PEP 503)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if match is None:
        raise ValueError(f"{requirement!r} names no distribution")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def wheel_names(directory: Path) -> set[str]:
    """The normalized distribution names of the wheels in ``directory``."""
    return {name_of(p.name.split("-", 1)[0]) for p in directory.glob("*.whl")}


def missing(directory: Path, pyproject: Path = PYPROJECT) -> list[str]:
    """The requirements no wheel in ``directory`` provides (by name; versions are pip's to check)."""
    have = wheel_names(directory)
    return [r for r in requirements(pyproject) if name_of(r) not in have]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--list", action="store_true", help="print the requirements, one a line")
    group.add_argument("--check", type=Path, metavar="DIR", help="exit 1 unless DIR's wheels hold every one")
    args = parser.parse_args()
    if args.list:
        print("\n".join(requirements()))
        return 0
    if not args.check.is_dir():
        print(f"{args.check}: no such folder of wheels (bench/real/carry.sh makes it)", file=sys.stderr)
        return 1
    lacking = missing(args.check)
    if lacking:
        print(
            f"{args.check} lacks wheels for: {', '.join(lacking)}; the agent cannot start without them. "
            "Run bench/real/carry.sh again here (it downloads what pyproject.toml lists).",
            file=sys.stderr,
        )
        return 1
    print(f"{args.check}: a wheel for each of the agent's {len(requirements())} requirements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
