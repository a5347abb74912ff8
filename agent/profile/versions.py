"""The versions of a profile file that a save replaced: the last N, whole, beside the profiles.

A single ``.bak`` kept only the file before the last save, so two saves lost the original. Each save
now first copies the file it replaces into ``versions/<name>/<UTC time>-<digest>.toml`` (atomically,
so a version is whole or absent), then drops the oldest beyond ``KEEP_VERSIONS``. A save whose
version cannot be written (a full disk) writes nothing: the file it would replace stays as it was.
The digest is the same one the API's ``If-Match`` names (``profile_digest``), so an operator can tell
which version a stale write was based on.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path

from agent.profile.atomic import write_atomic
from agent.profile.regular_file import read_regular_file

KEEP_VERSIONS = 10
"""How many replaced versions of one profile are kept (the newest)."""

VERSIONS_DIR = "versions"
"""The folder beside the profile files; ``*.toml`` at the top of the profiles folder are the profiles,
so the versions below it are never listed or loaded as profiles."""


def profile_digest(data: bytes) -> str:
    """The digest of a profile file's bytes: what ``GET /v1/profiles/{name}`` answers and ``If-Match``
    must repeat (sha256, hex)."""
    return hashlib.sha256(data).hexdigest()


def versions_dir(path: Path) -> Path:
    return path.parent / VERSIONS_DIR / path.stem


def list_versions(path: Path) -> list[Path]:
    """The kept versions of the profile at ``path``, oldest first."""
    folder = versions_dir(path)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.toml") if p.is_file())


def keep_version(path: Path, keep: int = KEEP_VERSIONS) -> Path | None:
    """Copy the file at ``path`` (about to be replaced or deleted) into its versions; None when there
    is no file. The newest kept version is not copied again when the file is unchanged since.
    Raises OSError (a full disk): the caller must then not touch ``path``."""
    try:
        data = read_regular_file(path)
    except FileNotFoundError:
        return None
    digest = profile_digest(data)
    kept = list_versions(path)
    if kept and kept[-1].stem.endswith(digest[:16]) and read_regular_file(kept[-1]) == data:
        return kept[-1]
    folder = versions_dir(path)
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
    target = folder / f"{stamp}-{digest[:16]}.toml"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(target, data)
    except OSError:
        for empty in (folder, folder.parent):  # a failed save leaves the folder as it found it
            with contextlib.suppress(OSError):
                empty.rmdir()
        raise
    for old in list_versions(path)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)
    return target
