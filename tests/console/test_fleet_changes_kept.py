"""A fleet change's whole account is kept after the console closes, every host it was meant for
named with its plan and outcome, reached or not, and ``k25console --fleet-changes`` shows it again.

Before, a host never reached (not connected) or whose link went down before its turn had no line
of the change anywhere once the console's panel was gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_fleet_units import FakeClient

from console.fleet.change import FleetChange
from console.fleet.ledger import ChangesFile, account_of, default_changes_file
from console.link import LinkError

REPO = Path(__file__).resolve().parents[2]


async def test_every_host_a_change_was_meant_for_is_in_its_kept_account_and_shown_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    at_plan: dict[str, Any] = {
        "a": FakeClient("live"),
        "b": None,  # never reached: not connected
        "c": FakeClient("live", LinkError("the SSH connection dropped")),
        "d": FakeClient("live"),  # its link goes down before its turn
    }
    change = FleetChange("threshold", 64, list(at_plan), "night-ops")
    await change.plan(at_plan)
    kept = ChangesFile(default_changes_file())
    assert kept.path == tmp_path / "k25console" / "fleet-changes.jsonl"
    assert kept.write(account_of(change, "planned")) is None
    at_apply = dict(at_plan, d=None)
    await change.apply(at_apply.get)
    assert kept.write(account_of(change, "ended")) is None
    with kept.path.open("ab") as fh:
        fh.write(b'{"change_id": "chg-torn", "ho')  # a crash mid-write: skipped

    (account,) = kept.changes()
    assert account["change_id"] == change.change_id and account["step"] == "ended"
    assert account["operator"] == "night-ops" and account["value"] == 64
    by_host = {h["host"]: h for h in account["hosts"]}
    assert list(by_host) == ["a", "b", "c", "d"]
    assert by_host["a"]["outcome"] == "applied"
    assert by_host["b"]["plan"] is None and "not connected" in by_host["b"]["error"]
    assert by_host["b"]["outcome"] == "unreachable"
    assert by_host["c"]["outcome"] == "lost"
    assert by_host["d"]["plan"]["action_id"] and by_host["d"]["outcome"] == "unreachable"
    assert "before its turn" in by_host["d"]["message"]
    assert os.stat(kept.path).st_mode & 0o077 == 0

    shown = subprocess.run(
        [sys.executable, "-m", "console.cli", "--fleet-changes"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert change.change_id in lines[0] and "night-ops" in lines[0] and "4 host(s)" in lines[0]
    assert [line.split(":")[0].strip() for line in lines[1:5]] == ["a", "b", "c", "d"]
    assert "unreachable" in lines[2] and "before its turn" in lines[4]
