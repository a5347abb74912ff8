"""``agent install --revert-patches``: what it will do (its own plan, printed first), and the copies it
keeps of files changed by hand before it puts the wheel's files back.

A revert removes the overlay's modules and puts the hooked files back as the wheel ships them. A file
among them that was edited by hand since ``agent install`` (its sha256 is not the manifest's) is
somebody's work: it is copied into ``<build>/k25-hand-edits/<UTC time>/`` first, under its path in
site-packages, and the revert says where. A copy rather than a refusal: the operator asked for the
pristine stack, and gets it, with nothing lost and no extra flag to learn; a refusal would leave the
stack in the state that made them revert.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from agent.install.plan import InstallPlan
from agent.install.stack_check import changed_files

HAND_EDITS = "k25-hand-edits"


def hand_edited(build: Path, site_packages: Path, recorded: dict[str, str]) -> list[str]:
    """The recorded files (path in site-packages) that are there and changed since ``agent install``."""
    return [path for path in changed_files(build, recorded) if (site_packages / path).is_file()]


def revert_plan(
    plan: InstallPlan, build: Path | None, site_packages: Path | None, recorded: dict[str, str]
) -> list[str]:
    """The lines ``agent install --revert-patches`` prints before it changes anything."""
    lines = [f"agent install --revert-patches: plan for the stack in use at {plan.link}"]

    def row(key: str, value: str) -> None:
        lines.append(f"  {key:<15} {value}")

    if build is None or site_packages is None:
        row("stack", f"none made by agent install at {plan.link}: nothing to revert")
        return lines
    row("build", str(build))
    for i, target in enumerate(plan.patch_set.targets()):
        row("restores" if i == 0 else "", f"{target} (the wheel's file, checked against its RECORD)")
    for i, item in enumerate(plan.patch_set.overlay):
        row("removes" if i == 0 else "", f"{item.path} and its byte-compiled caches")
    for i, path in enumerate(hand_edited(build, site_packages, recorded)):
        row("keeps aside" if i == 0 else "", f"{path} (changed by hand since agent install): copied into "
                                              f"{build / HAND_EDITS}/<UTC time>/ first")  # fmt: skip
    row("manifest", "rewritten: no patches (agent serve --engine sglang then refuses the stack)")
    return lines


def keep_hand_edits(
    build: Path, site_packages: Path, recorded: dict[str, str], say: Callable[[str], None]
) -> list[Path]:
    """Copy each hand-edited recorded file aside (see the module's words); returns the copies."""
    edited = hand_edited(build, site_packages, recorded)
    if not edited:
        return []
    folder = build / HAND_EDITS / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    copies = []
    for path in edited:
        copy = folder / path
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(site_packages / path, copy)
        say(f"  kept a copy of the hand-edited {path} at {copy}")
        copies.append(copy)
    return copies
