"""The engine's log file: written by the engine itself, rotated, tailed and searched by the agent.

The engine writes straight to a file opened with O_APPEND, never to a pipe the agent holds: a pipe
loses every line (or kills the writer with EPIPE) once the agent exits, and the engine must outlive
the agent. Because the engine keeps its descriptor, rotation is "copy, then truncate in place"
(logrotate's copytruncate): O_APPEND makes the engine's next write land at the new end. Lines written
between the copy and the truncate can be lost; that is the documented price of not restarting.
"""

from __future__ import annotations

import os
import shutil
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path


class EngineLog:
    def __init__(self, path: Path, *, max_bytes: int = 64 * 1024 * 1024, backups: int = 3) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups

    def open_for_engine(self) -> int:
        """A descriptor for the child's stdout/stderr; the caller closes its copy after spawning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def _backup(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{n}")

    def rotate_if_needed(self) -> bool:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return False
        if size < self.max_bytes:
            return False
        for n in range(self.backups - 1, 0, -1):
            if self._backup(n).exists():
                os.replace(self._backup(n), self._backup(n + 1))
        shutil.copyfile(self.path, self._backup(1))
        os.truncate(self.path, 0)
        return True

    def _files_oldest_first(self) -> list[Path]:
        files = [self._backup(n) for n in range(self.backups, 0, -1)]
        files.append(self.path)
        return [f for f in files if f.exists()]

    def _lines(self, files: Iterable[Path]) -> Iterator[str]:
        for f in files:
            try:
                with f.open("r", encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        yield line.rstrip("\n")
            except FileNotFoundError:
                continue

    def tail(
        self, n: int, search: str | None = None, redact: Callable[[str], str] | None = None
    ) -> list[str]:
        """The last ``n`` lines (matching ``search``, case-insensitive, when given), oldest first, each
        through ``redact`` first: a search matches what the caller may see, never what it may not."""
        clean = redact or (lambda line: line)
        if n <= 0:
            return []
        if not search:
            return [clean(line) for line in self._tail_end(n)]
        out: deque[str] = deque(maxlen=n)
        needle = search.lower()
        for line in self._lines(self._files_oldest_first()):
            shown = clean(line)
            if needle in shown.lower():
                out.append(shown)
        return list(out)

    def _tail_end(self, n: int, block: int = 64 * 1024) -> list[str]:
        """Read backwards from the end so a tail of a large log costs a few blocks, not the file."""
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return []
        with fh:
            end = fh.seek(0, os.SEEK_END)
            data = b""
            pos = end
            while pos > 0 and data.count(b"\n") <= n:
                step = min(block, pos)
                pos -= step
                fh.seek(pos)
                data = fh.read(step) + data
        lines = data.decode("utf-8", errors="replace").splitlines()
        return lines[-n:]
