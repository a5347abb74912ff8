#!/usr/bin/env bash
# Rehearse gpu.sh's `benches` and `heavy` stages here, on the simulated engine (no GPU): the same five
# agents (each on `--engine sim`), `agent smoke --engine sim`, the same commands, short levels.
#   bash bench/real/rehearse.sh [LEVELS]      (default 1,16)   results in /tmp/real-rehearsal/out
set -u
cd "$(dirname "$0")/../.."
export K25_AGENT="$PWD/.venv/bin/agent" K25_AGENT_PYTHON="$PWD/.venv/bin/python" LEVELS=${1:-1,16}
export OUT=/tmp/real-rehearsal/OUT
R=/tmp/real
rm -rf "$R" "$OUT" /tmp/st-tiny-* /tmp/st-heavy-* && mkdir -p "$R/out" "$R/profiles" "$OUT"
cp bench/real/profiles/*.toml "$R/profiles/"
for n in tiny-oracle tiny-random heavy-spec heavy-skip heavy-base; do
    extra=""; [ "$n" = tiny-oracle ] && extra="--metrics-listen 127.0.0.1:9464"
    setsid "$K25_AGENT" serve --engine sim --sim-speedup 10 --gpus none --profile "$R/profiles/$n.toml" \
        --state-dir "/tmp/st-$n" $extra > "$R/serve-$n.log" 2>&1 < /dev/null &
done
setsid "$K25_AGENT" smoke --engine sim --profile "$R/profiles/tiny-oracle.toml" --work-dir /tmp/smoke-rehearsal \
    > "$R/out/smoke.log" 2>&1 < /dev/null &
echo $! > "$R/smoke.pid"
bash bench/real/gpu.sh benches heavy
for n in tiny-oracle tiny-random heavy-spec heavy-skip heavy-base; do
    "$K25_AGENT" stop --state-dir "/tmp/st-$n" --engine-too > /dev/null 2>&1
done
ls -la "$OUT"
