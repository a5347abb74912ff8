"""``./dev test`` on a machine without the end-to-end tests' tools: it installs them as root with apt,
and otherwise stops before any test, printing the one command that installs them (issue 39, item 1:
it used to run the tests and fail twelve of them with ``SshdUnavailable``, and skip Prometheus's)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _bare_path(tmp_path: Path, keep: tuple[str, ...]) -> str:
    """A PATH holding only ``keep`` (links to the real commands): none of the test tools."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in keep:
        found = shutil.which(name)
        assert found, name
        (bin_dir / name).symlink_to(found)
    return str(bin_dir)


def _dev_test(tmp_path: Path, extra_path: str = "") -> subprocess.CompletedProcess[str]:
    path = _bare_path(tmp_path, ("bash", "id", "tr", "dirname"))
    return subprocess.run(
        [str(REPO / "dev"), "test"],
        env={
            "PATH": path + (":" + extra_path if extra_path else ""),
            "HOME": os.environ.get("HOME", "/root"),
            "K25_DEV_NO_APT": "1",
            "K25_DEV_SBIN": "",
            "K25_VENV": str(tmp_path / "never-made"),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_tools_stop_the_tests_with_the_command_that_installs_them(tmp_path: Path) -> None:
    done = _dev_test(tmp_path)
    assert done.returncode == 1, done.stderr
    want = "apt-get install --no-install-recommends openssh-server openssh-client patch prometheus systemd"
    assert want in done.stderr
    assert not (tmp_path / "never-made").exists(), "it stopped before setting anything up"


def test_only_the_missing_ones_are_named(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("sshd", "ssh-keygen", "patch", "git"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    done = _dev_test(tmp_path, extra_path=str(tools))
    assert done.returncode == 1
    assert "sudo apt-get install --no-install-recommends prometheus systemd\n" in done.stderr


def test_a_missing_promtool_names_the_prometheus_package_once(tmp_path: Path) -> None:
    """promtool (the alerting rules' tests) ships in Debian's prometheus package, as the server does."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("sshd", "ssh-keygen", "patch", "git", "prometheus", "systemd-analyze"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    done = _dev_test(tmp_path, extra_path=str(tools))
    assert done.returncode == 1
    assert "sudo apt-get install --no-install-recommends prometheus\n" in done.stderr
