"""The fault suite: bounded loops of real faults against one ``agent serve --engine sim``.

Each run is one fault, chosen in turn (the run number picks it, a seeded RNG its details):

* ``kill_at_point``: the agent started with ``K25_FAULT_POINT`` at plan, intent, apply or outcome,
  SIGKILLed there by the kernel mid-action; started again, the request resent is never applied again.
* ``kill_at_random``: actions in a loop, the agent SIGKILLed at a random moment among them.
* ``disk_full``: the state tmpfs filled to the last block (and again after each action): the audit's
  reserve (8 KiB here, ``K25_FAULT_AUDIT_RESERVE``) takes actions until it is used up, the next is
  refused with nothing changed and no torn line, the finding is raised, a killed engine waits for
  room without counting failures, its record kept, and is started again once space is back, and the
  finding clears by itself.
* ``torn_line``: half a record with no newline at the end of the audit, then an action.
* ``engine_killed_in_bench``: the engine SIGKILLed during a benchmark.
* ``restart_cut_short``: a live threshold set, then an engine restart, the agent stopped (SIGKILL, or
  its own SIGTERM) at a point of it before the new engine is ready; the next agent finishes it, the
  threshold back in force, audited.
* ``torn_record``: a live threshold set, the agent SIGKILLed, ``engine.json`` cut at a random byte;
  the next agent adopts the engine that runs (never a second one), its threshold kept.
* ``compare_cut_short``: a live threshold set, a compare started, the agent SIGKILLed after it forced
  an arm's threshold; the next agent puts the operator's threshold back, audited.

Every run ends with ``fault_rig.check``. ``K25_FAULT_RUNS`` sets how many (default 8, one of each;
``bench/costs/fault_loop.sh`` runs 50 in a row), ``K25_FAULT_SEED`` the seed.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fault_rig import FAKE_HF_TOKEN, PROFILE_ANSWERS, Rig, answers, check, engines_of, make_rig, wait_until

from agent.control.faults import POINTS
from agent.engine.faults import RESTART_POINTS

RUNS = int(os.environ.get("K25_FAULT_RUNS", "8"))
SEED = int(os.environ.get("K25_FAULT_SEED", "25"))

pytestmark = pytest.mark.slow

RESERVE = 8192
"""The agent's audit reserve in this suite (bytes)."""


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    made = make_rig()
    made.env["K25_FAULT_AUDIT_RESERVE"] = str(RESERVE)  # used up in a few actions, not hundreds
    try:
        made.start()
        made.wait_ready()
        yield made
    finally:
        made.close()
        shutil.rmtree(made.root, ignore_errors=True)


def _new_threshold(rnd: random.Random, current: int) -> int:
    return rnd.choice([v for v in (16, 24, 32, 48, 64, 96, 128, 143) if v != current])


def _events(rig: Rig) -> list[dict[str, Any]]:
    with rig.client() as c:
        events: list[dict[str, Any]] = c.get("/v1/events").json()["events"]
    return events


def _findings(rig: Rig) -> set[str]:
    return {f["code"] for f in rig.status()["findings"]}


# ---- the faults -----------------------------------------------------------------------------------


def kill_at_point(rig: Rig, rnd: random.Random, run: int) -> None:
    point = rnd.choice(POINTS)
    rig.kill9()
    rig.start(fault_point=point)
    rig.wait_ready()
    value = _new_threshold(rnd, rig.engine_live()["threshold"])
    body = {
        "request_id": f"fault-{run}-{point}-{rnd.getrandbits(32):08x}",
        "kind": "threshold",
        "value": value,
    }
    with rig.client() as c, pytest.raises(httpx.TransportError):
        plan = c.post("/v1/actions", json=body).json()
        c.post(f"/v1/actions/{plan['action_id']}/confirm")
    assert rig.wait_dead() == -signal.SIGKILL, f"the agent did not die at {point}"
    rig.start()
    rig.wait_ready()
    with rig.client() as c:
        again = c.post("/v1/actions", json=body)
        if point == "plan":  # killed before anything was audited: a plan like any other
            assert again.status_code == 200, again.text
            c.post(f"/v1/actions/{again.json()['action_id']}/cancel", json={"operator": "fault-suite"})
        else:  # its intent is in the audit: never planned, so never applied, a second time
            assert again.status_code == 409, again.text
            assert "nothing is applied twice" in again.json()["detail"]


def kill_at_random(rig: Rig, rnd: random.Random, run: int) -> None:
    stop = threading.Event()
    done: list[str] = []

    def actions() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                current = rig.engine_live()["threshold"]
                rig.threshold_action(_new_threshold(rnd, current), f"random-{run}-{n}-{time.time_ns()}")
                done.append("applied")
            except (httpx.TransportError, OSError, KeyError, ValueError, AssertionError):
                return

    worker = threading.Thread(target=actions)
    worker.start()
    time.sleep(rnd.uniform(0.05, 1.5))  # the random moment is the fault itself
    rig.kill9()
    stop.set()
    worker.join(timeout=30)
    rig.start()


def disk_full(rig: Rig, rnd: random.Random, run: int) -> None:
    torn_before = rig.audit_records()[1]  # earlier runs' torn lines (torn_line's) stay in the file
    rig.fill()
    # Each action either applies, audited, or is refused with nothing changed. The audit writes
    # into its file's last page, then into its reserve (room nobody else can take), after everything
    # else failed; the disk is filled again after each, so one is refused once the reserve is used up.
    for n in range(40):
        current = rig.engine_live()["threshold"]
        value = _new_threshold(rnd, current)
        result = rig.threshold_action(value, f"full-{run}-{n}-{time.time_ns()}")
        if result["status"] == "failed":
            assert result["message"].startswith("refused: the audit log"), result
            assert "nothing was changed on the engine" in result["message"]
            assert rig.engine_live()["threshold"] == current, "a refused action changed the engine"
            if rig.mounted:  # the injected writer refuses every write, the reserve's too
                assert n > 0, "the first action on a full disk was refused: no reserve"
                assert not (rig.state / "audit.jsonl.reserve").exists(), "refused with the reserve unused"
            assert rig.audit_records()[1] == torn_before, "the refused record left a torn line"
            break
        assert result["status"] == "applied" and rig.engine_live()["threshold"] == value, result
        rig.fill()
    else:
        raise AssertionError("a full disk never refused an action it could not audit")
    wait_until(lambda: "state_disk_full" in _findings(rig), timeout_s=30, what="the state disk finding")
    killed = rig.kill_engine()
    wait_until(
        lambda: any(e["name"] == "engine.crashed" and e["data"].get("pid") == killed for e in _events(rig)),
        timeout_s=30,
        what="the supervisor to see the engine die",
    )
    rig.fill()  # what the engine's death freed too: the start meets a full disk
    wait_until(
        lambda: any(e["name"] == "engine.waiting_for_disk" for e in _events(rig)[-50:]),
        timeout_s=60,
        what="a start that waits for room on the full disk",
    )
    assert rig.alive()
    record = rig.engine_record()
    assert record is not None and record["pid"] == killed, "the engine record is gone while the disk is full"
    assert rig.status()["engine_state"] == "restarting"
    rig.unfill()
    status = rig.wait_ready()
    assert status["engine_pid"] != killed
    wait_until(lambda: "state_disk_full" not in _findings(rig), timeout_s=30, what="the finding to clear")
    wait_until(lambda: (rig.state / "audit.jsonl.reserve").exists(), timeout_s=30, what="the reserve again")


def torn_line(rig: Rig, rnd: random.Random, run: int) -> None:
    rig.tear_audit()
    value = _new_threshold(rnd, rig.engine_live()["threshold"])
    result = rig.threshold_action(value, f"torn-{run}-{time.time_ns()}")
    assert result["status"] == "applied", result
    records, bad = rig.audit_records()
    assert bad >= 1
    mine = [r for r in records if r["action"].get("action_id") == result["action_id"]]
    assert [r["phase"] for r in mine] == ["intent", "outcome"], "the action's lines were glued or lost"
    with rig.client() as c:
        page = c.get("/v1/audit", params={"limit": 10_000})
    assert page.status_code == 200, page.text
    assert page.json()["corrupt"], "the torn line is not reported"
    assert any(r["action"].get("action_id") == result["action_id"] for r in page.json()["lines"])


def engine_killed_in_bench(rig: Rig, rnd: random.Random, run: int) -> None:
    body = {"mode": "sweep", "concurrency": [rnd.choice([2, 4])], "requests_per_level": 5000, "input_len": 64,
            "output_len": 64}  # fmt: skip
    with rig.client() as c:
        started = c.post("/v1/bench", json=body)
        assert started.status_code == 202, started.text
        bench_id = started.json()["bench_id"]
    wait_until(
        lambda: any(
            e["name"] == "bench.progress" and e["data"].get("bench_id") == bench_id for e in _events(rig)
        ),
        timeout_s=60,
        what="the benchmark's progress",
    )
    killed = rig.kill_engine()

    def ended() -> dict[str, Any] | None:
        with rig.client() as c:
            found: dict[str, Any] = c.get(f"/v1/bench/{bench_id}").json()
        return found if found.get("state") not in (None, "running") else None

    assert wait_until(ended, timeout_s=60, what="the benchmark to end")["state"] == "failed"
    wait_until(
        lambda: (s := rig.status())["engine_state"] == "ready" and s["engine_pid"] != killed,
        timeout_s=90,
        what="a new engine, ready",
    )  # the benchmark may see the engine die before the supervisor does
    records, _ = rig.audit_records()
    kinds = [(r["action"]["kind"], r["result"]["status"]) for r in records if r["action"].get("bench_id") == bench_id
             or (r["action"]["kind"] == "bench_start" and bench_id in r["result"].get("message", ""))]  # fmt: skip
    assert ("bench_start", "applied") in kinds and ("bench_end", "failed") in kinds, kinds


def restart_cut_short(rig: Rig, rnd: random.Random, run: int) -> None:
    value = _new_threshold(rnd, rig.engine_live()["threshold"])
    assert rig.threshold_action(value, f"cut-{run}-{time.time_ns()}")["status"] == "applied"
    point = rnd.choice([*RESTART_POINTS, "restart_launched:term"])
    rig.kill9()
    rig.start(fault_point=point)
    rig.wait_ready()
    with rig.client() as c, contextlib.suppress(httpx.TransportError):
        c.post("/v1/engine/restart", json={"drain_timeout_s": 0, "operator": "fault-suite"})
    assert rig.wait_dead() == (0 if point.endswith(":term") else -signal.SIGKILL), f"not stopped at {point}"
    rig.start()
    status = rig.wait_ready()
    assert rig.engine_live()["threshold"] == value, f"the restart cut short at {point} lost the threshold"
    assert engines_of(rig) == [status["engine_pid"]], "not exactly one engine runs"


def torn_record(rig: Rig, rnd: random.Random, run: int) -> None:
    value = _new_threshold(rnd, rig.engine_live()["threshold"])
    assert rig.threshold_action(value, f"tear-{run}-{time.time_ns()}")["status"] == "applied"
    pid = rig.status()["engine_pid"]
    rig.kill9()
    path = rig.state / "engine.json"
    text = path.read_bytes().rstrip()
    path.write_bytes(text[: rnd.randrange(1, len(text))])
    rig.start()
    status = rig.wait_ready()
    assert status["engine_pid"] == pid and engines_of(rig) == [pid], "a second engine was started"
    assert rig.engine_live()["threshold"] == value
    assert "engine_record_unreadable" in {f["code"] for f in status["findings"]}


def compare_cut_short(rig: Rig, rnd: random.Random, run: int) -> None:
    """A threshold set, a compare started, the agent SIGKILLed at a random moment after it forced an
    arm's threshold: the next agent puts the operator's value back, audited (issue 50, item 1)."""
    value = _new_threshold(rnd, rig.engine_live()["threshold"])
    assert rig.threshold_action(value, f"cmp-{run}-{time.time_ns()}")["status"] == "applied"
    body = {"mode": "compare", "concurrency": [1, 4], "repeats": 2, "input_len": 32, "output_len": 32}
    with rig.client() as c:
        started = c.post("/v1/bench", json=body | {"operator": "fault-suite"})
        assert started.status_code == 202, started.text
    wait_until(
        lambda: rig.engine_live()["threshold"] != value, timeout_s=60, what="an arm's threshold forced"
    )
    time.sleep(rnd.uniform(0, 2))  # a random moment of the run, as kill_at_random picks one
    rig.kill9()
    rig.start()
    rig.wait_ready()
    wait_until(
        lambda: rig.engine_live()["threshold"] == value, timeout_s=60, what="the operator's threshold back"
    )


SCENARIOS: list[Callable[[Rig, random.Random, int], None]] = [
    kill_at_point,
    kill_at_random,
    disk_full,
    torn_line,
    engine_killed_in_bench,
    restart_cut_short,
    torn_record,
    compare_cut_short,
]


@pytest.mark.parametrize("run", range(RUNS))
def test_fault_run(rig: Rig, run: int) -> None:
    if not rig.alive():  # an earlier run failed with the agent down: this one starts from a live agent
        rig.start()
    rig.unfill()
    rnd = random.Random(SEED * 100_003 + run)
    SCENARIOS[run % len(SCENARIOS)](rig, rnd, run)
    check(rig)


def test_no_secret_in_the_profile_answers(rig: Rig) -> None:
    """The answers that carry the profile show no ``server.env`` value (HF_TOKEN), only its name."""
    served = answers(rig)
    assert [p for p in PROFILE_ANSWERS if FAKE_HF_TOKEN in served[p]] == []
    assert all("HF_TOKEN" in served[p] for p in PROFILE_ANSWERS)
