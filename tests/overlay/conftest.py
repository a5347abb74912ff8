"""The overlay's torch-side tests: the zero-step runtime driven with torch and stand-ins for SGLang.

They need torch, which the main test environment does not have: there they are not collected, and
``tests/install/test_zero_step_runtime.py`` runs them with pytest in the CPU torch venv the model
tests make (``~/.cache/k25console/torch-venv``). Run them yourself, in seconds:

    ~/.cache/k25console/torch-venv/bin/python -m pytest tests/overlay -q -p no:cacheprovider

``K25_OVERLAY_TREE`` loads the modules from another tree (a site-packages ``agent install`` wrote)
instead of the repository's overlay; ``K25_TORCH_DEVICE`` picks the device (``cpu`` unless set).
``python -m bench.real.zero_step_preflight`` runs the same tests on the GPU host, without pytest: so the
test modules import neither pytest nor anything but torch and the two helpers here.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    from .overlay_stand_ins import OVERLAY, Overlay, load

    @pytest.fixture(scope="session")
    def zero() -> Overlay:
        tree = Path(os.environ.get("K25_OVERLAY_TREE") or OVERLAY)
        return load(tree, os.environ.get("K25_TORCH_DEVICE", "cpu"))

    @pytest.fixture(params=[True, False], ids=["cpu-lens", "gpu-lens-only"])
    def cpu_lens(request: pytest.FixtureRequest) -> bool:
        """Whether the batch carries a CPU copy of its sequence lengths (some backends keep none)."""
        return bool(request.param)
