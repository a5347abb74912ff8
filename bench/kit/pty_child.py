"""A program started on a pseudo-terminal of a given size, its output read and dropped, as a terminal
would: the console cost scripts measure k25console as an operator runs it, and a console whose output
nobody reads blocks on a full pty."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading
from pathlib import Path


def spawn_in_pty(
    argv: list[str], cols: int, rows: int, cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], threading.Event, int]:
    """Starts ``argv`` in its own session on a ``cols`` × ``rows`` pty; returns the process, the event
    that stops the reader, and the pty's master descriptor (the caller closes it when done)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
    )
    os.close(slave)
    done = threading.Event()

    def drain() -> None:  # a terminal reads what the app writes; so do we
        while not done.is_set():
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break

    threading.Thread(target=drain, daemon=True).start()
    return proc, done, master
