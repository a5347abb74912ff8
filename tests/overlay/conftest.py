"""The overlay's torch-side checks (``agent/install/overlay/checks``) under pytest.

They need torch, which the main test environment does not have: there they are not collected, and
``tests/install/test_zero_step_runtime.py`` runs them with pytest in the CPU torch venv the model
tests make (``~/.cache/k25console/torch-venv``). Run them yourself, in seconds:

    ~/.cache/k25console/torch-venv/bin/python -m pytest tests/overlay -q -p no:cacheprovider

``K25_OVERLAY_TREE`` loads the modules from another tree (a site-packages ``agent install`` wrote)
instead of the repository's overlay; ``K25_TORCH_DEVICE`` picks the device (``cpu`` unless set).
``python -m bench.real.zero_step_preflight`` runs the same checks on the GPU host, without pytest and
without ``tests/``: so the checks live beside the overlay, and this folder only runs them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]
else:

    @pytest.fixture(scope="session")
    def zero() -> Any:
        """The overlay's zero-step modules loaded with the stand-ins (``checks.stand_ins.Overlay``)."""
        from bench.real.zero_step_preflight import PACKAGE, overlay_checks

        overlay_checks()
        stand_ins = importlib.import_module(f"{PACKAGE}.stand_ins")
        tree = Path(os.environ.get("K25_OVERLAY_TREE") or stand_ins.OVERLAY)
        return stand_ins.load(tree, os.environ.get("K25_TORCH_DEVICE", "cpu"))
