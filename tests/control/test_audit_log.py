"""The audit log on its own: a torn line closed and skipped, reads streamed and paged, a full disk
met first by everything but the audit (a real tmpfs where root can mount one)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.control.audit import AuditLog, AuditUnavailable
from agent.engine.state_disk import StateDisk


def _append(log: AuditLog, i: int, **extra: object) -> None:
    log.append(operator="ops", action={"kind": "threshold", "i": i}, before=None, after=None,
               result={"status": "applied"}, **extra)  # type: ignore[arg-type]  # fmt: skip


def _rchar() -> int:
    """Bytes this process has read through read(2) so far (the kernel's count)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_a_torn_line_is_closed_before_the_next_record_and_reported_by_every_read(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", reserve_bytes=0)
    _append(log, 0)
    with log.path.open("ab") as fh:
        fh.write(b'{"time": 1, "action": {"ki')  # a crash in the middle of a write
    _append(log, 1)
    raw = log.path.read_bytes()
    assert raw.count(b"\n") == 3 and raw.endswith(b"\n")  # the torn bytes ended with a line of their own
    tail = log.page(limit=10)
    assert [r["action"]["i"] for r in tail.lines] == [0, 1]
    (torn,) = tail.corrupt
    assert torn["offset"] == raw.index(b'{"time": 1') and "torn" in torn["reason"]
    forward = log.page(limit=10, cursor=0)
    assert [r["action"]["i"] for r in forward.lines] == [0, 1] and forward.corrupt == tail.corrupt
    assert log.index().corrupt == 1 and log.index().records == 2


def test_reads_are_paged_and_the_newest_page_of_a_large_log_reads_a_few_blocks(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    line = {"time": 0.0, "operator": "ops", "action": {"kind": "threshold"}, "result": {"status": "applied"}}
    with path.open("w") as fh:
        for i in range(60_000):
            fh.write(json.dumps({**line, "time": float(i), "action": {"kind": "threshold", "i": i}}) + "\n")
    assert path.stat().st_size > 6_000_000
    log = AuditLog(path, reserve_bytes=0)
    before = _rchar()
    page = log.page(limit=50)
    read = _rchar() - before
    assert [r["action"]["i"] for r in page.lines] == list(range(59_950, 60_000))
    assert read < 256 * 1024, f"the newest 50 records cost {read} bytes of reading"
    older = log.page(limit=50, before=page.cursor)
    assert [r["action"]["i"] for r in older.lines] == list(range(59_900, 59_950))
    # Forward pages from a cursor cover every record once, in order.
    seen, cursor = [], 0
    while True:
        got = log.page(limit=7_000, cursor=cursor)
        if not got.lines:
            break
        seen += [r["action"]["i"] for r in got.lines]
        cursor = got.next_cursor
    assert seen == list(range(60_000)) and cursor == path.stat().st_size
    assert [r["action"]["i"] for r in log.page(limit=10, since=59_995.0).lines] == list(range(59_995, 60_000))


def test_an_audit_that_cannot_write_raises_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = tmp_path / "full"
    flag.touch()
    monkeypatch.setenv("K25_FAULT_FULL_FLAG", str(flag))
    disk = StateDisk(str(tmp_path))
    log = AuditLog(tmp_path / "audit.jsonl", disk=disk, reserve_bytes=0)
    with pytest.raises(AuditUnavailable, match="No space left on device"):
        _append(log, 0)
    assert disk.problem is not None and "the audit log" in disk.problem
    finding = disk.finding()
    assert finding is not None and finding.title == "state disk full: audit and snapshots paused"
    assert not log.append_or_later("the outcome of act-1", operator="ops", action={"kind": "threshold"},
                                   before=None, after=None, result={"status": "applied"})  # fmt: skip
    flag.unlink()
    disk.retry_all()  # what each telemetry tick does
    assert [r["action"]["kind"] for r in log.read()] == ["threshold"]  # held back, then written
    disk.retry_all()
    assert disk.problem is None and disk.finding() is None


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "tiny"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); tests/faults covers the injected writer")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_on_a_full_disk_the_audit_writes_into_its_reserve_after_everything_else_failed(
    tiny_tmpfs: Path,
) -> None:
    log = AuditLog(tiny_tmpfs / "audit.jsonl", reserve_bytes=256 * 1024)
    assert log.reserve.stat().st_size == 256 * 1024
    fd = os.open(tiny_tmpfs / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with pytest.raises(OSError) as full:
            while True:
                os.write(fd, b"\0" * 4096)
        assert full.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    with pytest.raises(OSError):  # anything else meets the full disk first
        (tiny_tmpfs / "snapshot.json").write_bytes(b"x" * 8192)
    for i in range(20):
        _append(log, i)
        with contextlib.suppress(OSError):  # whoever writes next takes what is free: never the reserve
            (tiny_tmpfs / f"other-{i}").write_bytes(b"x" * 8192)
    assert log.using_reserve and 0 < log.reserve.stat().st_size < 256 * 1024
    assert [r["action"]["i"] for r in log.read(100)] == list(range(20))
    assert not any((tiny_tmpfs / f"other-{i}").exists() and (tiny_tmpfs / f"other-{i}").stat().st_size
                   for i in range(20)), "another writer got room the reserve gave back"  # fmt: skip
    (tiny_tmpfs / "filler").unlink()
    log.disk.retry_all()
    assert log.reserve.exists() and not log.using_reserve and log.disk.problem is None
