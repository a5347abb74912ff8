#!/usr/bin/env bash
# The fault suite (tests/faults) N runs in a row (default 50), stopping at the first failure:
#   bench/costs/fault_loop.sh [RUNS] [SEED]
# Each run is one real fault against one `agent serve --engine sim` (kill -9 at a point of an action
# or at random, a full state tmpfs, a torn audit line, the engine killed during a bench, a restart cut
# short, a torn engine record, a compare cut short), and ends with the suite's one check. The suite alone
# runs 8, one of each.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs="${1:-50}"
seed="${2:-25}"
K25_FAULT_RUNS="$runs" K25_FAULT_SEED="$seed" exec "${PYTHON:-.venv/bin/python}" -m pytest -q -x \
    -p no:cacheprovider tests/faults/test_fault_suite.py
