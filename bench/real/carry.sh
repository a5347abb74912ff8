#!/usr/bin/env bash
# Build what travels to an offline GPU host for the real-engine runs (bench/real/README.md):
#   bench/real/carry.sh [OUT]          (default OUT: .carry, which .git/info/exclude must ignore)
# OUT/w.NN        the SGLang 0.5.23 wheel set (torch 2.14.1, sglang-kernel, flashinfer, ...) as one tar
#                 stream cut into 54 MiB pieces (skipped when the pieces are already there); the GPU
#                 image's own packages (image-freeze.txt: its CUDA libraries serve torch 2.14.1) are
#                 reused, not carried
# OUT/agent-deps  the agent's own dependency closure for Python 3.12 on x86_64, as pyproject.toml lists it
#                 (bench/real/agent_deps.py; gpu.sh setup checks the set before anything runs)
# The agent itself travels as source with the working tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.carry}
py312=${PY312:-python3.12}
py312=$("$py312" -c 'import sys; print(sys.executable)')   # the interpreter itself, not a pyenv shim
mkdir -p "$out"

wheel_set() {  # SGLang 0.5.23's wheels less the image's own, as $out/w.00, w.01, ...
    local work
    work=$(mktemp -d)
    mkdir -p "$work/all"
    "$py312" -m pip install -q --dry-run --ignore-installed --only-binary=:all: --report "$work/report.json" \
        sglang==0.5.23
    "$py312" - "$work/report.json" bench/real/image-freeze.txt > "$work/urls.txt" <<'PY'
import json, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
image = dict(line.strip().split("==", 1) for line in open(sys.argv[2]) if "==" in line)
image = {norm(k): v for k, v in image.items()}
# the image's CUDA libraries serve torch 2.14.1 as they are; data/bench-only packages are not needed to serve
keep_image = {"nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-cusparselt-cu13", "nvidia-nvjitlink", "numpy", "numba",
              "llvmlite", "setuptools", "cython", "cuda-toolkit"}
skip = {"nvidia-nvvm", "nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-cuda-cccl", "nvidia-cutlass-dsl-libs-cu12",
        "pyarrow", "pandas", "datasets", "torchcodec"}
for item in json.load(open(sys.argv[1]))["install"]:
    name = norm(item["metadata"]["name"])
    if name in keep_image or name in skip or image.get(name) == item["metadata"]["version"]:
        continue
    print(item["download_info"]["url"])
PY
    (cd "$work/all" && xargs -n 10 -P 4 "$py312" -m pip download -q --no-deps -d . < "$work/urls.txt")
    tar -cf - -C "$work/all" . | split -b 54M -d -a 2 - "$out/w."
    rm -rf "$work"
}

if ! ls "$out"/w.00 >/dev/null 2>&1; then
    wheel_set
fi
rm -rf "$out/agent-deps"
mapfile -t deps < <("$py312" -m bench.real.agent_deps --list)
"$py312" -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 --platform any -d "$out/agent-deps" \
    "${deps[@]}"
"$py312" -m bench.real.agent_deps --check "$out/agent-deps"
ls "$out" | grep -c '^w\.' | xargs echo "wheel pieces:"
du -sh "$out/agent-deps"
