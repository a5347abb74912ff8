"""Where the API listens: a UNIX socket (0600, in a 0700 directory) or a loopback TCP port, never more.

The socket is bound by us, not by uvicorn, under a umask of 0177, so it is created 0600 and is never
reachable by other users even for the instant before a chmod; the chmod after bind is a second
guard for file systems that ignore the umask. Then the bound socket is handed to uvicorn.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path

from agent.serve.listen import ListenError
from agent.serve.paths import ensure_private_dir


def bind_tcp(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle off only on accepted sockets of that protocol, and
    # uvicorn writes headers and body in two sends, so a kept-alive client would wait for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def bind_unix(path: Path) -> socket.socket:
    ensure_private_dir(path.parent)
    if path.is_socket() or path.is_symlink():
        if _socket_answers(path):
            raise ListenError(f"{path}: another agent is already listening here")
        path.unlink()  # left over from an agent that was killed
    elif path.exists():
        raise ListenError(f"{path}: exists and is not a socket; refusing to replace it")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot bind {path}: {exc.strerror}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def socket_identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


def remove_socket(path: Path, identity: tuple[int, int]) -> None:
    """Remove our socket file, unless another agent has replaced it since (compared by inode)."""
    with contextlib.suppress(OSError):
        if socket_identity(path) == identity:
            path.unlink()


class InstanceLock:
    """One agent per state directory: an exclusive flock held for the life of the process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ListenError(
                f"another agent is running with this state directory ({self.path.parent.parent})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
