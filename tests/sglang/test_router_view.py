"""SGLang's router's own view of its workers, read from the real router's answer (smg 1.13.0's
``/workers`` in front of three simulated engines, one stopped: ``tests/console/data/``)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.sglang.router import parse_workers

CAPTURE = Path(__file__).parents[1] / "console" / "data" / "smg-1.13.0-workers.json"


def test_the_captured_view_names_the_unhealthy_worker_and_each_ones_load() -> None:
    data = json.loads(CAPTURE.read_text())
    view = parse_workers("http://r", data, 1.0)
    assert view.reachable and view.error is None
    assert [w.url for w in view.workers] == [w["url"] for w in data["workers"]]
    by_url = {w.url: w for w in view.workers}
    for raw in data["workers"]:
        worker = by_url[raw["url"]]
        assert worker.healthy is raw["is_healthy"] and worker.in_flight == raw["load"]
        loads = (raw.get("engine_load") or {}).get("loads") or []
        assert worker.running == (sum(x["num_running_reqs"] for x in loads) if loads else None)
    assert [w.healthy for w in view.workers].count(False) == 1


def test_an_answer_that_is_no_worker_list_says_so_and_an_unknown_load_stays_unknown() -> None:
    bad = parse_workers("http://r", {"workers": [{"load": 1}]}, 1.0)
    assert not bad.reachable and bad.error is not None and "workers.0.url" in bad.error
    minus = parse_workers("http://r", {"workers": [{"url": "http://w", "load": -1}]}, 1.0)
    assert minus.workers[0].in_flight is None and minus.workers[0].running is None
