"""Stored files read back: a torn benchmark result, the token file, a profile saved with comments
(issue 38, items 6, 7 and 10).

* A half-written bench result answers ``GET /v1/bench/<id>`` as the list shows it (failed,
  "unreadable result file"), never a 500; so does one that is not UTF-8.
* The token file says what a token must be and the real reason a file cannot be used (a directory
  is a directory, not "mode 755").
* ``PUT /v1/profiles`` keeps the operator's text, comments included; an edit of a comment alone is a
  new version, so a second write naming the version before it is refused (412).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import REPO, Agent

from agent.serve.paths import UnsafePathError
from agent.serve.token import load_or_create_token, read_token

# ---- 6. a torn benchmark result ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bench_id", "data"),
    [
        ("20261206-030000-a1b2c3", None),  # half of a real result
        ("20261206-030001-d4e5f6", b'{"bench_id": "20261206-030001-d4e5f6", "state": "fini\xff\xfe'),
    ],
    ids=["torn", "not-utf8"],
)
def test_a_torn_bench_result_is_unreadable_not_a_server_error(
    shared_agent: Agent, bench_id: str, data: bytes | None
) -> None:
    path = shared_agent.state_dir / "bench" / f"{bench_id}.json"
    whole = json.dumps({"bench_id": bench_id, "mode": "sweep", "state": "finished", "levels": []}).encode()
    path.write_bytes(data if data is not None else whole[: len(whole) // 2])
    with shared_agent.sync_client() as c:
        one = c.get(f"/v1/bench/{bench_id}")
        listed = c.get("/v1/bench")
    assert one.status_code == 200, one.text
    assert one.json()["state"] == "failed" and one.json()["error"].startswith("unreadable result file")
    assert listed.status_code == 200
    (entry,) = [r for r in listed.json()["runs"] if r["bench_id"] == bench_id]
    assert entry["state"] == "failed" and entry["error"] == one.json()["error"]


# ---- 7. the token file ----------------------------------------------------------------------------


def _private(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (bytes(range(0x80, 0xC0)), "non-ASCII bytes, which no HTTP client can send in a header"),
        (b"tok en " * 8, "spaces or control characters"),
        (b"short-token\n", "it is 11 characters long"),
        (b"\n", "it is empty"),
    ],
    ids=["non-ascii", "spaces", "short", "empty"],
)
def test_a_token_no_client_can_send_is_refused_saying_what_a_token_is(
    tmp_path: Path, data: bytes, why: str
) -> None:
    path = _private(tmp_path / "token", data)
    for read in (load_or_create_token, read_token):
        with pytest.raises(UnsafePathError) as refused:
            read(path)
        said = str(refused.value)
        assert why in said and "32 to 512 printable ASCII characters" in said
        assert data.strip().decode("latin-1") not in said or not data.strip()  # the token is never quoted


def test_a_token_path_that_is_a_directory_is_called_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "token"
    folder.mkdir(mode=0o755)
    for read in (load_or_create_token, read_token):
        with pytest.raises(UnsafePathError) as refused:
            read(folder)
        assert "is a directory, not a file holding the token" in str(refused.value)
        assert "lets other users read" not in str(refused.value)


def test_a_token_path_that_is_a_link_is_refused_as_a_link(tmp_path: Path) -> None:
    real = _private(tmp_path / "real", b"x" * 40)
    (tmp_path / "token").symlink_to(real)
    with pytest.raises(UnsafePathError, match="is a symbolic link"):
        load_or_create_token(tmp_path / "token")


def test_agent_serve_refuses_an_unusable_token_file_at_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    _private(state / "token", "é".encode() * 40)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim", "--profile",
         str(REPO / "profiles" / "local-sim.toml"), "--state-dir", str(state), "--gpus", "none"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "not a usable token: it holds non-ASCII bytes" in done.stderr
    assert not (state / "engine.json").exists()  # nothing was started


def test_a_good_token_file_still_works(tmp_path: Path) -> None:
    made = load_or_create_token(tmp_path / "token")
    assert read_token(tmp_path / "token") == made and len(made) >= 32
    assert os.stat(tmp_path / "token").st_mode & 0o777 == 0o600


# ---- 10. profile writes keep comments --------------------------------------------------------------


def test_a_saved_profile_keeps_its_comments_and_a_comment_edit_is_a_new_version(shared_agent: Agent) -> None:
    text = (shared_agent.profile.read_text().replace('name = "sim-shared"', 'name = "sim-commented"')
            .replace("[server]\n", "# where it listens, and why\n[server]\n", 1))  # fmt: skip
    text = text.replace("[speculation]\n", "[speculation]\n# measured crossover, 2026-12-01\n", 1)
    path = shared_agent.profile.parent / "sim-commented.toml"
    with shared_agent.sync_client() as c:
        created = c.put("/v1/profiles/sim-commented", json={"toml": text}, headers={"If-None-Match": "*"})
        assert created.status_code == 200, created.text
        assert created.json()["comments_kept"] is True
        assert path.read_text() == text  # as sent, byte for byte
        first = created.json()["digest"]
        one = text.replace("and why", "and why (edit one)")
        two = text.replace("and why", "and why (edit two)")
        edited = c.put("/v1/profiles/sim-commented", json={"toml": one}, headers={"If-Match": f'"{first}"'})
        assert edited.status_code == 200, edited.text
        assert edited.json()["digest"] != first
        stale = c.put("/v1/profiles/sim-commented", json={"toml": two}, headers={"If-Match": f'"{first}"'})
        read = c.get("/v1/profiles/sim-commented").json()
    assert stale.status_code == 412, stale.text
    assert path.read_text() == one
    assert "# where it listens, and why (edit one)" in read["toml"]
    assert "# measured crossover, 2026-12-01" in read["toml"]


def test_a_hidden_value_put_back_keeps_the_comments_around_it(make_agent: Any) -> None:
    """ "Save running as" with a comment beside the hidden env value: the agent fills in the value
    (the file gets the token, never the mark) and keeps every comment the operator wrote."""
    token = "hf_" + "Kc3Rt8Vw1Pq6" * 3
    agent: Agent = make_agent("sim-keep", env={"HF_TOKEN": token}).start()
    agent.wait_state("ready")
    with agent.sync_client() as c:
        running = c.get("/v1/profile").json()["toml"]
        text = running.replace('name = "sim-keep"', 'name = "sim-keep-copy"').replace(
            'HF_TOKEN = "<redacted>"', 'HF_TOKEN = "<redacted>"  # read by the engine at launch'
        )
        text = "# saved from the running profile\n" + text
        saved = c.put("/v1/profiles/sim-keep-copy", json={"toml": text}, headers={"If-None-Match": "*"})
    assert saved.status_code == 200, saved.text
    assert saved.json()["comments_kept"] is True
    written = (agent.profile.parent / "sim-keep-copy.toml").read_text()
    assert written.startswith("# saved from the running profile\n")
    assert f'HF_TOKEN = "{token}"  # read by the engine at launch' in written
    assert "<redacted>" not in written


def test_agent_status_says_why_the_token_file_cannot_be_used(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "token").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "status", "--state-dir", str(state)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "is a directory, not a file holding the token" in done.stderr
