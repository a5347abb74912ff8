"""Patch 03's torch side on the patched wheel files: ``bench/real/zero_step_preflight.py`` run by a
Python with torch (the CPU venv the model-writer tests make), against the files ``agent install``
would leave in site-packages.

The preflight plays prefills, 0-step plain rounds and a resume through the runtime's ring, streak
book, reserve planner and catch-up, with stand-ins only for the four SGLang names the runtime
imports lazily (a cache-location kernel, two classes, the allocation length); ``gpu.sh`` runs the
same script on the GPU host with CUDA before any engine starts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "smoke"))
from test_tiny_models import torch_python  # noqa: F401  (the fixture)

from agent.install.patching import apply_patch_set
from agent.install.patchset import load_patch_set

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_the_preflight_passes_on_the_patched_files(
    torch_python: Path,  # noqa: F811
    site_packages: Path,
) -> None:
    apply_patch_set(site_packages, load_patch_set())
    assert (site_packages / "sglang/srt/speculative/k25_zero_step_runtime.py").is_file()
    done = subprocess.run(
        [str(torch_python), str(REPO / "bench/real/zero_step_preflight.py"), str(site_packages)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    passed = re.match(r"(\d+)/(\d+) checks passed", lines[-1])
    assert passed and passed.group(1) == passed.group(2) and int(passed.group(2)) >= 28, lines[-1]
    assert not [line for line in lines if line.startswith("FAIL")]


def test_the_preflight_fails_when_the_catch_up_reads_the_wrong_positions(
    torch_python: Path,  # noqa: F811
    site_packages: Path,
    tmp_path: Path,
) -> None:
    """The check can fail: an off-by-one in the ring's gather is caught."""
    apply_patch_set(site_packages, load_patch_set())
    broken = tmp_path / "broken"
    shutil.copytree(site_packages, broken)
    runtime = broken / "sglang/srt/speculative/k25_zero_step_runtime.py"
    text = runtime.read_text()
    assert "pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0)" in text
    runtime.write_text(
        text.replace(
            "pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0)",
            "pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0) + 1",
        )
    )
    done = subprocess.run(
        [str(torch_python), str(REPO / "bench/real/zero_step_preflight.py"), str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "FAIL  tokens and hiddens are those of the missed positions" in done.stdout
