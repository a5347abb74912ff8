#!/usr/bin/env bash
# Rehearse gpu.sh's stages here, on the simulated engine (no GPU): the same agents (each on
# `--engine sim`), `agent smoke --engine sim`, the same commands, short levels.
#   bash bench/real/rehearse.sh [LEVELS]                 benches and heavy (default levels 1,16)
#   QUIET=1 bash bench/real/rehearse.sh [LEVELS]         the quiet session's quiet1, quiet2 and quiet3
# Results in /tmp/real-rehearsal/OUT.
set -u
cd "$(dirname "$0")/../.."
export K25_AGENT="$PWD/.venv/bin/agent" K25_AGENT_PYTHON="$PWD/.venv/bin/python" LEVELS=${1:-1,16}
export OUT=/tmp/real-rehearsal/OUT QUIET=${QUIET:-}
R=/tmp/real
STATES="tiny-oracle tiny-random heavy-spec heavy-skip heavy-base"
[ -n "$QUIET" ] && STATES="heavy-skip heavy-base heavy-spec"
rm -rf "$R" "$OUT" /tmp/st-tiny-* /tmp/st-heavy-* && mkdir -p "$R/out" "$R/profiles" "$OUT"
cp bench/real/profiles/*.toml "$R/profiles/"
if [ -n "$QUIET" ]; then  # the profiles as the quiet setup writes them
    sed -i 's/^extra_flags = \["--decode-log-interval", "10"\]$/extra_flags = ["--decode-log-interval", "10", "--sleep-on-idle"]/' "$R"/profiles/*.toml
fi
for n in $STATES; do
    extra=""; [ "$n" = tiny-oracle ] && extra="--metrics-listen 127.0.0.1:9464"
    setsid "$K25_AGENT" serve --engine sim --sim-speedup 10 --gpus none --profile "$R/profiles/$n.toml" \
        --state-dir "/tmp/st-$n" $extra > "$R/serve-$n.log" 2>&1 < /dev/null &
done
if [ -n "$QUIET" ]; then
    QUIET_LEVELS=$LEVELS QUIET_OPTS="--repeats 2 --min-window-s 2" QUIET3_OPTS="--repeats 2 --min-window-s 2" bash bench/real/gpu.sh quiet1 quiet2 quiet3
else
    setsid "$K25_AGENT" smoke --engine sim --profile "$R/profiles/tiny-oracle.toml" \
        --work-dir /tmp/smoke-rehearsal > "$R/out/smoke.log" 2>&1 < /dev/null &
    echo $! > "$R/smoke.pid"
    bash bench/real/gpu.sh benches heavy
fi
for n in $STATES; do
    "$K25_AGENT" stop --state-dir "/tmp/st-$n" --engine-too > /dev/null 2>&1
done
ls -la "$OUT"
