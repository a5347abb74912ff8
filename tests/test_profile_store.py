"""Saving profiles atomically (an interrupted save leaves the old file whole and the .bak kept), loading, diffing."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.profile import ProfileError, diff_profiles, dump_profile, load_profile, parse_profile, save_profile
from agent.profile.store import MAX_PROFILE_BYTES

PROFILES = Path(__file__).resolve().parents[1] / "profiles"

# The shipped threshold is the simulated engine's crossover and may move; tests edit whatever it is.
THRESHOLD_LINE = re.search(r"^threshold = \d+$", (PROFILES / "kimi-k25-eagle3.toml").read_text(), re.M)[0]  # type: ignore[index]


def _version(n: int) -> str:
    return (PROFILES / "kimi-k25-eagle3.toml").read_text().replace(THRESHOLD_LINE, f"threshold = {n}")


@pytest.fixture
def saved_twice(tmp_path: Path) -> Path:
    """A profile saved as version 10, then 20: the file holds 20, the .bak holds 10."""
    target = tmp_path / "p.toml"
    save_profile(parse_profile(_version(10)), target)
    save_profile(parse_profile(_version(20)), target)
    return target


def _threshold(path: Path) -> int | None:
    return load_profile(path).speculation.threshold


def test_save_round_trips_and_keeps_the_previous_version(saved_twice: Path) -> None:
    assert _threshold(saved_twice) == 20
    assert _threshold(saved_twice.with_name("p.toml.bak")) == 10
    assert not list(saved_twice.parent.glob(".*.tmp"))
    assert load_profile(saved_twice) == parse_profile(dump_profile(load_profile(saved_twice)))


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_failed_save_changes_nothing(
    saved_twice: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    before = saved_twice.read_bytes()
    backup_before = saved_twice.with_name("p.toml.bak").read_bytes()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(ProfileError, match="not saved, the old file is intact"):
        save_profile(parse_profile(_version(30)), saved_twice)
    monkeypatch.undo()
    assert saved_twice.read_bytes() == before
    assert saved_twice.with_name("p.toml.bak").read_bytes() in (backup_before, before)
    assert not list(saved_twice.parent.glob(".*.tmp"))


# A child process saves version 30 and is killed with SIGKILL inside the save: while the new file is
# flushed to disk, while the backup is renamed into place, and at the rename of the new file itself.
# It tells us where it is through its stdout and then blocks on stdin, so the kill lands exactly
# there (no timing guesses).
CHILD = textwrap.dedent(
    """
    import os, sys
    from agent.profile import parse_profile, save_profile
    stage, nth = sys.argv[2], int(sys.argv[3])
    real = getattr(os, stage)
    calls = []
    def stop_here(*args, **kwargs):
        calls.append(args)
        if len(calls) < nth:
            return real(*args, **kwargs)
        print("inside", stage, flush=True)
        sys.stdin.read()
    setattr(os, stage, stop_here)
    save_profile(parse_profile(open(sys.argv[4]).read()), sys.argv[1])
    """
)


@pytest.mark.parametrize(
    ("stage", "nth", "backup_threshold"),
    [("fsync", 1, 10), ("replace", 1, 10), ("replace", 2, 20)],
    ids=["flushing-new-file", "renaming-backup", "renaming-new-file"],
)
def test_save_killed_midway_leaves_old_file_whole(
    saved_twice: Path, tmp_path: Path, stage: str, nth: int, backup_threshold: int
) -> None:
    before = saved_twice.read_bytes()
    new_text = tmp_path / "v30.toml"
    new_text.write_text(_version(30))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(saved_twice), stage, str(nth), str(new_text)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == f"inside {stage}"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    assert saved_twice.read_bytes() == before  # the old file, whole
    assert _threshold(saved_twice) == 20
    backup = saved_twice.with_name("p.toml.bak")
    # killed before the backup landed: the older backup is kept whole; at the final rename it is the old file
    assert _threshold(backup) == backup_threshold


def test_load_reports_unreadable_and_oversized_files(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "missing.toml")
    big = tmp_path / "big.toml"
    big.write_text("#" * (MAX_PROFILE_BYTES + 1))
    with pytest.raises(ProfileError, match="larger than"):
        load_profile(big)


def test_diff_lists_changed_keys_in_order() -> None:
    a = parse_profile(_version(4))
    b = parse_profile(_version(16).replace("tp_size = 8", "tp_size = 4"))
    changes = [(c.key, c.old, c.new) for c in diff_profiles(a, b)]
    assert changes == [("server.tp_size", 8, 4), ("speculation.threshold", 4, 16)]
    assert diff_profiles(a, a) == []


def test_diff_treats_an_empty_table_like_an_absent_one() -> None:
    with_env = parse_profile(_version(4))
    without = with_env.model_copy(update={"server": with_env.server.model_copy(update={"env": {}})})
    changes = [(c.key, c.old, c.new) for c in diff_profiles(with_env, without)]
    assert changes == [("server.env.SGLANG_ENABLE_PCIE_IPC_ALLREDUCE", "1", None)]
