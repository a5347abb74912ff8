"""``agent install``: build the pinned, patched SGLang stack venv for a profile (or revert the patches).

The plan is printed first, always (with ``--revert-patches``, the revert's own: what it restores,
removes and keeps aside, ``agent.install.revert``); ``--dry-run`` stops there. Each step prints what it does and how
long it took. A failure leaves the previous stack usable (see ``agent.install.installer``).

Offline (an air-gapped GPU host): ``--wheelhouse DIR`` installs from a directory of wheels with
``--no-index``, never contacting an index. Alone, it resolves ``sglang==<pin>`` from DIR, which must
then hold every wheel the pin needs. With ``--system-site-packages`` the venv also sees the packages of
the interpreter that builds it (a GPU image's own torch, cuBLAS, cuDNN, ... ; when that interpreter
is itself a venv, its site-packages are added by a .pth file); every wheel of DIR is then installed
with ``--no-deps`` (the wheelhouse plus the image is the stack); the stack's own python then checks
the installed packages' requirements against everything on its sys.path (its site-packages, the
parent venv's, the system site), only those really unmet (missing, or a version the requirement
excludes) are listed as warnings, and the verify step (importing what the server imports at
start-up) decides.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from agent.install.installer import StepFailed, inspect_current, install, revert_patches
from agent.install.plan import InstallPlan, build_plan
from agent.install.revert import revert_plan
from agent.install.stack import Sources
from agent.profile.store import ProfileError, load_profile


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "install",
        help="create the pinned, patched SGLang stack venv for a profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--profile", required=True, help="profile TOML file")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    parser.add_argument("--venv", help="stack venv path (default: the profile's stack.venv)")
    parser.add_argument("--index-url", help="package index (e.g. a mirror, or file:///path/simple offline)")
    parser.add_argument(
        "--find-links", action="append", default=[], metavar="DIR_OR_URL", help="extra wheels (repeatable)"
    )
    parser.add_argument(
        "--wheelhouse",
        type=Path,
        metavar="DIR",
        help="install offline from this directory of wheels (--no-index); it must hold one sglang-<pin> wheel",
    )
    parser.add_argument(
        "--system-site-packages",
        action="store_true",
        help="the venv also sees the packages of the interpreter that builds it (a GPU image's CUDA libraries); "
        "with --wheelhouse: every wheel installed --no-deps, requirements unmet on the stack's sys.path "
        "listed as warnings",
    )
    parser.add_argument("--installer", choices=("auto", "uv", "pip"), default="auto")
    parser.add_argument(
        "--rebuild", action="store_true", help="build a new stack even if the current one fits"
    )
    parser.add_argument(
        "--revert-patches", action="store_true", help="restore SGLang's pristine files in the stack in use"
    )
    parser.set_defaults(handler=run)


def _say(line: str) -> None:
    print(line, flush=True)


def _revert_plan(plan: InstallPlan) -> list[str]:
    """What ``--revert-patches`` will do to the stack in use (not the install plan)."""
    current = inspect_current(plan)
    if current is None:
        return revert_plan(plan, None, None, {})
    recorded = current.manifest.patched_files if current.manifest is not None else {}
    return revert_plan(plan, current.build, current.site_packages, recorded)


def run(args: argparse.Namespace) -> int:
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"agent install: the profile is not valid:\n{exc}", file=sys.stderr)
        return 2
    plan = build_plan(
        profile,
        venv=args.venv,
        sources=Sources(index_url=args.index_url, find_links=tuple(args.find_links)),
        installer=args.installer,
        wheelhouse=args.wheelhouse,
        system_site_packages=args.system_site_packages,
    )
    for line in _revert_plan(plan) if args.revert_patches else plan.render():
        _say(line)
    if args.dry_run:
        _say("dry run: nothing changed")
        return 1 if plan.problems else 0
    started = time.monotonic()
    try:
        if args.revert_patches:
            outcome = revert_patches(plan, _say)
        else:
            outcome = install(plan, _say, rebuild=args.rebuild)
    except StepFailed as exc:
        print(f"agent install failed at step '{exc.step}': {exc.reason}", file=sys.stderr)
        print(f"nothing was switched: {plan.link} is as it was before this run", file=sys.stderr)
        return 1
    _say(
        f"{outcome.status}: {outcome.build} (manifest {outcome.manifest}) in {time.monotonic() - started:.1f} s"
    )
    return 0
