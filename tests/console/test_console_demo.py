"""`k25console --demo` as an operator runs it: a real process in a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

import psutil
from console_testkit import REPO


def read_until(fd: int, needles: list[bytes], timeout_s: float) -> bytes:
    """Read the terminal until every needle was seen (or the time is up); returns all output."""
    seen = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not all(n in seen for n in needles):
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


def drain_until_exit(fd: int, proc: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """Keep reading the terminal (a full pty would block the app's last writes) until the process exits."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                break
    return proc.wait(timeout=max(0.1, deadline - time.monotonic()))


def test_demo_shows_live_data_and_q_leaves_no_process_behind() -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    argv = [sys.executable, "-m", "console.cli", "--demo"]
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO, start_new_session=True
    )
    os.close(slave)
    children: list[int] = []
    try:
        started = time.monotonic()
        out = read_until(master, [b"SPEC ON", b"tok/s", b"live"], timeout_s=30)
        assert b"SPEC ON" in out and b"live" in out, out[-2000:]
        assert time.monotonic() - started < 15, "the demo took too long to show live data"
        children = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        names = " ".join(" ".join(psutil.Process(c).cmdline()) for c in children)
        assert "serve --engine sim" in names and "console.demo.traffic" in names and " sim " in names
        os.write(master, b"q")
        assert drain_until_exit(master, proc, timeout_s=30) == 0
        deadline = time.monotonic() + 15
        alive = children
        while alive and time.monotonic() < deadline:  # other processes' exits raise no event here
            alive = [c for c in children if psutil.pid_exists(c) and psutil.Process(c).status() != "zombie"]
            time.sleep(0.1)
        assert not alive, f"left behind: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in children:
            if psutil.pid_exists(pid):
                psutil.Process(pid).kill()
        os.close(master)
