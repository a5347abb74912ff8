"""What sits where the agent keeps its state is not always a plain file: a directory made by mistake,
a symbolic link to a file the agent must never serve, a FIFO that would block ``open()`` for good.
Every reader goes through ``agent.profile.regular_file`` and says which it is, naming the file; a
profile name is matched whole, so a final newline is no name.

Real agents, real directories, real links, real FIFOs (``os.mkfifo``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_harness import REPO, Agent

from agent.control.audit import AuditLog
from agent.engine.record import load_record
from agent.install.manifest import load_manifest, manifest_path
from agent.profile import ProfileError, load_profile
from agent.profile.regular_file import NotAFile, open_regular_file, read_regular_file
from agent.profile.versions import versions_dir


def test_the_one_opener_refuses_each_shape_naming_it(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_bytes(b"kept")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(plain)
    assert read_regular_file(plain) == b"kept"
    assert read_regular_file(plain, max_bytes=2) == b"kep"  # one more than asked: "too large" is sayable
    for name, what in [
        ("folder", "a directory"),
        ("fifo", "a FIFO (named pipe)"),
        ("link", "a symbolic link"),
    ]:
        with pytest.raises(NotAFile) as refused:
            open_regular_file(tmp_path / name)  # the FIFO: refused at once, never waited on
        assert str(refused.value) == f"{tmp_path / name}: is {what}, not a regular file"
    with pytest.raises(FileNotFoundError):
        open_regular_file(tmp_path / "absent")


def test_a_fifo_engine_record_stack_manifest_or_audit_is_refused_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "engine.json")
    read = load_record(tmp_path / "engine.json")
    assert read.record is None and read.problem is not None and "FIFO" in read.problem
    os.mkfifo(manifest_path(tmp_path))
    manifest = load_manifest(tmp_path)
    assert manifest.sha256 is None and manifest.problem is not None and "FIFO" in manifest.problem
    os.mkfifo(tmp_path / "audit.jsonl")
    audit = AuditLog(tmp_path / "audit.jsonl", reserve_bytes=0)
    with pytest.raises(NotAFile, match="is a FIFO"):
        audit.page()
    with pytest.raises(NotAFile, match="is a FIFO"):
        list(audit.records())


def test_a_profile_named_on_the_command_line_may_be_a_link_the_library_never_is(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text((REPO / "profiles" / "local-sim.toml").read_text())
    (tmp_path / "chosen.toml").symlink_to(real)
    assert load_profile(tmp_path / "chosen.toml").identity.name == "local-sim"  # agent serve --profile LINK
    with pytest.raises(ProfileError, match="is a symbolic link, not a profile file"):
        load_profile(tmp_path / "chosen.toml", follow_links=False)
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "to-pipe.toml").symlink_to(tmp_path / "pipe")
    with pytest.raises(ProfileError, match="is a FIFO"):  # followed, what it leads to is still checked
        load_profile(tmp_path / "to-pipe.toml")


# ---- profiles ------------------------------------------------------------------------------------


def test_a_profile_name_with_a_final_newline_is_no_name(shared_agent: Agent) -> None:
    text = shared_agent.profile.read_text().replace('name = "sim-shared"', 'name = "evil\\n"')
    with shared_agent.sync_client() as c:
        put = c.put("/v1/profiles/evil%0A", json={"toml": text}, headers={"If-None-Match": "*"})
        got = c.get("/v1/profiles/evil%0A")
    assert put.status_code == 422, put.text
    assert "a profile name is 1-64 letters" in put.text
    assert got.status_code == 422, got.text
    assert not (shared_agent.profile.parent / "evil\n.toml").exists()


def test_a_profile_that_is_a_directory_is_said_not_a_server_error(shared_agent: Agent) -> None:
    folder = shared_agent.profile.parent / "folder.toml"
    folder.mkdir()
    try:
        with shared_agent.sync_client() as c:
            got = c.get("/v1/profiles/folder")
            diff = c.get("/v1/profiles/folder/diff")
            listed = c.get("/v1/profiles")
    finally:
        folder.rmdir()
    assert got.status_code == 422, got.text
    (issue,) = got.json()["detail"]["issues"]
    assert issue["file"] == str(folder) and issue["rule"].startswith("is a directory, not a profile file")
    assert diff.status_code == 422 and "is a directory" in diff.text, diff.text
    assert listed.status_code == 200


def test_a_profile_that_is_a_link_is_never_served_nor_kept(shared_agent: Agent, tmp_path: Path) -> None:
    """A link in the profiles folder to a file elsewhere (the issue's was /etc/shadow): its bytes are
    never answered, and a save over it neither follows it nor copies the target into the versions."""
    secret = tmp_path / "shadow"
    secret.write_text(shared_agent.profile.read_text().replace("sim-shared", "linked") + "# SECRET-LINE\n")
    link = shared_agent.profile.parent / "linked.toml"
    link.symlink_to(secret)
    try:
        with shared_agent.sync_client() as c:
            got = c.get("/v1/profiles/linked")
            put = c.put("/v1/profiles/linked", json={"toml": secret.read_text()}, headers={"If-Match": '"x"'})
            listed = c.get("/v1/profiles").json()["profiles"]
        assert got.status_code == 422, got.text
        assert "is a symbolic link, not a profile file" in got.text and "SECRET-LINE" not in got.text
        assert put.status_code == 422 and "is a symbolic link" in put.text, put.text
        assert link.is_symlink() and "SECRET-LINE" in secret.read_text()  # nothing written through it
        assert not versions_dir(link).exists()  # the target was not kept as a version either
        (entry,) = [p for p in listed if p["name"] == "linked"]
        assert entry["digest"] is None  # listed, but its bytes were not read
    finally:
        link.unlink()


# ---- the bench store -----------------------------------------------------------------------------


def test_cancelling_a_bench_whose_file_is_a_directory_says_so(shared_agent: Agent) -> None:
    bench_id = "20261207-160000-abcdef"
    folder = shared_agent.state_dir / "bench" / f"{bench_id}.json"
    folder.mkdir(parents=True)
    try:
        with shared_agent.sync_client() as c:
            cancel = c.post(f"/v1/bench/{bench_id}/cancel")
            got = c.get(f"/v1/bench/{bench_id}")
    finally:
        folder.rmdir()
    assert cancel.status_code == 200, cancel.text
    assert cancel.json()["cancelled"] is False and cancel.json()["state"] == "failed"
    assert got.status_code == 200 and "is a directory, not a regular file" in got.json()["error"]


# ---- the token ----------------------------------------------------------------------------------


def _state_with_fifo_token(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "token", 0o600)
    return state


def test_agent_serve_refuses_a_fifo_token_at_once(tmp_path: Path) -> None:
    state = _state_with_fifo_token(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--profile",
         str(REPO / "profiles" / "local-sim.toml"), "--state-dir", str(state), "--gpus", "none"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "is a FIFO (named pipe), not a file holding the token" in done.stderr
    assert not (state / "engine.json").exists()


def test_agent_status_refuses_a_fifo_token_at_once(tmp_path: Path) -> None:
    state = _state_with_fifo_token(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "status", "--state-dir", str(state)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "is a FIFO (named pipe), not a file holding the token" in done.stderr
