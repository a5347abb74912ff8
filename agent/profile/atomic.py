"""Writing a file so that a reader sees the old version or the new one, never half of either.

Temp file in the same directory (so the rename cannot cross a filesystem), the mode set before a byte
is written (a 0600 file is never briefly readable by others), fsync, rename, fsync of the directory
(so the rename itself survives a crash). Every file the agent keeps goes through here: profiles,
the engine record, launch secrets, the stack manifest, benchmark results. It lives in the profile
package because that is the part of the agent the console may import too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes | str, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data``; on any failure the old file is untouched and no temp file stays."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
