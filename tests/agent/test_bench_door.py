"""The bench's one typed door (issue 45 item 4; issue 50 items 5 and 10), against a real
``agent serve --engine sim`` on its socket.

* Every field of a bench body is bounded before anything is echoed or audited: a 170,000-element
  ``concurrency``, a 200,000-element ``mode``, 2,000-character strings, 50,000 unknown keys, a
  60,000-character profile name or bench id in the path: each is a small 422 (or 404) that quotes
  nothing sent, and the audit does not grow by what was sent.
* A refusal names the field and what it allows in words (no Python repr, no ``3.5964e+06``), and a
  lone surrogate in any number field is refused naming that field.
* The body the console sends is the agent's own model: the route's schema is ``BenchRequest``'s
  fields, every field the agent takes (``min_windows``, ``max_windows``, ...) among them, and a request
  with every field set is planned.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import httpx
import pytest
from daemon_harness import Agent

from agent.wire.bench_request import BenchRequest
from agent.wire.bench_workload import WorkloadSpec
from console.link import LinkError
from console.link.client import AgentClient
from console.link.local import LocalLink

SMALL = 4096
"""No answer to a refused body, nor the audit's growth for it, comes near this many bytes."""

NUMBER_FIELDS = ("min_requests", "input_len", "output_len", "repeats", "min_window_s", "warmup_requests",
                 "warmup_output_len", "drain_wait_s", "until", "budget_s", "min_windows", "max_windows")  # fmt: skip


def _audit_size(agent: Agent) -> int:
    path: Path = agent.audit_path
    return path.stat().st_size if path.exists() else 0


def _longest_audit_line(agent: Agent) -> int:
    path: Path = agent.audit_path
    return max((len(line) for line in path.read_bytes().splitlines()), default=0) if path.exists() else 0


def _post(c: httpx.Client, path: str, body: Any) -> httpx.Response:
    return c.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


def _refusal(answer: httpx.Response, field: str) -> str:
    """The words of the one refusal at body.<field>, the answer checked small and quoting nothing."""
    assert answer.status_code == 422, answer.text[:300]
    assert len(answer.content) < SMALL, len(answer.content)
    detail = answer.json()["detail"]
    [error] = [d for d in detail if d["loc"][:2] == ["body", field]]
    return str(error["msg"])


def test_huge_bench_fields_are_refused_small_naming_the_field_and_the_audit_does_not_grow(
    shared_agent: Agent,
) -> None:
    before = _audit_size(shared_agent)
    with shared_agent.sync_client(timeout_s=60) as c:
        for path in ("/v1/bench", "/v1/bench/plan"):
            zeros = _refusal(_post(c, path, {"mode": "compare", "concurrency": [0] * 170_000}), "concurrency")
            assert zeros == (
                "concurrency levels: a list of 1 to 64 different whole numbers from 1 to 4096, e.g. [1, 4, 16]"
            )
            assert _refusal(_post(c, path, {"mode": ["x"] * 200_000}), "mode") == "mode: sweep or compare"
            for field in ("confirm_production", "operator", "baseline_url"):
                words = _refusal(_post(c, path, {field: "p" * 2048}), field)
                assert "at most" in words and "ppp" not in words
            many = _post(c, path, {f"k{n}": 1 for n in range(50_000)})
            assert many.status_code == 422 and len(many.content) < SMALL, len(many.content)
            detail = many.json()["detail"]
            assert detail[0]["msg"] == "no such field in this request"
            assert detail[-1]["msg"] == "and 49990 more refusals of this request"
    assert _audit_size(shared_agent) - before < SMALL, "the audit kept what was sent"


def test_a_long_name_or_id_in_the_path_is_refused_unquoted_and_unaudited(shared_agent: Agent) -> None:
    name = "n" * 60_000
    before = _audit_size(shared_agent)
    with shared_agent.sync_client(timeout_s=60) as c:
        answers = [
            c.put(f"/v1/profiles/{name}", json={"toml": "x = 1\n"}),
            c.get(f"/v1/profiles/{name}"),
            c.get(f"/v1/profiles/{name}/diff"),
            c.request("DELETE", f"/v1/profiles/{name}"),
            c.get(f"/v1/bench/{name}"),
            c.post(f"/v1/bench/{name}/cancel"),
        ]
        missing = c.post("/v1/bench/20261207-164500-a1b2c3/cancel", json={"operator": "ops"})
    for answer in answers:
        assert answer.status_code == 422, (answer.request.method, answer.text[:200])
        assert len(answer.content) < SMALL and "nnnn" not in answer.text
        [error] = answer.json()["detail"]
        assert error["loc"][0] == "path" and "at most 64 characters" in error["msg"]
    assert missing.status_code == 404 and missing.json()["detail"].startswith("no benchmark with that id")
    assert _audit_size(shared_agent) - before < SMALL and _longest_audit_line(shared_agent) < SMALL


def test_refusals_say_the_field_in_words_never_a_repr_nor_what_was_sent(shared_agent: Agent) -> None:
    with shared_agent.sync_client() as c:
        said = {
            "mode": _refusal(_post(c, "/v1/bench", {"mode": None}), "mode"),
            "arms": _refusal(_post(c, "/v1/bench", {"arms": {"a": 1}}), "arms"),
            "baseline_url": _refusal(_post(c, "/v1/bench", {"baseline_url": True}), "baseline_url"),
            "budget_s": _refusal(_post(c, "/v1/bench", {"budget_s": 3.5964e6}), "budget_s"),
        }
        # A lone surrogate, as JSON's own escape: the field is named, no codec error is said.
        surrogates = {
            field: c.post(
                "/v1/bench",
                content=b'{"%s": "\\ud800"}' % field.encode(),
                headers={"content-type": "application/json"},
            )
            for field in NUMBER_FIELDS
        }
    assert said == {
        "mode": "mode: sweep or compare",
        "arms": "arms: a list of 1 to 4 different arms of on, off, adaptive, baseline",
        "baseline_url": "the baseline server: an http:// or https:// URL of at most 2048 printable characters",
        "budget_s": "the run's time budget: a number of seconds from 10 to 86400 (24 h)",
    }
    for field, answer in surrogates.items():
        words = _refusal(answer, field)
        assert "codec" not in answer.text and ("a whole number" in words or "number of seconds" in words
                                               or "a share" in words), (field, words)  # fmt: skip


async def test_the_console_sends_the_agents_own_request_every_field_of_it(shared_agent: Agent) -> None:
    with shared_agent.sync_client() as c:
        schema = c.get("/openapi.json").json()
        every = BenchRequest(
            mode="compare", concurrency=[2, 1], min_requests=4, input_len=32, output_len=8, chat=False,
            min_window_s=0.5, warmup_requests=1, warmup_output_len=4, drain_wait_s=0, until=0.1,
            budget_s=60, min_windows=2, max_windows=3, baseline_url="http://127.0.0.1:9",
            arms=["off", "baseline"], confirm_production="sim-shared", operator="ops",
            workload=WorkloadSpec(kind="dataset", dataset="chat-small.jsonl"),
        )  # fmt: skip
        planned = _post(c, "/v1/bench/plan", every.body())
    # The route's body is the model the console builds: the same fields, none the console lacks.
    for path in ("/v1/bench", "/v1/bench/plan"):
        ref = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        fields = set(schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["properties"])
        assert fields == set(BenchRequest.model_fields), fields ^ set(BenchRequest.model_fields)
    assert {"min_windows", "max_windows", "min_window_s", "warmup_requests", "warmup_output_len",
            "drain_wait_s", "baseline_url"} <= set(BenchRequest.model_fields)  # fmt: skip
    for method in (AgentClient.bench_plan, AgentClient.bench_start, AgentClient.bench_started):
        assert typing.get_type_hints(method)["request"] is BenchRequest
    # every field set and sent, but for a sweep's (the fixed windows a stopping rule replaces, and the
    # open loop's rates): they are refused with a compare's rule
    assert set(every.body()) == set(BenchRequest.model_fields) - {"repeats", "request_rates", "burstiness"}
    assert planned.status_code == 200, planned.text
    plan = planned.json()
    assert plan["levels"] == [1, 2] and plan["arms"] == ["off", "baseline"] and plan["at_most_s"] is not None


async def test_the_console_says_a_refusal_in_its_words_not_as_a_python_list(shared_agent: Agent) -> None:
    """A 422 the console did not foresee (another agent's rule, a script's body) reads as the
    agent's words, field by field: never ``[{'loc': ...}]``."""
    link = LocalLink(shared_agent.socket)
    await link.connect()
    try:
        with pytest.raises(LinkError) as info:
            await link.request("POST", "/v1/bench", body={"concurrency": [0] * 1000, "mode": None})
    finally:
        await link.close()
    said = str(info.value)
    assert said == (
        "mode: sweep or compare; concurrency levels: a list of 1 to 64 different whole numbers from "
        "1 to 4096, e.g. [1, 4, 16] (HTTP 422)"
    ), said
