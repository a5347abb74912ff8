"""The alerting rules (deploy/prometheus) under Prometheus's own ``promtool``: they load, every alert
fires on its series and stays silent on a healthy one, and each names a finding the agent raises.

``promtool`` ships in Debian's ``prometheus`` package, which ``./dev test`` installs as root (or says
how); a machine without it fails here naming the package, never skips.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "deploy" / "prometheus" / "k25console-rules.yml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "k25console-rules.test.yml"
ALERTS = {
    "K25AgentDown",
    "K25TelemetryStale",
    "K25EngineCrashLoop",
    "K25AcceptanceCollapse",
    "K25AcceptanceLoop",
    "K25QueueGrowing",
    "K25KvNearlyFull",
    "K25AutopilotReverted",
}
"""Issue 49's list: agent down, telemetry stale, engine crash loop, acceptance collapse, loop, queue
growing, KV nearly full, autopilot reverted."""
CANDIDATES = ("/usr/bin/promtool", "/usr/local/bin/promtool")
MISSING = "promtool is not installed: apt-get install --no-install-recommends prometheus (it ships promtool)"


def promtool(candidates: tuple[str, ...] = CANDIDATES) -> str:
    found = shutil.which("promtool") or next((p for p in candidates if Path(p).exists()), None)
    if found is None:
        pytest.fail(MISSING)
    return found


def run_promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def rules() -> list[dict[str, Any]]:
    doc: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def test_promtool_checks_the_rules() -> None:
    done = run_promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in done.stdout


def test_promtool_unit_tests_pass() -> None:
    done = run_promtool("test", "rules", str(RULE_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_firing_and_a_silent_case_and_says_what_to_do() -> None:
    assert {r["alert"] for r in rules()} == ALERTS
    cases: dict[str, list[list[Any]]] = {}
    for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in test["alert_rule_test"]:
            cases.setdefault(check["alertname"], []).append(check.get("exp_alerts") or [])
    for alert in ALERTS:
        assert any(cases.get(alert, [])), f"{alert} has no firing case"
        assert any(not e for e in cases.get(alert, [])), f"{alert} has no silent case"
    for rule in rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and len(rule["annotations"]["description"]) > 80, rule["alert"]


def test_the_findings_and_series_the_rules_read_are_the_agents() -> None:
    """A renamed finding code or series would leave an alert that never fires: every finding code the
    rules name is the agent's, and every series one docs/observability.md lists as exported."""
    source = "\n".join(p.read_text() for p in (REPO / "agent").rglob("*.py"))
    documented = (REPO / "docs" / "observability.md").read_text()
    exprs = " ".join(r["expr"] for r in rules())
    for code in re.findall(r'code="(\w+)"', exprs):
        assert f'code="{code}"' in source, code
    for series in set(re.findall(r"\bk25_\w+", exprs)):
        assert f"`{series}" in documented, series


def test_a_rule_that_fires_too_soon_fails_its_test(tmp_path: Path) -> None:
    """The cases decide: the KV alert waiting 1 minute instead of 5 is caught by its silent case."""
    text = RULES.read_text()
    assert text.count("for: 5m") == 1
    (tmp_path / RULES.name).write_text(text.replace("for: 5m", "for: 1m"))
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    done = run_promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)
    assert done.returncode != 0 and "K25KvNearlyFull" in done.stdout + done.stderr


def test_a_missing_promtool_fails_naming_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(pytest.fail.Exception, match="apt-get install --no-install-recommends prometheus"):
        promtool(candidates=())
