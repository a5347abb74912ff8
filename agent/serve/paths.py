"""Where the agent keeps its state: one directory, private to the user.

Default ``$XDG_STATE_HOME/k25console`` (``~/.local/state/k25console``). The socket lives in
``run/`` (mode 0700), so that permissions on the directory, not only on the socket file, keep other
local users out.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agent.wire.api import DEMO_STATE_PREFIX


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "k25console"


def demo_state_dirs() -> list[Path]:
    """The state directories of this user's running demos (``./dev demo`` makes one in the temp
    directory), newest first: private directories of this user whose agent socket exists. A demo
    that crashed leaves none behind that answers; the caller asks each in turn."""
    found = []
    for path in Path(tempfile.gettempdir()).glob(f"{DEMO_STATE_PREFIX}*"):
        try:
            st = path.lstat()
            if (
                not stat.S_ISDIR(st.st_mode)
                or st.st_uid != os.getuid()
                or stat.S_IMODE(st.st_mode) & 0o077
                or not (path / "run" / "agent.sock").is_socket()
            ):
                continue
        except OSError:
            continue
        found.append((st.st_mtime, path))
    return [path for _, path in sorted(found, reverse=True)]


class UnsafePathError(Exception):
    """A state directory or file is owned by someone else or open to other users."""


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700, or check that the existing one is ours and private."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise UnsafePathError(f"{path}: owned by uid {st.st_uid}, not by this user; refusing to use it")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


@dataclass(frozen=True)
class StatePaths:
    root: Path

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def socket(self) -> Path:
        return self.run_dir / "agent.sock"

    @property
    def token(self) -> Path:
        return self.root / "token"

    @property
    def lock(self) -> Path:
        return self.run_dir / "agent.lock"

    @property
    def engine_record(self) -> Path:
        return self.root / "engine.json"

    @property
    def engine_dir(self) -> Path:
        return self.root / "engine"

    @property
    def engine_log(self) -> Path:
        return self.root / "logs" / "engine.log"

    @property
    def audit(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def bench_dir(self) -> Path:
        return self.root / "bench"

    def prepare(self) -> StatePaths:
        for d in (self.root, self.run_dir, self.engine_dir, self.engine_log.parent, self.bench_dir):
            ensure_private_dir(d)
        return self
