"""Saving profiles atomically (an interrupted save leaves the old file whole and its versions kept), loading,
diffing."""

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
from agent.profile.versions import KEEP_VERSIONS, list_versions, profile_digest

PROFILES = Path(__file__).resolve().parents[1] / "profiles"

# The shipped threshold is the simulated engine's crossover and may move; tests edit whatever it is.
THRESHOLD_LINE = re.search(r"^threshold = \d+$", (PROFILES / "kimi-k25-eagle3.toml").read_text(), re.M)[0]  # type: ignore[index]


def _version(n: int) -> str:
    return (PROFILES / "kimi-k25-eagle3.toml").read_text().replace(THRESHOLD_LINE, f"threshold = {n}")


@pytest.fixture
def saved_twice(tmp_path: Path) -> Path:
    """A profile saved as version 10, then 20: the file holds 20, its versions hold 10."""
    target = tmp_path / "p.toml"
    save_profile(parse_profile(_version(10)), target)
    save_profile(parse_profile(_version(20)), target)
    return target


def _threshold(path: Path) -> int | None:
    return load_profile(path).speculation.threshold


def _kept(path: Path) -> list[int | None]:
    return [_threshold(v) for v in list_versions(path)]


def test_save_round_trips_and_keeps_the_previous_version(saved_twice: Path) -> None:
    assert _threshold(saved_twice) == 20
    assert _kept(saved_twice) == [10]
    assert not list(saved_twice.parent.glob(".*.tmp"))
    assert not saved_twice.with_name("p.toml.bak").exists()
    assert load_profile(saved_twice) == parse_profile(dump_profile(load_profile(saved_twice)))


def test_two_saves_keep_the_original_file_byte_for_byte(tmp_path: Path) -> None:
    """The issue's case: the file the operator wrote by hand (its comments too), saved over twice,
    is still there whole; with a single .bak the second save lost it."""
    target = tmp_path / "p.toml"
    original = "# written by hand, kept whole\n" + _version(7)
    target.write_text(original)
    save_profile(parse_profile(_version(10)), target)
    save_profile(parse_profile(_version(20)), target)
    kept = list_versions(target)
    assert kept[0].read_text() == original
    assert _kept(target) == [7, 10] and _threshold(target) == 20
    assert all(profile_digest(v.read_bytes())[:16] in v.name for v in kept)
    assert not [
        p for p in tmp_path.iterdir() if p.suffix == ".toml" and p != target
    ]  # no version is a profile


def test_only_the_last_versions_are_kept_and_an_unchanged_file_is_kept_once(tmp_path: Path) -> None:
    target = tmp_path / "p.toml"
    for n in range(1, KEEP_VERSIONS + 4):
        save_profile(parse_profile(_version(n)), target)
    assert _kept(target) == list(range(3, KEEP_VERSIONS + 3))
    save_profile(parse_profile(_version(KEEP_VERSIONS + 3)), target)  # the same text again
    save_profile(parse_profile(_version(KEEP_VERSIONS + 3)), target)
    assert _kept(target)[-2:] == [KEEP_VERSIONS + 2, KEEP_VERSIONS + 3]
    assert len(_kept(target)) == KEEP_VERSIONS


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_failed_save_changes_nothing(
    saved_twice: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    before = saved_twice.read_bytes()
    versions_before = [v.read_bytes() for v in list_versions(saved_twice)]

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(ProfileError, match="not saved, the old file is intact"):
        save_profile(parse_profile(_version(30)), saved_twice)
    monkeypatch.undo()
    assert saved_twice.read_bytes() == before
    assert [v.read_bytes() for v in list_versions(saved_twice)] == versions_before
    assert not list(saved_twice.parent.rglob(".*.tmp"))


def test_a_first_save_that_fails_leaves_no_versions_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "p.toml"
    target.write_text(_version(5))

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ProfileError, match="No space left"):
        save_profile(parse_profile(_version(6)), target)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.toml"]


# A child process saves version 30 and is killed with SIGKILL inside the save: while the version it
# keeps is flushed to disk, while that version is renamed into place, and at the rename of the new
# file itself.
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
    ("stage", "nth", "kept"),
    [("fsync", 1, [10]), ("replace", 1, [10]), ("replace", 2, [10, 20])],
    ids=["flushing-the-version", "renaming-the-version", "renaming-new-file"],
)
def test_save_killed_midway_leaves_old_file_whole(
    saved_twice: Path, tmp_path: Path, stage: str, nth: int, kept: list[int]
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
    # killed before the version landed: the older versions are kept whole; at the final rename the
    # old file is among them too
    assert _kept(saved_twice) == kept


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
