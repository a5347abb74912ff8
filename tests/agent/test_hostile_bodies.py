"""Bodies that are too big, numbers JSON cannot hold, and names that forge lines (issue 38, items 4, 5, 8).

Against a real ``agent serve --engine sim`` on its socket: every body has one size limit (413 naming
it, the body not read past it, the agent's memory not grown), every field its own (422 naming the
field), and no answer, plan or event quotes what was sent; a parse or range error names the field and
what is allowed; ``operator`` takes printable text only, and ``agent audit`` escapes what it prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_harness import REPO, Agent

MIB = 1024 * 1024


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _detail(answer: httpx.Response) -> list[dict[str, Any]]:
    assert answer.status_code == 422, answer.text[:500]
    detail: list[dict[str, Any]] = answer.json()["detail"]
    return detail


def _names(detail: list[dict[str, Any]], field: str) -> list[str]:
    """The messages of the errors at body.<field> (the field's own, or one of its union's members)."""
    return [d["msg"] for d in detail if d["loc"][:2] == ["body", field]]


# ---- 4. one size limit, per-field limits, nothing echoed ----------------------------------------------


def test_a_body_over_the_limit_is_refused_unread_and_the_agent_does_not_grow(shared_agent: Agent) -> None:
    huge = {"request_id": "big-000001", "kind": "apply_profile", "value": "v" * (5 * MIB)}
    raw = json.dumps(huge).encode()
    before = _rss_mib(shared_agent.pid)
    with shared_agent.sync_client(timeout_s=60) as c:
        for n in range(20):
            huge["request_id"] = f"big-{n:06d}"
            answer = c.post(
                "/v1/actions", content=json.dumps(huge).encode(), headers={"content-type": "application/json"}
            )
            assert answer.status_code == 413, answer.text[:300]
            assert "1048576 bytes" in answer.json()["detail"] and len(answer.content) < 1000
        # Without a length announced (chunked): refused where it passes the limit.
        chunked = c.post("/v1/actions", content=iter([raw[i : i + 65536] for i in range(0, len(raw), 65536)]))
        assert chunked.status_code == 413, chunked.text[:300]
        events = c.get("/v1/events").text
    assert _rss_mib(shared_agent.pid) - before < 40, "the agent kept what it was sent"
    assert "v" * 1000 not in events


def test_a_field_over_its_limit_is_refused_naming_it_and_never_quoted(shared_agent: Agent) -> None:
    long_value = "p" * 65
    long_operator = "o" * (900 * 1024)  # under the body limit, far over the field's
    with shared_agent.sync_client() as c:
        value = c.post(
            "/v1/actions", json={"request_id": "long-value-1", "kind": "apply_profile", "value": long_value}
        )
        operator = c.post(
            "/v1/actions",
            json={"request_id": "long-op-0001", "kind": "threshold", "value": 9, "operator": long_operator},
        )
        request_id = c.post(
            "/v1/actions", json={"request_id": "r" * 200_000, "kind": "threshold", "value": 9}
        )
        restart = c.post("/v1/engine/restart", json={"operator": long_operator})
        events = c.get("/v1/events").text
    assert any("at most 64 characters" in m for m in _names(_detail(value), "value")), value.text
    assert any("at most 64 characters" in m for m in _names(_detail(operator), "operator")), operator.text
    assert any("at most 64 characters" in m for m in _names(_detail(request_id), "request_id"))
    assert any("at most 64 characters" in m for m in _names(_detail(restart), "operator"))
    for answer in (value, operator, request_id, restart):
        assert len(answer.content) < 2000 and "ppppp" not in answer.text and "ooooo" not in answer.text
        assert "rrrrr" not in answer.text
    assert "ppppp" not in events and "ooooo" not in events  # no plan was made of them


# ---- 8. a parse or range error names the field and what is allowed -------------------------------------

BAD_NUMBERS = [
    ("/v1/actions", b'{"request_id": "nan-000001", "kind": "threshold", "value": NaN}', "value", "finite"),
    (
        "/v1/actions",
        b'{"request_id": "inf-000001", "kind": "threshold", "value": Infinity}',
        "value",
        "finite",
    ),
    (
        "/v1/actions",
        b'{"request_id": "inf-000002", "kind": "threshold", "value": -Infinity}',
        "value",
        "finite",
    ),
    ("/v1/actions", b'{"request_id": "big-000001", "kind": "threshold", "value": 1e400}', "value", "finite"),
    ("/v1/engine/restart", b'{"drain_timeout_s": NaN}', "drain_timeout_s", "finite"),
    ("/v1/telemetry", b'{"tick_interval_s": 1e400}', "tick_interval_s", "finite"),
    (
        "/v1/actions",
        b'{"request_id": "long-00001", "kind": "threshold", "value": ' + b"7" * 5000 + b"}",
        "value",
        "at most 20 digits",
    ),
    (
        "/v1/actions",
        b'{"request_id": "deep-00001", "kind": "threshold", "value": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "value",
        "deeper than 32 levels",
    ),
    (
        "/v1/actions",
        b'{"request_id": "utf8-00001", "kind": "threshold", "value": 3, "operator": "op\xff\xfe"}',
        "operator",
        "UTF-8",
    ),
]


BAD_IDS = ["nan", "infinity", "-infinity", "1e400", "nan-drain", "1e400-tick", "5000-digits", "deep", "utf8"]


@pytest.mark.parametrize(("path", "raw", "field", "words"), BAD_NUMBERS, ids=BAD_IDS)
def test_json_the_agent_cannot_take_is_refused_naming_the_field(
    shared_agent: Agent, path: str, raw: bytes, field: str, words: str
) -> None:
    before = shared_agent.status()
    method = "PUT" if path == "/v1/telemetry" else "POST"
    with shared_agent.sync_client() as c:
        answer = c.request(method, path, content=raw, headers={"content-type": "application/json"})
    msgs = _names(_detail(answer), field)
    assert msgs and any(words in m for m in msgs), answer.text
    after = shared_agent.status()
    assert (after["engine_pid"], after["tick_interval_s"], after["engine_restarts"]) == (
        before["engine_pid"], before["tick_interval_s"], before["engine_restarts"],
    )  # fmt: skip


def test_text_that_is_not_json_is_refused_saying_where(shared_agent: Agent) -> None:
    with shared_agent.sync_client() as c:
        answer = c.post(
            "/v1/actions", content=b'{"kind": "threshold",}', headers={"content-type": "application/json"}
        )
    (error,) = _detail(answer)
    assert error["loc"] == ["body"] and "not valid JSON at character" in error["msg"]


# ---- 5. names that reach the logs and the audit -----------------------------------------------------

FORGED = "ops\n2026-12-06 03:00:00 UTC  admin  threshold 143 → 0  applied"
ESCAPES = "ops\x1b[2J\x1b[31mroot"


@pytest.mark.parametrize(
    "operator", [FORGED, ESCAPES, "ops\u202eevil", "tab\there"], ids=["newline", "ansi", "bidi", "tab"]
)
def test_an_operator_that_is_not_printable_text_is_refused_naming_it(
    shared_agent: Agent, operator: str
) -> None:
    with shared_agent.sync_client() as c:
        answers = [
            c.post(
                "/v1/actions",
                json={
                    "request_id": f"op-{time.time_ns()}",
                    "kind": "threshold",
                    "value": 9,
                    "operator": operator,
                },
            ),
            c.post("/v1/engine/restart", json={"operator": operator}),
            c.post("/v1/agent/stop", json={"operator": operator}),
        ]
    for answer in answers:
        msgs = _names(_detail(answer), "operator")
        assert any("printable" in m for m in msgs), answer.text
        assert operator not in answer.text
    assert shared_agent.proc is not None and shared_agent.proc.poll() is None


@pytest.fixture
def forged_agent(make_agent: Any) -> Iterator[Agent]:
    agent: Agent = make_agent("sim-forged").start()
    agent.wait_state("ready")
    yield agent


def test_agent_audit_prints_one_line_per_record_whatever_it_holds(forged_agent: Agent) -> None:
    """A record an older agent wrote (before names were checked) and a client name with escapes: each
    is one line on the terminal, escapes shown as text."""
    agent = forged_agent
    with agent.sync_client() as c:
        plan = c.post(
            "/v1/actions", json={"request_id": "ua-0000001", "kind": "threshold", "value": 9}
        ).json()
        c.post(
            f"/v1/actions/{plan['action_id']}/cancel",
            json={"operator": "test"},
            headers={"User-Agent": b"curl\x9b31m/8"},  # C1 CSI: HTTP lets it through, a terminal obeys it
        )
    records = [json.loads(line) for line in agent.audit_path.read_text().splitlines()]
    clients = [r["source"].get("client") for r in records if r["source"].get("via") == "api"]
    assert "curl\\x9b31m/8" in clients, clients  # kept as the caller said it, escaped
    legacy = {"time": time.time(), "id": "legacy0001", "phase": "record", "operator": ESCAPES + "\n" + FORGED,
              "source": {"via": "api"}, "action": {"kind": "threshold\x1b[0m"}, "before": None, "after": None,
              "result": {"status": "applied", "message": "done\nforged line"}}  # fmt: skip
    with agent.audit_path.open("a") as fh:
        fh.write(json.dumps(legacy) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "audit", "--state-dir", str(agent.state_dir)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    (shown,) = [line for line in lines if "legacy" in line or "forged" in line]
    assert "\\x1b[2J" in shown and "\\nforged line" in shown and "\\n2026-12-06" in shown
    assert not any(line.startswith("2026-12-06 03:00:00") for line in lines)
