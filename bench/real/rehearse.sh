#!/usr/bin/env bash
# Rehearse gpu.sh's stages here, on the simulated engine (no GPU): the same four agents (each on
# `--engine sim`), the same commands, short levels and windows. It catches script errors before any
# device time is spent; the figures mean nothing (the simulator is not the H200).
#   bash bench/real/rehearse.sh [LEVELS] [STAGES]     default levels 1,16; stages timing upshift chain1 chain2 fa3 ramp
# Results in /tmp/real-rehearsal/OUT.
set -u
cd "$(dirname "$0")/../.."
export K25_AGENT="$PWD/.venv/bin/agent" K25_AGENT_PYTHON="$PWD/.venv/bin/python"
export LEVELS=${1:-1,16} FA3_LEVELS=${1:-1,16} OUT=/tmp/real-rehearsal/OUT
export BENCH_OPTS="--repeats 2 --min-window-s 2" TIMING_ROUNDS=20 RAMP_OPTS=${RAMP_OPTS:-}
STAGES=${2:-timing upshift chain1 chain2 fa3 ramp}
R=/tmp/real
export STATES="big-chain-triton big-base-triton big-chain-fa3 big-base-fa3"
rm -rf "$R" "$OUT" /tmp/st-big-* && mkdir -p "$R/out" "$R/profiles" "$OUT"
cp bench/real/profiles/big-*.toml "$R/profiles/"
for n in $STATES; do
    setsid "$K25_AGENT" serve --engine sim --sim-speedup 10 --gpus none --profile "$R/profiles/$n.toml" \
        --state-dir "/tmp/st-$n" > "$R/serve-$n.log" 2>&1 < /dev/null &
done
# shellcheck disable=SC2086
bash bench/real/gpu.sh $STAGES
for n in $STATES; do
    "$K25_AGENT" stop --state-dir "/tmp/st-$n" --engine-too > /dev/null 2>&1
done
ls -la "$OUT"
