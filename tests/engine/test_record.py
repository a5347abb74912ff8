"""The engine record on disk: written through its spare (a full disk cannot remove it), read back or
said unreadable with what is still legible, and its hidden values filled from the agent's --profile.

Real files (and, where root can mount one, a real full tmpfs); the fault suite drives the same code
through a real agent (``tests/faults/test_fault_defects_38.py``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.engine.adopt import fill_hidden
from agent.engine.record import (
    SLOT_BYTES,
    EngineRecord,
    RestartTo,
    load_record,
    spare_of,
    write_record,
)
from agent.profile import dump_profile, load_profile

REPO = Path(__file__).resolve().parents[2]
PROFILE = load_profile(REPO / "profiles" / "local-sim.toml")
PASSWORD = "kf-" + "Hq2Zr7" * 4


def _record(**update: object) -> EngineRecord:
    base = EngineRecord(
        kind="sim", pid=os.getpid(), pgid=os.getpid(), start_ticks=1, argv_hash="0" * 64, host="127.0.0.1",
        port=30000, launched_at=time.time(), profile_name="local-sim", profile_toml=dump_profile(PROFILE),
        log_path="/tmp/engine.log",
    )  # fmt: skip
    return base.model_copy(update=update)


def test_a_record_is_read_back_whole_and_a_spare_is_kept_for_the_next(tmp_path: Path) -> None:
    path = tmp_path / "engine.json"
    restart = RestartTo(profile_toml=dump_profile(PROFILE), live_profile_toml=None)
    write_record(path, _record(live_pending=True, restart_to=restart))
    read = load_record(path)
    assert read.problem is None and read.record is not None
    assert read.record.live_pending and read.record.restart_to == restart
    assert path.stat().st_size == SLOT_BYTES and spare_of(path).stat().st_size == SLOT_BYTES
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("keep", [0.5, 0.1, 0.0])
def test_a_torn_record_is_unreadable_with_what_is_still_legible(tmp_path: Path, keep: float) -> None:
    path = tmp_path / "engine.json"
    write_record(path, _record())
    text = path.read_bytes().rstrip()
    path.write_bytes(text[: int(len(text) * keep)])
    read = load_record(path)
    assert read.record is None and read.problem is not None and "unreadable" in read.problem
    if keep >= 0.1:
        assert read.salvaged["pid"] == os.getpid() and read.salvaged["kind"] == "sim"
    if keep >= 0.5:
        assert read.salvaged["port"] == 30000 and read.salvaged["host"] == "127.0.0.1"


def test_no_record_is_no_problem(tmp_path: Path) -> None:
    read = load_record(tmp_path / "engine.json")
    assert read.record is None and read.problem is None


def test_secret_flag_values_are_hidden_in_the_record_and_filled_from_the_profile(tmp_path: Path) -> None:
    data = PROFILE.model_dump(mode="json")
    data["server"]["extra_flags"] = ["--ssl-keyfile-password", PASSWORD, "--schedule-policy", "lpm"]
    given = type(PROFILE).model_validate(data)
    path = tmp_path / "engine.json"
    write_record(path, _record(profile_toml=dump_profile(given)))
    assert PASSWORD not in path.read_text()
    read = load_record(path).record
    assert read is not None
    from agent.profile import parse_profile

    kept = parse_profile(read.profile_toml, "<record>")
    assert kept.server.extra_flags[1] == "<redacted>"
    assert fill_hidden(kept, given).server.extra_flags == given.server.extra_flags
    # A --profile whose flags differ cannot fill it: the mark stays, never another value.
    other = given.model_copy(update={"server": given.server.model_copy(update={"extra_flags": []})})
    assert fill_hidden(kept, other).server.extra_flags[1] == "<redacted>"


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "mnt"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("no tmpfs can be mounted here (the fault suite covers it through the agent)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_record_is_rewritten_on_a_full_disk(full_tmpfs: Path) -> None:
    path = full_tmpfs / "engine.json"
    write_record(path, _record())
    fd = os.open(full_tmpfs / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    with contextlib.suppress(OSError):
        while True:
            os.write(fd, b"\0" * 4096)
    os.close(fd)
    with pytest.raises(OSError) as full:
        (full_tmpfs / "probe").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    for n in range(5):  # each write swaps record and spare: it takes as much room as it gives back
        write_record(path, _record(live_pending=bool(n % 2), port=30000 + n))
        read = load_record(path).record
        assert read is not None and read.port == 30000 + n
