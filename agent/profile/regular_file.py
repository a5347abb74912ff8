"""Opening a file the agent keeps (a profile, a benchmark result, the token, the engine record, the
stack manifest, the audit) so that only a plain file is read.

What sits at one of those paths is not always what the agent wrote there: a directory made by
mistake, a symbolic link to ``/etc/shadow``, a FIFO that blocks ``open()`` until someone writes to
it. So the file is opened with ``O_NOFOLLOW`` (a link is refused, never followed) and ``O_NONBLOCK``
(a FIFO opens at once instead of hanging the agent), then ``fstat``-checked on the open descriptor
(no window between the check and the read): anything but a regular file raises :class:`NotAFile`,
whose message names the path and what is there. It is an ``OSError``, so every reader that already
says "cannot be read" for a damaged file says it for these too, and ``FileNotFoundError`` stays as
it was. It lives in the profile package, beside ``atomic``, because that is the floor every part of
the agent may import.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotAFile(OSError):
    """Something other than a regular file is at a path the agent reads its state from."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        self.path = Path(path)
        self.what = what
        super().__init__(errno.EINVAL, f"is {what}, not a regular file", str(self.path))

    def __str__(self) -> str:
        return f"{self.path}: {self.strerror}"


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def open_regular_file(path: str | os.PathLike[str], *, follow_links: bool = False) -> BinaryIO:
    """``path`` opened for reading (binary), refusing links, directories, FIFOs, sockets and devices
    with :class:`NotAFile`; a missing file raises ``FileNotFoundError`` as ``open`` does.
    ``follow_links``: a path an operator named on the command line (``--profile``) may be a link they
    made; what it leads to must still be a regular file."""
    try:
        fd = os.open(path, _FLAGS & ~os.O_NOFOLLOW if follow_links else _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotAFile(path, "a symbolic link") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(path, kind_of(mode))
        os.set_blocking(fd, True)  # a regular file: reads behave as a plain open's would
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(
    path: str | os.PathLike[str], max_bytes: int | None = None, *, follow_links: bool = False
) -> bytes:
    """The bytes of the regular file at ``path`` (see :func:`open_regular_file`); with ``max_bytes``,
    at most one byte more than that is read, so a caller can say the file is too large without
    reading all of it."""
    with open_regular_file(path, follow_links=follow_links) as fh:
        return fh.read() if max_bytes is None else fh.read(max_bytes + 1)
