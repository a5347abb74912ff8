"""Carrying out an install plan: build beside, verify, then switch; or find the stack in place.

Three paths, chosen by what is already there (see ``plan.py`` for the layout):

* in place: the link's build has a manifest for the same pin and patch set, and every installed file
  still has the recorded hash → nothing is touched (a second run changes nothing);
* patch in place: the same packages, the hooked files pristine by the wheel's RECORD and no overlay
  module there (after ``--revert-patches`` or a reinstall) → the patch set is applied to that build,
  verified, recorded; if verification fails the patches are reverted again, so the stack is as it was;
* rebuild: anything else (no stack, another pin, a hand-edited file, ``--rebuild``) → a new build in
  its own folder, and the link switches only after it verified; a failure deletes the new build.

Every failure is a ``StepFailed`` naming the step, and the previous stack stays usable.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from agent.install import requirements, stack
from agent.install.manifest import PatchRecord, StackManifest, manifest_path, read_manifest, write_manifest
from agent.install.patching import (
    PatchError,
    PatchState,
    apply_patch_set,
    detect_state,
    file_sha256,
    find_dist_info,
    installed_file_hashes,
    revert_patch_set,
)
from agent.install.plan import InstallPlan
from agent.install.revert import keep_hand_edits
from agent.install.stack_check import site_packages_of
from agent.sglang.startup import LAUNCHER_MODULE, START_UP_IMPORTS

Say = Callable[[str], None]
Status = Literal["unchanged", "installed", "patched", "reverted"]
KEEP_BUILDS = 2
"""The build in use and the one before it (to go back by hand); older builds are removed."""


class StepFailed(Exception):
    def __init__(self, step: str, reason: str) -> None:
        self.step = step
        self.reason = reason
        super().__init__(f"step '{step}' failed: {reason}")


@dataclass(frozen=True)
class Outcome:
    status: Status
    build: Path
    manifest: Path


@dataclass(frozen=True)
class CurrentStack:
    build: Path
    site_packages: Path
    manifest: StackManifest | None
    packages_ok: bool
    patches_ok: bool


def inspect_current(plan: InstallPlan) -> CurrentStack | None:
    """The build the link points at, and whether it already satisfies the plan."""
    if not plan.link.is_symlink() or not plan.link.exists():
        return None
    build = plan.link.resolve()
    site = site_packages_of(build)
    if site is None or not stack.venv_python(build).exists():
        return None
    manifest = read_manifest(build)
    packages_ok = False
    if manifest is not None and manifest.packages_fingerprint == plan.packages_fingerprint:
        try:
            dist_info = find_dist_info(site)
        except PatchError:
            dist_info = None
        packages_ok = dist_info is not None and dist_info.name == f"sglang-{plan.sglang_version}.dist-info"
    patches_ok = (
        packages_ok
        and manifest is not None
        and manifest.patch_set_sha256 == plan.patch_set.sha256
        and set(manifest.patched_files) == set(plan.patch_set.installed_paths())
        and all(
            (site / path).is_file() and file_sha256(site / path) == digest
            for path, digest in manifest.patched_files.items()
        )
    )
    return CurrentStack(build, site, manifest, packages_ok, patches_ok)


class _Steps:
    """Runs the named steps, printing each one as it starts and, when it ends, how long it took."""

    def __init__(self, say: Say) -> None:
        self.say = say

    def run(self, name: str, action: Callable[[], object]) -> None:
        self.say(f"- {name} ...")
        started = time.monotonic()
        try:
            detail = action()
        except (stack.CommandFailed, PatchError, OSError, ValueError) as exc:
            self.say(f"  {name}: FAILED after {time.monotonic() - started:.1f} s")
            raise StepFailed(name, str(exc)) from exc
        extra = f": {detail}" if isinstance(detail, str) and detail else ""
        self.say(f"  {name}: done in {time.monotonic() - started:.1f} s{extra}")


def _verify(plan: InstallPlan, build: Path, site: Path, say: Say) -> str:
    for module, seconds in stack.check_imports(build, plan.sglang_version, START_UP_IMPORTS):
        say(f"    import {module}: ok ({seconds:.1f} s)")
    seconds = stack.check_launcher(build)
    say(f"    python -m {LAUNCHER_MODULE} --help: ok ({seconds:.1f} s)")
    if detect_state(site, plan.patch_set) is not PatchState.APPLIED:
        raise PatchError(
            "the installed files are not the overlay as shipped with hooks that reverse to the wheel's RECORD"
        )
    return "the stack imports what the server imports at start-up, and the patch set is applied"


@dataclass
class _BuildNotes:
    """What a build found on the way, for the manifest."""

    unmet: list[str] = field(default_factory=list)
    compile_failures: int | None = None


def _manifest(
    plan: InstallPlan, build: Path, site: Path, patched: bool, notes: _BuildNotes | None = None
) -> StackManifest:
    return StackManifest(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        profile=plan.profile_name,
        python_version=plan.python_version,
        installer=plan.installer,
        index_url=plan.sources.index_url,
        find_links=list(plan.sources.find_links),
        sglang_version=plan.sglang_version,
        packages=stack.installed_packages(build),
        packages_fingerprint=plan.packages_fingerprint,
        patch_set_sha256=plan.patch_set.sha256 if patched else None,
        patches=[PatchRecord(name=p.name, sha256=p.sha256) for p in plan.patch_set.patches]
        if patched
        else [],
        patched_files=installed_file_hashes(site, plan.patch_set) if patched else {},
        wheelhouse=str(plan.wheelhouse.directory) if plan.wheelhouse else None,
        system_site_packages=plan.system_site,
        parent_site=list(plan.parent_site),
        unmet_requirements=notes.unmet if notes else [],
        byte_compile_failures=notes.compile_failures if notes else None,
    )


def _switch_link(link: Path, build: Path) -> None:
    """Point ``link`` at ``build`` with one atomic rename (a reader sees the old or the new build)."""
    tmp = link.with_name(f".{link.name}.switch-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(build, target_is_directory=True)
    os.replace(tmp, link)


def _prune(plan: InstallPlan, say: Say) -> None:
    in_use = plan.link.resolve()
    builds = sorted(
        (p for p in plan.builds.iterdir() if p.is_dir() and not p.is_symlink()), key=lambda p: p.name
    )
    keep = {in_use, *builds[-KEEP_BUILDS:]}
    for old in builds:
        if old not in keep:
            say(f"- removing old build {old.name}")
            shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _exclusive(plan: InstallPlan) -> Iterator[None]:
    """One ``agent install`` per stack at a time: a second would switch the link under the first."""
    plan.builds.mkdir(parents=True, exist_ok=True)
    with open(plan.builds / ".install.lock", "a") as handle:  # "a": opening must not touch it
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StepFailed(
                "lock", f"another agent install is working on {plan.link}; wait for it"
            ) from None
        yield


def install(plan: InstallPlan, say: Say, rebuild: bool = False) -> Outcome:
    if plan.problems:
        raise StepFailed("plan", "; ".join(plan.problems))
    with _exclusive(plan):
        return _install_locked(plan, say, rebuild)


def _install_locked(plan: InstallPlan, say: Say, rebuild: bool) -> Outcome:
    current = inspect_current(plan)
    if current is not None and not rebuild:
        if current.packages_ok and current.patches_ok:
            say(f"stack in place: {current.build} matches the plan; nothing to do")
            return Outcome("unchanged", current.build, manifest_path(current.build))
        if current.packages_ok and detect_state(current.site_packages, plan.patch_set) is PatchState.PRISTINE:
            return _patch_in_place(plan, current, say)
    return _rebuild(plan, say)


def _patch_in_place(plan: InstallPlan, current: CurrentStack, say: Say) -> Outcome:
    say(f"packages in place in {current.build}; applying the patch set there")
    steps = _Steps(say)
    site = current.site_packages
    steps.run("apply patches", lambda: apply_patch_set(site, plan.patch_set))
    try:
        steps.run("verify", lambda: _verify(plan, current.build, site, say))
        steps.run(
            "write manifest",
            lambda: write_manifest(current.build, _manifest(plan, current.build, site, True)),
        )
    except StepFailed:
        revert_patch_set(site, plan.patch_set)
        say("- patches reverted; the stack is as it was before this run")
        raise
    return Outcome("patched", current.build, manifest_path(current.build))


def _rebuild(plan: InstallPlan, say: Say) -> Outcome:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    # The random tail keeps two builds of the same packages in the same second apart: without it a
    # --rebuild could build into, and on failure delete, the stack in use.
    build = plan.builds / (
        f"{stamp}-{plan.packages_fingerprint[:8]}-{plan.patch_set.sha256[:8]}-{secrets.token_hex(3)}"
    )
    say(f"building a new stack in {build}")
    plan.builds.mkdir(parents=True, exist_ok=True)
    steps = _Steps(say)
    try:
        notes = _build(plan, build, steps, say)
    except StepFailed:
        shutil.rmtree(build, ignore_errors=True)
        raise
    _prune(plan, say)
    if notes.unmet:
        say(
            f"warning: {len(notes.unmet)} requirement(s) of the installed packages are not met by what the "
            "stack's python sees (its own site-packages, the parent venv's, the system site);"
        )
        say("  the stack verified with them as they are (recorded in the manifest):")
        for line in notes.unmet:
            say(f"  warning: {line}")
    return Outcome("installed", build, manifest_path(build))


def _build(plan: InstallPlan, build: Path, steps: _Steps, say: Say) -> _BuildNotes:
    python = plan.python or plan.python_version
    pip_wheel = plan.wheelhouse.pip_wheel.path if plan.wheelhouse and plan.wheelhouse.pip_wheel else None
    notes = _BuildNotes()
    site_box: list[Path] = []
    create = stack.create_venv_argv(
        plan.installer,
        python,
        build,
        plan.uv,
        system_site=plan.system_site,
        with_pip=plan.with_pip,
        offline=plan.offline,
    )

    def create_venv() -> str:
        stack.run(create, timeout=600)
        site_box.append(stack.site_packages(build))
        if plan.parent_site:
            pth = stack.write_parent_site_pth(site_box[0], plan.parent_site)
            return f"{pth.name} adds {', '.join(plan.parent_site)}"
        return ""

    steps.run("create venv", create_venv)
    install = stack.install_argv(
        plan.installer,
        build,
        plan.install_requirements(),
        plan.sources,
        plan.uv,
        runner=plan.pip_runner,
        pip_wheel=pip_wheel,
        source_args=plan.source_args(),
        offline=plan.offline,
    )
    count = len(plan.install_requirements())
    steps.run("install packages", lambda: (stack.run(install), f"{count} requirement(s) or wheel(s)")[1])
    if plan.no_deps:

        def check_requirements() -> str:
            try:  # a report, not a gate: the verify step decides
                report = requirements.check_requirements(build)
            except stack.CommandFailed as exc:
                said = str(exc).splitlines()  # the command, then the tail of its output: one line
                notes.unmet = [f"the requirements could not be checked: {' '.join(said[:1] + said[1:][-1:])}"]
                return "could not check (warning below; the verify step decides)"
            notes.unmet = [item.describe() for item in report.unmet]
            return (
                f"{report.checked} installed packages checked against the {report.visible} on the stack's "
                f"sys.path ({report.packaging}): "
                + (
                    f"{len(notes.unmet)} unmet (warnings below; the verify step decides)"
                    if notes.unmet
                    else "all met"
                )
            )

        steps.run("check requirements", check_requirements)
    steps.run("apply patches", lambda: apply_patch_set(site_box[0], plan.patch_set))

    def compile_site() -> str:
        notes.compile_failures = stack.byte_compile(build, site_box[0])
        return (
            f"{notes.compile_failures} file(s) did not compile (tolerated)" if notes.compile_failures else ""
        )

    steps.run("byte-compile", compile_site)
    steps.run("verify", lambda: _verify(plan, build, site_box[0], say))
    steps.run(
        "write manifest", lambda: write_manifest(build, _manifest(plan, build, site_box[0], True, notes))
    )
    steps.run("switch stack", lambda: _switch_link(plan.link, build))
    return notes


def revert_patches(plan: InstallPlan, say: Say) -> Outcome:
    """Restore the pristine SGLang files in the stack in use; the manifest then records no patches."""
    current = inspect_current(plan)
    if current is None:
        raise StepFailed("find stack", f"no stack made by agent install at {plan.link}")
    with _exclusive(plan):
        return _revert_locked(plan, current, say)


def _revert_locked(plan: InstallPlan, current: CurrentStack, say: Say) -> Outcome:
    steps = _Steps(say)
    recorded = current.manifest.patched_files if current.manifest is not None else {}
    steps.run("keep hand edits", lambda: keep_hand_edits(current.build, current.site_packages, recorded, say))
    steps.run("revert patches", lambda: revert_patch_set(current.site_packages, plan.patch_set))
    steps.run(
        "write manifest",
        lambda: write_manifest(current.build, _manifest(plan, current.build, current.site_packages, False)),
    )
    return Outcome("reverted", current.build, manifest_path(current.build))
