#!/usr/bin/env bash
# Build what travels to an offline GPU host for the real-engine runs (bench/real/README.md):
#   bench/real/carry.sh [OUT]          (default OUT: .carry, which .git/info/exclude must ignore)
# OUT/w.NN        the SGLang 0.5.23 wheel set (torch 2.14.1, sglang-kernel, flashinfer, ...) as one tar
#                 stream cut into 54 MiB pieces, made by ../shared/tools/real-sglang/make-carry.sh
#                 (skipped when the pieces are already there)
# OUT/agent-deps  the agent's own dependency closure for Python 3.12 on x86_64, as pyproject.toml lists it
#                 (bench/real/agent_deps.py; gpu.sh setup checks the set before anything runs)
# The agent itself travels as source with the working tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.carry}
py312=${PY312:-python3.12}
mkdir -p "$out"
if ! ls "$out"/w.00 >/dev/null 2>&1; then
    PY312="$py312" bash ../shared/tools/real-sglang/make-carry.sh "$out" .
fi
rm -rf "$out/agent-deps"
mapfile -t deps < <("$py312" bench/real/agent_deps.py --list)
"$py312" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 --platform any -d "$out/agent-deps" \
    "${deps[@]}"
"$py312" bench/real/agent_deps.py --check "$out/agent-deps"
ls "$out" | grep -c '^w\.' | xargs echo "wheel pieces:"
du -sh "$out/agent-deps"
