"""Whether a stack venv is still as ``agent install`` left it: the check before SGLang is launched.

The manifest records the sha256 of every file the patch set installed (the overlay's modules and
the hooked SGLang files). A file whose hash changed since (a hand edit, a reinstall over it) may no
longer hold the live controls the console relies on, or may hold anything at all: such a stack is
not launched. ``agent serve --engine sglang`` refuses to start on one, naming each file;
``agent doctor`` and ``agent smoke`` report the same words.
"""

from __future__ import annotations

from pathlib import Path

from agent.install.manifest import load_manifest, manifest_path
from agent.install.patching import file_sha256


def site_packages_of(build: Path) -> Path | None:
    """Found without starting Python (the in-place check must be cheap and change nothing)."""
    found = sorted(build.glob("lib/python*/site-packages"))
    return found[0] if len(found) == 1 else None


def changed_files(build: Path, recorded: dict[str, str]) -> list[str]:
    """Each file of ``recorded`` (path in site-packages → sha256) that is missing or differs."""
    site = site_packages_of(build.resolve())
    if site is None:
        return list(recorded)
    return [
        path
        for path, digest in recorded.items()
        if not (site / path).is_file() or file_sha256(site / path) != digest
    ]


def stack_problems(venv: Path) -> list[str]:
    """Why the stack at ``venv`` should not be launched (empty when it is as ``agent install`` left it):
    a stack without a manifest was never verified, and an installed file whose hash changed since no
    longer holds what was verified."""
    build = venv.expanduser()
    read = load_manifest(build)
    if read.manifest is None:
        why = read.problem or f"{build} has no {manifest_path(build).name}"
        return [f"{why}; run agent install"]
    if site_packages_of(build.resolve()) is None:
        return [f"{build} has no site-packages; run agent install"]
    problems = [
        f"{path} changed since agent install (sha256 differs); run agent install"
        for path in changed_files(build, read.manifest.patched_files)
    ]
    if not read.manifest.patches:
        problems.append(
            "the patch set is not applied (agent install --revert-patches was run); run agent install"
        )
    return problems


def launch_problems(venv: Path) -> list[str]:
    """What stops ``agent serve`` from launching the stack at ``venv``: the problems of a stack that
    ``agent install`` made (its manifest is there, torn or whole). A venv with no manifest at all is
    one the operator built; the agent has nothing recorded to check it against, and launches it."""
    build = venv.expanduser()
    if not manifest_path(build).exists() and not manifest_path(build).is_symlink():
        return []
    return stack_problems(build)
