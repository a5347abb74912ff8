#!/usr/bin/env bash
# The real-engine runs on a lent one-H200 host with no network (bench/real/README.md), in stages that
# each fit one 10-minute command, run from the repository root:
#   bash bench/real/gpu.sh setup     agent env, wheels, `agent install --wheelhouse`, models, launches
#   bash bench/real/gpu.sh benches   smoke result, the tiny-model comparisons and the recording
#   bash bench/real/gpu.sh heavy     issue 18: off vs a server without a drafter, skip vs no skip
#   bash bench/real/gpu.sh collect   bundle what was measured into $OUT (every stage ends with it)
# The quiet session (issues 13 and 18, what the first session taught): QUIET=1 for every stage; setup
# launches only heavy-skip and heavy-base, with --sleep-on-idle and no smoke, then
#   QUIET=1 bash bench/real/gpu.sh quiet1   heavy-skip at live threshold 0 against heavy-base, long windows
#   QUIET=1 bash bench/real/gpu.sh quiet2   the same again: the two must agree within 5 % per level
#   QUIET=1 bash bench/real/gpu.sh quiet3   heavy-spec (no skip) at threshold 0 against heavy-base, 2 repeats
# Everything runs in the background where it must outlive a command (setsid), every wait is bounded,
# and every step prints its time, so a stage that runs out of time says where it was.
set -u
REPO=$(pwd)
R=/tmp/real
A=${K25_AGENT:-/tmp/agent}           # the agent: python3 + its wheels and source, image untouched
AP=${K25_AGENT_PYTHON:-/tmp/agent-python}  # the same interpreter for the bench scripts
STATES="tiny-oracle tiny-random heavy-spec heavy-skip heavy-base"
QUIET=${QUIET:-}
[ -n "$QUIET" ] && STATES="heavy-skip heavy-base heavy-spec"
QUIET_LEVELS=${QUIET_LEVELS:-1,16,64,128}
QUIET_OPTS=${QUIET_OPTS:---repeats 3 --min-window-s 6}  # ~6 min a run with the baseline arm
T0=$SECONDS
mkdir -p "$R/out"
say() { echo "[$(date +%T) +$((SECONDS - T0))s] $*"; }

status_field() {  # status_field NAME FIELD: one field of that agent's `agent status --json`
    $A status --state-dir "/tmp/st-$1" --json 2>/dev/null |
        python3 -c "import json,sys; print(json.load(sys.stdin).get('$2') or '')" 2>/dev/null
}
state_of() { local s; s=$(status_field "$1" engine_state); echo "${s:-down}"; }
url_of() { status_field "$1" engine_url; }
LEVELS=${LEVELS:-1,4,16,64,128}
BENCH_OPTS=${BENCH_OPTS:---repeats 2 --min-window-s 2.5}  # issue 13: two interleaved windows per arm
STAGE_S=${STAGE_S:-585}             # a stage's own limit, under the 600 s of one command
left() { echo $((STAGE_S - (SECONDS - T0))); }
enough() {  # enough SECONDS WHAT: true if the stage has that long left; otherwise says what it skips
    [ "$(left)" -ge "$1" ] && return 0
    say "SKIPPED (needs ~$1 s, $(left) s left): $2"; return 1
}

wait_ready() {  # wait_ready LIMIT_S NAME...: until every named agent's engine is ready (or LIMIT_S)
    local limit=$1; shift
    local until=$((SECONDS + limit)) pending n
    while :; do
        pending=""
        for n in "$@"; do [ "$(state_of "$n")" = ready ] || pending="$pending $n"; done
        [ -z "$pending" ] && { say "ready: $*"; return 0; }
        [ $SECONDS -ge $until ] && { say "not ready after ${limit}s:$pending"; for n in $pending; do
            echo "  $n: $(state_of "$n")"; tail -n 3 "/tmp/st-$n/logs/engine.log" 2>/dev/null | cut -c1-300; done
            return 1; }
        sleep 5
    done
}

setup() {
    say "agent environment"
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/agent-site .carry/agent-deps/*.whl
    rm -rf /tmp/agent-src && mkdir -p /tmp/agent-src "$R/profiles"
    cp -r agent console bench pyproject.toml /tmp/agent-src/
    cp bench/real/profiles/*.toml "$R/profiles/"
    [ -n "$QUIET" ] && quiet_profiles
    printf '#!/bin/sh\nexport PYTHONPATH=/tmp/agent-src:/tmp/agent-site\nexec python3 -m agent.cli.main "$@"\n' > $A
    printf '#!/bin/sh\nexport PYTHONPATH=/tmp/agent-src:/tmp/agent-site\nexec python3 "$@"\n' > $AP
    chmod +x $A $AP
    $A --help > /dev/null && say "agent runs: $(python3 --version), $(command -v python3)"
    python3 -c 'import sys; print("  prefix", sys.prefix, "base", sys.base_prefix)'
    nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv,noheader

    say "wheels"
    mkdir -p /tmp/w && cat /tmp/stash/w.* | tar -xf - -C /tmp/w && rm -f /tmp/stash/w.*
    ls /tmp/w | wc -l | xargs echo "  wheels:"

    # The image's own torch writes the models (torch, safetensors, tokenizers are all it needs) while the
    # stack is built: they do not depend on it.
    say "models (tiny and heavy, on the GPU, with the image's python) in the background"
    $AP bench/real/write_models.py --python "$(command -v python3)" --root /tmp/smoke/models \
        --links /tmp/models tiny heavy > "$R/out/models.log" 2>&1 &
    local models=$!

    say "agent install --wheelhouse /tmp/w --system-site-packages"
    $A install --profile "$R/profiles/tiny-oracle.toml" --wheelhouse /tmp/w --system-site-packages \
        > "$R/out/install.log" 2>&1
    echo "install exit $?" | tee -a "$R/out/install.log"
    tail -n 25 "$R/out/install.log"
    if ! /tmp/stack/bin/python -c 'import sglang' 2>/dev/null; then
        say "FALLBACK: the shared recipe (pip --target /tmp/site and a wrapper) so the runs can go on"
        rm -rf /tmp/stack
        python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/w/*.whl
        local P=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
        mkdir -p /tmp/stack/bin
        printf '#!/bin/sh\nexport PYTHONPATH=%s HF_HUB_OFFLINE=1\nexec %s "$@"\n' "$P" "$(command -v python3)" \
            > /tmp/stack/bin/python
        chmod +x /tmp/stack/bin/python
        (cd /tmp/site && for p in /tmp/agent-src/agent/install/patches/0*/patch.diff; do patch -p1 --forward < "$p"; done)
        echo "fallback used" >> "$R/out/install.log"
    fi

    say "waiting for the models"
    if ! wait "$models"; then
        say "the image's python could not write them; the stack's python does"
        $AP bench/real/write_models.py --python /tmp/stack/bin/python --root /tmp/smoke/models \
            --links /tmp/models tiny heavy >> "$R/out/models.log" 2>&1
    fi
    cat "$R/out/models.log"

    say "launching five agents (each supervises one engine) and agent smoke (two engines)"
    for n in $STATES; do
        local extra=""
        [ "$n" = tiny-oracle ] && extra="--metrics-listen 127.0.0.1:9464"
        setsid nohup $A serve --engine sglang --profile "$R/profiles/$n.toml" --state-dir "/tmp/st-$n" \
            --gpus nvml $extra > "$R/serve-$n.log" 2>&1 < /dev/null &
    done
    if [ -z "$QUIET" ]; then
        setsid nohup $A smoke --profile "$R/profiles/tiny-oracle.toml" --work-dir /tmp/smoke \
            --startup-timeout 560 > "$R/out/smoke.log" 2>&1 < /dev/null &
        echo $! > "$R/smoke.pid"
    fi
    local left=$((570 - (SECONDS - T0)))
    [ $left -gt 30 ] && wait_ready $left $STATES
    say "setup stage done"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader
}

compare() {  # compare NAME OUTFILE [extra bench options...]
    local n=$1 out=$2; shift 2
    say "bench compare $n -> $out"
    # bounded so that the stage still collects; the command line is kept beside the result
    echo "agent bench compare --url URL_OF_$n --concurrency $LEVELS --input-len 256 --output-len 128" \
        "$BENCH_OPTS --json $out $*" > "$R/out/${out%.json}.cmd"
    local limit=$(($(left) - 15)); [ $limit -lt 60 ] && limit=60
    # shellcheck disable=SC2086
    timeout -s INT $limit $A bench compare --url "$(url_of "$n")" --concurrency "$LEVELS" \
        --input-len 256 --output-len 128 $BENCH_OPTS --json "$R/out/$out" "$@" > "$R/out/${out%.json}.txt" 2>&1
    echo "  exit $?"; tail -n 22 "$R/out/${out%.json}.txt"
}

smoke_result() {
    local until=$((SECONDS + ${1:-240}))
    while kill -0 "$(cat "$R/smoke.pid")" 2>/dev/null && [ $SECONDS -lt $until ]; do sleep 5; done
    say "agent smoke:"; tail -n 30 "$R/out/smoke.log"
}

benches() {
    smoke_result 200
    wait_ready 120 tiny-oracle tiny-random heavy-spec heavy-skip heavy-base
    say "the oracle engine's live threshold to 0 (speculate at every size): its adaptive arm must read as on"
    $AP bench/real/act.py --state-dir /tmp/st-tiny-oracle threshold 0
    say "recording the oracle agent's stream during the first comparison"
    $AP bench/record_stream.py --socket /tmp/st-tiny-oracle/run/agent.sock \
        --out "$R/out/real-oracle-compare.jsonl" --seconds 400 > "$R/out/record.txt" 2>&1 &
    local rec=$!
    compare tiny-oracle compare-oracle-1.json
    kill -TERM $rec; wait $rec; tail -n 3 "$R/out/record.txt"
    enough 150 "the second oracle comparison" && compare tiny-oracle compare-oracle-2.json
    enough 150 "the random-head comparison" && compare tiny-random compare-random.json
    $AP bench/real/act.py --state-dir /tmp/st-tiny-oracle threshold 32
    curl -s 127.0.0.1:9464/metrics | grep -E '^k25_(speculation|engine_state|bench)' | head -20
    say "agent metrics against the real engine"
    $A metrics "$(url_of tiny-oracle)/metrics" --json > "$R/out/agent-metrics.json" 2>&1
    echo "  exit $?"
    if enough 60 "agent tick CPU"; then
        say "agent tick CPU on this host"
        $AP bench/agent_tick.py --runs 3 2>&1 | tail -n 12 | tee "$R/out/agent-tick.txt"
    fi
}

heavy() {
    wait_ready 60 heavy-spec heavy-skip heavy-base
    compare heavy-spec compare-heavy-noskip.json --baseline-url "$(url_of heavy-base)"
    enough 200 "the heavy comparison with the skip" &&
        compare heavy-skip compare-heavy-skip.json --baseline-url "$(url_of heavy-base)"
    for n in heavy-skip heavy-spec; do
        enough 90 "upshift recovery on $n" || continue
        say "upshift recovery on $n"
        $AP bench/upshift_recovery.py --url "$(url_of "$n")" --concurrency 8 --zero-s 8 \
            --input-len 256 --output-len 3600 --json "$R/out/upshift-$n.json" 2>&1 | tail -n 12
    done
}

quiet_profiles() {  # the copied profiles sleep when idle: an idle scheduler otherwise busy-polls a core
    local f
    for f in "$R"/profiles/*.toml; do
        sed -i 's/^extra_flags = \["--decode-log-interval", "10"\]$/extra_flags = ["--decode-log-interval", "10", "--sleep-on-idle"]/' "$f"
        grep -q -- '--sleep-on-idle' "$f" || { say "could not add --sleep-on-idle to $f"; return 1; }
    done
}

quiet_run() {  # quiet_run N [NAME [OPTS]]: one quiet comparison; adaptive at threshold 0 must read as on
    local n=${2:-heavy-skip}
    wait_ready 120 "$n" heavy-base
    $AP bench/real/act.py --state-dir "/tmp/st-$n" threshold 0
    LEVELS=$QUIET_LEVELS BENCH_OPTS=${3:-$QUIET_OPTS} \
        compare "$n" "compare-quiet-$1.json" --baseline-url "$(url_of heavy-base)"
    top -b -n 1 | head -n 15 > "$R/out/top-quiet-$1.txt"
}
quiet1() { quiet_run 1; }
quiet2() {
    quiet_run 2
    say "the two quiet runs against each other (issue 13: within 5 % per level and arm)"
    $AP bench/bench_repeat.py --from "$R/out/compare-quiet-1.json" "$R/out/compare-quiet-2.json" \
        --max-diff 0.05 2>&1 | tee "$R/out/quiet-repeat.txt"
}

quiet3() { quiet_run 3 heavy-spec "${QUIET3_OPTS:---repeats 2 --min-window-s 6}"; }  # off without the skip

collect() {
    say "collect"
    for n in $STATES; do
        mkdir -p "$R/logs/$n"
        cp "/tmp/st-$n"/logs/engine.log* "$R/logs/$n/" 2>/dev/null
        cp "$R/serve-$n.log" "$R/logs/$n/" 2>/dev/null
        $A status --state-dir "/tmp/st-$n" --json > "$R/logs/$n/status.json" 2>&1
    done
    cp -r /tmp/smoke/runs "$R/logs/smoke-runs" 2>/dev/null
    tar -czf "$OUT/results.tgz" -C "$R" out
    tar -czf "$OUT/logs.tgz" -C "$R" logs
    ls -la "$OUT"
}

for stage in "$@"; do
    "$stage"
done
[ "${*: -1}" = collect ] || collect
