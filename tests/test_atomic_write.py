"""The one atomic writer every kept file goes through: all or nothing, private from the first byte."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agent.profile.atomic import write_atomic


def test_replaces_the_file_with_the_mode_asked(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_text("old")
    write_atomic(target, "new", mode=0o640)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_failure_before_the_rename_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "token"
    target.write_bytes(b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["token"]
