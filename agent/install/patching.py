"""Applying, detecting and reverting the patch set on an installed SGLang, safely.

Recipe (see ``../shared/reference/remote-agent.md`` §5.3), and why:

* The wheel's ``RECORD`` (sha256 per file) is the definition of pristine. A file that matches
  neither RECORD nor our patched result was changed by someone else; we refuse rather than guess.
* Patches are applied with GNU ``patch`` (argv, never a shell) to a scratch copy of the touched
  files, never to site-packages directly. Only when every patch applied cleanly are the results
  moved into site-packages, one ``os.replace`` per file, so a failing patch changes nothing.
* "Already applied" is detected by reversing the set in a scratch copy (``patch -R --dry-run`` per
  patch, last first) and comparing the result with RECORD: exact, and it needs no state of ours.
* The pristine originals are kept as ``<file>.orig`` next to the file; a revert restores them after
  checking them against RECORD, so even a reverse patch that no longer applies can be undone.
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
        source = site_packages / target.path
        if source.exists():
            dest = scratch / target.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)


def _apply_in(scratch: Path, patch: Patch, reverse: bool) -> str | None:
    """Apply (or reverse) one patch in ``scratch`` after a dry run; the failure text, or None."""
    direction = ["-R"] if reverse else ["--forward"]
    for extra in (["--dry-run"], []):
        done = _run_patch([*direction, *extra, "-i", str(patch.diff_path)], scratch)
        if done.returncode != 0:
            return (done.stdout + done.stderr).strip()
    return None


def _matches_record(tree: Path, patch_set: PatchSet, record: dict[str, str]) -> bool:
    for target in patch_set.targets():
        path = tree / target.path
        if target.created:
            if path.exists() and path.stat().st_size > 0:
                return False
            continue
        if target.path not in record or not path.is_file():
            return False
        if _record_b64(file_sha256(path)) != record[target.path]:
            return False
    return True


def detect_state(site_packages: Path, patch_set: PatchSet) -> PatchState:
    """Pristine (matches RECORD), applied (reverses cleanly to RECORD), or modified (neither)."""
    record = record_hashes(site_packages)
    if _matches_record(site_packages, patch_set, record):
        return PatchState.PRISTINE
    with tempfile.TemporaryDirectory(prefix="k25-patch-") as tmp:
        scratch = Path(tmp)
        _copy_targets(site_packages, patch_set, scratch)
        for patch in reversed(patch_set.patches):
            if _apply_in(scratch, patch, reverse=True) is not None:
                return PatchState.MODIFIED
        return PatchState.APPLIED if _matches_record(scratch, patch_set, record) else PatchState.MODIFIED


def patched_file_hashes(site_packages: Path, patch_set: PatchSet) -> dict[str, str]:
    """sha256 (hex) of every file the set touches, as it is now; recorded in the stack manifest."""
    return {
        t.path: file_sha256(site_packages / t.path)
        for t in patch_set.targets()
        if (site_packages / t.path).is_file()
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


def apply_patch_set(site_packages: Path, patch_set: PatchSet) -> PatchState:
    """Bring the installed files to the patched state; returns the state found before.

    Applied already → nothing changes. Modified → refused, nothing changes.
    """
    state = detect_state(site_packages, patch_set)
    if state is PatchState.APPLIED:
        return state
    if state is PatchState.MODIFIED:
        raise PatchError(
            "SGLang files the patch set touches match neither the wheel's RECORD nor the patched "
            "result (changed by hand, or another patch version); reinstall the pinned sglang "
            "(agent install rebuilds the stack) and apply again"
        )
    with tempfile.TemporaryDirectory(prefix="k25-patch-") as tmp:
        scratch = Path(tmp)
        _copy_targets(site_packages, patch_set, scratch)
        for patch in patch_set.patches:
            failure = _apply_in(scratch, patch, reverse=False)
            if failure is not None:
                raise PatchError(f"patch {patch.name} does not apply to the pristine files:\n{failure}")
        for target in patch_set.targets():
            live = site_packages / target.path
            if not target.created:
                shutil.copyfile(live, live.with_name(live.name + ORIG_SUFFIX))
        for target in patch_set.targets():
            _install_file(scratch / target.path, site_packages / target.path)
    return state


def revert_patch_set(site_packages: Path, patch_set: PatchSet) -> PatchState:
    """Restore the pristine files; returns the state found before. Verified against RECORD."""
    record = record_hashes(site_packages)
    state = detect_state(site_packages, patch_set)
    if state is PatchState.PRISTINE:
        return state
    with tempfile.TemporaryDirectory(prefix="k25-patch-") as tmp:
        scratch = Path(tmp)
        if state is PatchState.APPLIED:
            _copy_targets(site_packages, patch_set, scratch)
            for patch in reversed(patch_set.patches):
                failure = _apply_in(scratch, patch, reverse=True)
                if failure is not None:  # pragma: no cover - detect_state just reversed it
                    raise PatchError(f"patch {patch.name} does not reverse:\n{failure}")
        else:
            for target in patch_set.targets():
                if target.created:
                    continue
                orig = site_packages / (target.path + ORIG_SUFFIX)
                if not orig.is_file():
                    raise PatchError(
                        f"{target.path} was modified and no {ORIG_SUFFIX} copy exists; "
                        "reinstall the pinned sglang to get pristine files"
                    )
                dest = scratch / target.path
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(orig, dest)
        if not _matches_record(scratch, patch_set, record):
            raise PatchError(
                "the restored files do not match the wheel's RECORD; reinstall the pinned sglang"
            )
        for target in patch_set.targets():
            live = site_packages / target.path
            if target.created:
                live.unlink(missing_ok=True)
            else:
                _install_file(scratch / target.path, live)
                live.with_name(live.name + ORIG_SUFFIX).unlink(missing_ok=True)
    return state
