"""Patch 03's torch side on the installed tree: the overlay's checks (``agent/install/overlay/checks``), under
pytest and through the preflight (``python -m bench.real.zero_step_preflight``), run by a Python with
torch (the CPU venv the model-writer tests make) against the files ``agent install`` leaves in
site-packages.

The tests play prefills, 0-step plain rounds and resumes through the runtime's plain round, ring,
streak book, reserve planner, catch-up and round timer, with stand-ins only for the SGLang names the
runtime imports lazily (a cache-location kernel, two classes, the allocation length); ``gpu.sh`` runs
the same tests through the preflight on the GPU host with CUDA before any engine starts.
"""

from __future__ import annotations

import os
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
        [str(torch_python), "-m", "bench.real.zero_step_preflight", str(site_packages)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    passed = re.match(r"(\d+)/(\d+) checks passed", lines[-1])
    assert passed and passed.group(1) == passed.group(2) and int(passed.group(2)) >= 28, lines[-1]
    assert not [line for line in lines if line.startswith("FAIL")]


def test_the_preflight_runs_from_a_copy_without_tests(
    torch_python: Path,  # noqa: F811
    site_packages: Path,
    tmp_path: Path,
) -> None:
    """Issue 46: the GPU host's copy may leave ``tests/`` out; the preflight needs only ``bench`` and
    the overlay's checks (``agent/install/overlay/checks``), so it still runs every check there."""
    apply_patch_set(site_packages, load_patch_set())
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "bench", copy / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
    shutil.copytree(REPO / "agent" / "install" / "overlay", copy / "agent" / "install" / "overlay")
    assert not (copy / "tests").exists()
    done = subprocess.run(
        [str(torch_python), "-m", "bench.real.zero_step_preflight", str(site_packages)],
        capture_output=True,
        text=True,
        check=False,
        cwd=copy,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    passed = re.match(r"(\d+)/(\d+) checks passed", last)
    assert passed and passed.group(1) == passed.group(2) and int(passed.group(2)) >= 28, last


def test_the_preflight_fails_when_the_catch_up_reads_the_wrong_positions(
    torch_python: Path,  # noqa: F811
    site_packages: Path,
    tmp_path: Path,
) -> None:
    """The check can fail: an off-by-one in the ring's gather is caught."""
    apply_patch_set(site_packages, load_patch_set())
    broken = tmp_path / "broken"
    shutil.copytree(site_packages, broken)
    runtime = broken / "sglang/srt/speculative/k25_zero_step_ring.py"  # the ring's gather
    text = runtime.read_text()
    assert "pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0)" in text
    runtime.write_text(
        text.replace(
            "pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0)",
            "pos = start.to(torch.int64).unsqueeze(1) + col.unsqueeze(0) + 1",
        )
    )
    done = subprocess.run(
        [str(torch_python), "-m", "bench.real.zero_step_preflight", str(broken)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 1
    assert "FAIL  tokens and hiddens are those of the missed positions" in done.stdout


@pytest.fixture(scope="module")
def torch_pytest(torch_python: Path) -> Path:  # noqa: F811
    """The torch venv's python, with pytest in it (the overlay's tests run there)."""
    if subprocess.run(
        [str(torch_python), "-c", "import pytest"], capture_output=True, check=False
    ).returncode:
        done = subprocess.run(
            [str(torch_python), "-m", "pip", "install", "-q", "pytest"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(
                f"could not install pytest into {torch_python}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
    return torch_python


def test_the_overlay_tests_pass_under_pytest_on_the_installed_tree(
    torch_pytest: Path, site_packages: Path
) -> None:
    """The preflight's checks are pytest tests: run them on the modules agent install wrote."""
    apply_patch_set(site_packages, load_patch_set())
    done = subprocess.run(
        [str(torch_pytest), "-m", "pytest", "tests/overlay", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "K25_OVERLAY_TREE": str(site_packages), "K25_TORCH_DEVICE": "cpu"},
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    summary = re.search(r"(\d+) passed", done.stdout)
    assert summary and int(summary.group(1)) >= 50 and "failed" not in done.stdout, done.stdout[-2000:]
