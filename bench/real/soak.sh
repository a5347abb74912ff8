#!/usr/bin/env bash
# Issue 46's soak: "off" held for minutes at one concurrency on the speculative engine, then the same
# load on the server without a drafter, with bench/real/soak_sampler.py beside it (tokens/s, GPU busy,
# patch 03's read-back, RSS and CPU of every SGLang process, every --window-s). It outlives the device
# call that starts it (setsid), so a soak longer than one call runs across two:
#   bash bench/real/soak.sh start     # from the repository root on the GPU host, after gpu.sh setup
#   bash bench/real/soak.sh wait S    # up to S seconds for it to end; prints the tail of its log
# SOAK_C (64), SOAK_OFF_S (600), SOAK_BASE_S (240), SOAK_WINDOW_S (10), SOAK_PAIR (triton);
# results in /tmp/real/out/soak-*.{json,jsonl,txt} (gpu.sh collect takes them).
set -u
R=/tmp/real
A=${K25_AGENT:-/tmp/agent}
AP=${K25_AGENT_PYTHON:-/tmp/agent-python}
C=${SOAK_C:-64}
OFF_S=${SOAK_OFF_S:-600}
BASE_S=${SOAK_BASE_S:-240}
WINDOW_S=${SOAK_WINDOW_S:-10}
PAIR=${SOAK_PAIR:-triton}
TAG="c$C-$PAIR"
mkdir -p "$R/out"
url_of() {
    $A status --state-dir "/tmp/st-$1" --json 2>/dev/null |
        python3 -c "import json,sys; print(json.load(sys.stdin).get('engine_url') or '')" 2>/dev/null
}
say() { echo "[$(date +%T)] $*"; }

job() {
    local spec base
    spec=$(url_of "big-chain-$PAIR") base=$(url_of "big-base-$PAIR")
    [ -n "$spec" ] && [ -n "$base" ] || { say "no engine URL (spec '$spec', base '$base')"; return 1; }
    say "soak $TAG: off ${OFF_S}s then no drafter ${BASE_S}s, windows ${WINDOW_S}s; $spec, $base"
    $AP -m bench.real.soak_sampler --engine "spec=$spec" --engine "base=$base" --window-s "$WINDOW_S" \
        --duration-s $((OFF_S + BASE_S + 120)) --out "$R/out/soak-$TAG.jsonl" > "$R/out/soak-sampler-$TAG.txt" 2>&1 &
    local sampler=$!
    # One window as long as the stretch: one closed loop of C streams that never drains, as production runs.
    timeout -s INT $((OFF_S + 90)) $A bench compare --url "$spec" --arms off --concurrency "$C" --repeats 1 \
        --input-len 256 --output-len 128 --min-window-s "$OFF_S" --drain-wait-s 30 \
        --json "$R/out/soak-off-$TAG.json" > "$R/out/soak-off-$TAG.txt" 2>&1
    say "off ended: exit $?"
    timeout -s INT $((BASE_S + 90)) $A bench compare --url "$spec" --baseline-url "$base" --arms baseline \
        --concurrency "$C" --repeats 1 --input-len 256 --output-len 128 --min-window-s "$BASE_S" --drain-wait-s 30 \
        --json "$R/out/soak-base-$TAG.json" > "$R/out/soak-base-$TAG.txt" 2>&1
    say "baseline ended: exit $?"
    kill -INT "$sampler" 2>/dev/null; wait "$sampler"
    $AP -m bench.real.soak_report "$R/out/soak-$TAG.jsonl" > "$R/out/soak-report-$TAG.txt" 2>&1
    say "soak $TAG done"
}

case "${1:-}" in
    start)
        setsid nohup bash "$0" __job > "$R/out/soak-$TAG.log" 2>&1 < /dev/null &
        echo $! > "$R/soak.pid"; say "soak $TAG started (pid $(cat "$R/soak.pid"))" ;;
    __job) job ;;
    wait)
        limit=${2:-550}; until=$((SECONDS + limit))
        while kill -0 "$(cat "$R/soak.pid" 2>/dev/null)" 2>/dev/null && [ $SECONDS -lt "$until" ]; do sleep 5; done
        tail -n 30 "$R/out/soak-$TAG.log" "$R/out/soak-sampler-$TAG.txt" 2>/dev/null
        cat "$R/out/soak-report-$TAG.txt" 2>/dev/null ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
esac
