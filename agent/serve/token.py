"""The agent's bearer token: 32 random bytes in a 0600 file, made once, checked on every start.

Created with O_CREAT|O_EXCL and mode 0600 (never briefly readable by others), then fstat-checked like
jupyter_core's secure_write; an existing file that another user owns or others can read is refused,
not silently fixed: it may have leaked. The console reads it over SSH, so it never leaves that trust
domain.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from agent.serve.paths import UnsafePathError


def _check(fd: int, path: Path) -> None:
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        raise UnsafePathError(f"{path}: owned by uid {st.st_uid}, not by this user")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise UnsafePathError(
            f"{path}: mode {stat.S_IMODE(st.st_mode):o} lets other users read the token; "
            "delete the file (a new token is made at the next start) or chmod 600 it"
        )


def load_or_create_token(path: Path) -> str:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = read_token(path)
        if len(token) < 32:
            raise UnsafePathError(
                f"{path}: the token is missing or too short; delete the file to make a new one"
            ) from None
        return token
    try:
        _check(fd, path)
        token = secrets.token_urlsafe(32)
        os.write(fd, (token + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return token


def read_token(path: Path) -> str:
    """For clients (``agent status``/``stop``): the token of a running agent."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        _check(fd, path)
        return os.read(fd, 4096).decode("ascii", errors="replace").strip()
    finally:
        os.close(fd)


def token_matches(expected: str, header: str | None) -> bool:
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), expected.encode())
