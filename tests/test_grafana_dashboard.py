"""The Grafana dashboard's shape: what Grafana needs to import it and what an operator expects on it.

Its PromQL is evaluated by a real Prometheus in tests/e2e/test_prometheus.py; this file checks the
JSON model without one (no Grafana runs here, so this is our schema check).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "k25console.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def board() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def test_it_imports_anywhere_through_a_datasource_variable() -> None:
    b = board()
    assert b["uid"] and b["title"] and isinstance(b["schemaVersion"], int)
    (variable,) = [v for v in b["templating"]["list"] if v["name"] == "datasource"]
    assert variable["type"] == "datasource" and variable["query"] == "prometheus"
    for panel in b["panels"]:
        assert panel["datasource"] == DATASOURCE, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
    for annotation in b["annotations"]["list"]:
        if "expr" in annotation:
            assert annotation["datasource"] == DATASOURCE, annotation["name"]


def test_panels_have_unique_ids_targets_and_a_place_on_the_grid() -> None:
    panels = board()["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"{p['title']} overlaps another panel"
        cells |= mine
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(set(refs)) == len(refs) and all(t["expr"].strip() for t in p["targets"])
        assert p["description"], p["title"]


def test_it_shows_what_the_issue_asks_for_next_to_sglangs_series() -> None:
    b = board()
    exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in b["panels"]}
    throughput = next(e for t, e in exprs.items() if t.startswith("Output throughput"))
    assert "sglang:generation_tokens_total" in throughput
    running = exprs["Running requests vs the speculation threshold"]
    assert "sglang:num_running_reqs" in running and "k25_speculation_threshold_requests" in running
    accept = exprs["Accept length"]
    assert "k25_speculation_accept_length_tokens" in accept and "sglang:spec_accept_length" in accept
    assert "sglang:token_usage" in exprs["KV cache use"]
    annotations = {a["name"]: a for a in b["annotations"]["list"]}
    for name in ("Speculation on", "Speculation off"):
        assert "k25_speculation_switches_total" in annotations[name]["expr"]
        assert annotations[name]["enable"] is True


def test_it_has_the_panels_that_go_with_the_alerting_rules() -> None:
    """Issue 49: the wasted drafts and the acceptance findings over time, the rules' alerts, and the
    autopilot's reverts, next to what deploy/prometheus/k25console-rules.yml alerts on."""
    exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in board()["panels"]}
    wasted = exprs["Wasted drafts"]
    assert "k25_speculation_rejected_draft_ratio" in wasted
    assert "k25_speculation_wasted_draft_seconds_per_minute" in wasted
    acceptance = exprs["Acceptance findings"]
    assert all(code in acceptance for code in ("accept_collapse", "accept_loop", "wasted_drafts"))
    assert 'ALERTS{alertname=~"K25.+"}' in exprs["k25console alerts"]
    assert "k25_autopilot_reverts_total" in exprs["Autopilot reverts in range"]
