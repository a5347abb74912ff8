"""Installing, detecting and removing the patch set (overlay and series) on an installed SGLang, safely.

Recipe (the decision record ``docs/decisions/0001-patch-set.md``), and why:

* The wheel's ``RECORD`` (sha256 per file) is the definition of pristine: the hooked files match it
  and none of the overlay's files exists. A file that matches neither pristine nor our installed
  result was changed by someone else; we refuse rather than guess.
* The series is applied with GNU ``patch`` (argv, never a shell) to a scratch copy of the hooked
  files, never to site-packages directly. Only when every patch applied cleanly are the overlay's
  modules and then the hooked files moved into site-packages, one ``os.replace`` per file, so a
  failing patch changes nothing.
* "Installed" is detected exactly and needs no state of ours: every overlay file has the shipped
  bytes, and reversing the series in a scratch copy (``patch -R --dry-run`` per patch, last first)
  gives back RECORD.
* The pristine originals of the hooked files are kept as ``<file>.orig`` next to them; a revert
  restores them after checking them against RECORD, so even a reverse patch that no longer applies
  can be undone. A revert removes the overlay's modules (and their byte-compiled caches).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
from enum import Enum
from importlib.metadata import Distribution
from pathlib import Path

from agent.install.patchset import Patch, PatchSet

ORIG_SUFFIX = ".orig"


class PatchError(Exception):
    """The patch set cannot be applied or reverted; the message says why and what to do."""


class PatchState(Enum):
    PRISTINE = "pristine"
    APPLIED = "applied"
    MODIFIED = "modified"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record_b64(hexdigest: str) -> str:
    return base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()


def find_dist_info(site_packages: Path, dist: str = "sglang") -> Path:
    """The ``<dist>-<version>.dist-info`` folder of an installed distribution."""
    found = sorted(site_packages.glob(f"{dist}-*.dist-info"))
    if len(found) != 1:
        raise PatchError(
            f"expected one {dist}-*.dist-info in {site_packages}, found {len(found)}; "
            f"reinstall {dist} into this environment"
        )
    return found[0]


def record_hashes(site_packages: Path, dist: str = "sglang") -> dict[str, str]:
    """``relative path -> urlsafe-b64 sha256`` from the installed distribution's RECORD."""
    distribution = Distribution.at(find_dist_info(site_packages, dist))
    hashes: dict[str, str] = {}
    for entry in distribution.files or []:
        if entry.hash is not None and entry.hash.mode == "sha256":
            hashes[entry.as_posix()] = entry.hash.value
    return hashes


def _run_patch(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    patch_bin = shutil.which("patch")
    if patch_bin is None:
        raise PatchError("GNU patch is not installed; install it (apt-get install patch) and retry")
    return subprocess.run(
        [patch_bin, "-p1", "--batch", "--fuzz=0", "--no-backup-if-mismatch", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def _copy_targets(site_packages: Path, patch_set: PatchSet, scratch: Path) -> None:
    for target in patch_set.targets():
        source = site_packages / target
        if source.exists():
            dest = scratch / target
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)


def apply_in(scratch: Path, patch: Patch, reverse: bool) -> str | None:
    """Apply (or reverse) one patch in ``scratch`` after a dry run; the failure text, or None."""
    direction = ["-R"] if reverse else ["--forward"]
    for extra in (["--dry-run"], []):
        done = _run_patch([*direction, *extra, "-i", str(patch.path)], scratch)
        if done.returncode != 0:
            return (done.stdout + done.stderr).strip()
    return None


def _hooks_match_record(tree: Path, patch_set: PatchSet, record: dict[str, str]) -> bool:
    for target in patch_set.targets():
        path = tree / target
        if target not in record or not path.is_file():
            return False
        if _record_b64(file_sha256(path)) != record[target]:
            return False
    return True


def _overlay_present(site_packages: Path, patch_set: PatchSet) -> list[bool]:
    return [(site_packages / item.path).exists() for item in patch_set.overlay]


def _overlay_as_shipped(site_packages: Path, patch_set: PatchSet) -> bool:
    return all(
        (site_packages / item.path).is_file() and file_sha256(site_packages / item.path) == item.sha256
        for item in patch_set.overlay
    )


def detect_state(site_packages: Path, patch_set: PatchSet) -> PatchState:
    """Pristine (RECORD, no overlay), applied (the overlay as shipped and the hooks reverse cleanly to
    RECORD), or modified (anything else)."""
    record = record_hashes(site_packages)
    present = _overlay_present(site_packages, patch_set)
    if not any(present) and _hooks_match_record(site_packages, patch_set, record):
        return PatchState.PRISTINE
    if not _overlay_as_shipped(site_packages, patch_set):
        return PatchState.MODIFIED
    with tempfile.TemporaryDirectory(prefix="k25-patch-") as tmp:
        scratch = Path(tmp)
        _copy_targets(site_packages, patch_set, scratch)
        for patch in reversed(patch_set.patches):
            if apply_in(scratch, patch, reverse=True) is not None:
                return PatchState.MODIFIED
        return PatchState.APPLIED if _hooks_match_record(scratch, patch_set, record) else PatchState.MODIFIED


def installed_file_hashes(site_packages: Path, patch_set: PatchSet) -> dict[str, str]:
    """sha256 (hex) of every file the set installs (overlay and hooked), as it is now; recorded in
    the stack manifest, checked before every engine start."""
    return {
        path: file_sha256(site_packages / path)
        for path in patch_set.installed_paths()
        if (site_packages / path).is_file()
    }


def _install_file(source: Path, dest: Path) -> None:
    """Replace ``dest`` atomically (same-directory temp file + rename)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        shutil.copyfile(source, tmp)
        if dest.exists():
            shutil.copymode(dest, tmp)
        else:
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; a module must be readable like its neighbours
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _remove_overlay(site_packages: Path, patch_set: PatchSet) -> None:
    """The overlay's modules and their byte-compiled caches (``compileall`` made them)."""
    for item in patch_set.overlay:
        module = site_packages / item.path
        module.unlink(missing_ok=True)
        for cached in module.parent.glob(f"__pycache__/{module.stem}.*.pyc"):
            cached.unlink(missing_ok=True)


def apply_patch_set(site_packages: Path, patch_set: PatchSet) -> PatchState:
    """Bring the installed files to the patched state; returns the state found before.

    Applied already → nothing changes. Modified → refused, nothing changes.
    """
    state = detect_state(site_packages, patch_set)
    if state is PatchState.APPLIED:
        return state
    if state is PatchState.MODIFIED:
        raise PatchError(
            "SGLang files the patch set touches (its hooked files and overlay modules) match neither "
            "the wheel's RECORD nor the patched result (changed by hand, or another patch version); "
            "reinstall the pinned sglang (agent install --rebuild) and apply again"
        )
    owned = sorted(set(record_hashes(site_packages)).intersection(i.path for i in patch_set.overlay))
    if owned:
        raise PatchError(
            f"the wheel has its own {owned[0]}; the overlay never replaces a file of SGLang's "
            "(this patch set is not for this sglang)"
        )
    with tempfile.TemporaryDirectory(prefix="k25-patch-") as tmp:
        scratch = Path(tmp)
        _copy_targets(site_packages, patch_set, scratch)
        for patch in patch_set.patches:
            failure = apply_in(scratch, patch, reverse=False)
            if failure is not None:
                raise PatchError(f"patch {patch.name} does not apply to the pristine files:\n{failure}")
        for target in patch_set.targets():
            live = site_packages / target
            shutil.copyfile(live, live.with_name(live.name + ORIG_SUFFIX))
        # The overlay first: a hooked file imports it, so no moment has a hook without its module.
        for item in patch_set.overlay:
            _install_file(item.source, site_packages / item.path)
        for target in patch_set.targets():
            _install_file(scratch / target, site_packages / target)
    return state


def revert_patch_set(site_packages: Path, patch_set: PatchSet) -> PatchState:
    """Restore the pristine files and remove the overlay; returns the state found before. Verified
    against RECORD."""
    record = record_hashes(site_packages)
    state = detect_state(site_packages, patch_set)
    if state is PatchState.PRISTINE:
        return state
    with tempfile.TemporaryDirectory(prefix="k25-patch-") as tmp:
        scratch = Path(tmp)
        if state is PatchState.APPLIED:
            _copy_targets(site_packages, patch_set, scratch)
            for patch in reversed(patch_set.patches):
                failure = apply_in(scratch, patch, reverse=True)
                if failure is not None:  # pragma: no cover - detect_state just reversed it
                    raise PatchError(f"patch {patch.name} does not reverse:\n{failure}")
        else:
            for target in patch_set.targets():
                live = site_packages / target
                orig = site_packages / (target + ORIG_SUFFIX)
                if live.is_file() and _record_b64(file_sha256(live)) == record.get(target):
                    orig = live  # not hooked (a stray overlay module made the state "modified")
                elif not orig.is_file():
                    raise PatchError(
                        f"{target} was modified and no {ORIG_SUFFIX} copy exists; "
                        "reinstall the pinned sglang to get pristine files"
                    )
                dest = scratch / target
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(orig, dest)
        if not _hooks_match_record(scratch, patch_set, record):
            raise PatchError(
                "the restored files do not match the wheel's RECORD; reinstall the pinned sglang"
            )
        # The hooks first: once they are gone nothing imports the overlay.
        for target in patch_set.targets():
            live = site_packages / target
            _install_file(scratch / target, live)
            live.with_name(live.name + ORIG_SUFFIX).unlink(missing_ok=True)
        _remove_overlay(site_packages, patch_set)
    return state
