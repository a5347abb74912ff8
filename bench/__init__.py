"""What k25console's speed, cost and behaviour measure to, by scripts that print their figures.

A package so that the scripts run as modules from the repository root (``python -m bench.costs.agent_tick``)
and import each other (``bench.kit.agent_api``) and the project (``agent``, ``console``) with no edit of
``sys.path``; the tests import them the same way. ``bench/README.md`` says what each folder holds and how
to run it. This module imports nothing but ``pathlib``: ``bench.real.zero_step_preflight`` runs under a
python that has torch and the repository's tree and nothing else.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository's root (profiles, fixtures and ``tests`` are found from it, wherever the script runs)."""
