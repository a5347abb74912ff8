"""The agent's log (stderr) holds one line per record, whatever a record quotes: no text a client
or a path brings can start a line of its own or reach the terminal as an escape
(``agent.cli.log_lines``), and the request fields that reach the log refuse such characters.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_harness import REPO, Agent, new_root, write_profile

FORGED = "x\n2026-12-07 16:00:00,000 INFO a: FORGED\x1b[31m"
"""The issue's value: a newline, a line as the log writes one, a terminal escape."""


def test_a_path_with_a_forged_line_in_it_is_one_escaped_line_of_the_log() -> None:
    """A state directory whose path holds the forged line: the agent logs where it listens (the
    socket in that directory) on one line, the newline and the escape written as text."""
    top = new_root()
    root = top / f"s{FORGED}"
    agent = Agent(root, write_profile(root, "sim-forged-path"))
    try:
        agent.start()
        log = agent.output()
    finally:
        agent.cleanup()
        shutil.rmtree(top, ignore_errors=True)
    (listening,) = [line for line in log.splitlines() if "agent API listening on" in line]
    assert "/sx\\n2026-12-07 16:00:00,000 INFO a: FORGED\\x1b[31m/state/run/agent.sock" in listening
    assert "\x1b" not in log
    assert not any(line.startswith("2026-12-07 16:00:00,000 INFO a: FORGED") for line in log.splitlines())


def test_a_traceback_in_the_log_is_indented_below_its_record() -> None:
    """An exception whose words hold a forged line: the traceback keeps its lines, each indented, so
    the forged one does not start at the margin."""
    code = (
        "import logging\n"
        "from agent.cli.log_lines import setup_logging\n"
        "setup_logging('info')\n"
        f"try:\n    raise ValueError({FORGED!r})\n"
        "except ValueError:\n    logging.getLogger('t').exception('failed on %s', 'y\\x1b[2J')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=REPO, timeout=60)
    lines = done.stderr.splitlines()
    assert lines[0].endswith(b"ERROR t: failed on y\\x1b[2J"), lines
    assert lines[1] == b"  Traceback (most recent call last):"
    assert lines[-2:] == [b"  ValueError: x", b"  2026-12-07 16:00:00,000 INFO a: FORGED\\x1b[31m"]
    assert b"\x1b" not in done.stderr


@pytest.mark.parametrize("text", [FORGED, "a\x00b", "ok\x1b[2J"], ids=["newline", "nul", "escape"])
def test_the_fields_that_reach_the_log_refuse_control_characters(shared_agent: Agent, text: str) -> None:
    external = {"bench_id": f"ext-{time.time_ns()}", "state": "failed", "mode": "sweep"}
    with shared_agent.sync_client() as c:
        answers = {
            "value": c.post(
                "/v1/actions",
                json={"request_id": f"lg-{time.time_ns()}", "kind": "apply_profile", "value": text},
            ),
            "error": c.post("/v1/bench/external", json=external | {"error": text}),
            "url": c.post("/v1/bench/external", json=external | {"url": f"http://127.0.0.1:1/{text}"}),
        }
    for field, answer in answers.items():
        assert answer.status_code == 422, (field, answer.text)
        msgs = [d["msg"] for d in answer.json()["detail"] if d["loc"][:2] == ["body", field]]
        assert any("printable" in m for m in msgs), (field, answer.text)
        assert text not in answer.text
    assert "FORGED" not in shared_agent.output()


def test_a_good_external_announce_still_goes_in(shared_agent: Agent, tmp_path: Path) -> None:
    with shared_agent.sync_client() as c:
        said = c.post("/v1/bench/external", json={"bench_id": f"ext-{time.time_ns()}", "state": "failed",
                                                  "mode": "sweep", "url": "http://127.0.0.1:30000",
                                                  "error": "the engine went away (connection refused)"})  # fmt: skip
    assert said.status_code == 204, said.text
