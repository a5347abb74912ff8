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

from agent.profile.regular_file import NotAFile, open_regular_file
from agent.serve.paths import UnsafePathError

TOKEN_MIN, TOKEN_MAX = 32, 512
"""A token's length in characters: long enough to guess never, short enough for one header."""


def _check(fd: int, path: Path) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UnsafePathError(
            f"{path}: is {what}, not a file holding the token; remove it (a new token file is made at the "
            "next start of the agent)"
        )
    if st.st_uid != os.getuid():
        raise UnsafePathError(f"{path}: owned by uid {st.st_uid}, not by this user")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise UnsafePathError(
            f"{path}: mode {stat.S_IMODE(st.st_mode):o} lets other users read the token; "
            "delete the file (a new token is made at the next start) or chmod 600 it"
        )


def token_problem(raw: bytes) -> str | None:
    """What makes the token file's text unusable (None: it is a token), never quoting it: a bearer
    token travels in an HTTP header, so it is printable ASCII without spaces."""
    token = raw.strip(b" \t\r\n")
    wrong = sorted({b for b in token if not 0x21 <= b <= 0x7E})
    if wrong:
        kinds = []
        if any(b >= 0x80 for b in wrong):
            kinds.append("non-ASCII bytes")
        if any(b < 0x21 or b == 0x7F for b in wrong):
            kinds.append("spaces or control characters")
        return f"it holds {' and '.join(kinds)}, which no HTTP client can send in a header"
    if not TOKEN_MIN <= len(token) <= TOKEN_MAX:
        return f"it is {len(token)} characters long" if token else "it is empty"
    return None


RULE = (
    f"a token is {TOKEN_MIN} to {TOKEN_MAX} printable ASCII characters (letters, digits, punctuation; no "
    "spaces)"
)


def load_or_create_token(path: Path) -> str:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return read_token(path)
    except IsADirectoryError:
        raise UnsafePathError(
            f"{path}: is a directory, not a file holding the token; remove it (a new token file is made at "
            "the next start of the agent)"
        ) from None
    try:
        _check(fd, path)
        token = secrets.token_urlsafe(32)
        os.write(fd, (token + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return token


def read_token(path: Path) -> str:
    """The token of the file (the agent's, and its clients': ``agent status``/``stop``); a file that
    cannot hold one is refused saying why (UnsafePathError), the token never quoted."""
    try:
        fh = open_regular_file(path)
    except NotAFile as exc:
        if exc.what == "a symbolic link":
            raise UnsafePathError(
                f"{path}: is a symbolic link; the token must be a plain file of this user's (mode 600)"
            ) from None
        raise UnsafePathError(
            f"{path}: is {exc.what}, not a file holding the token; remove it (a new token file is made at "
            "the next start of the agent)"
        ) from None
    with fh:
        _check(fh.fileno(), path)
        raw = fh.read(TOKEN_MAX + 2)
    problem = token_problem(raw)
    if problem is not None:
        raise UnsafePathError(f"{path}: not a usable token: {problem}; {RULE}. Delete the file (a new token is "
                              "made at the next start of the agent) or write one that is")  # fmt: skip
    return raw.strip(b" \t\r\n").decode("ascii")


def token_matches(expected: str, header: str | None) -> bool:
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), expected.encode())
