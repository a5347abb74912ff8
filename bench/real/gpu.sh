#!/usr/bin/env bash
# The GPU-bound session (issues 23 and 24) on a lent one-H200 host with no network
# (bench/real/README.md, "The GPU-bound session"), in stages that each fit one 10-minute command,
# run from the repository root; several stages may share one command (`gpu.sh setup timing upshift`):
#   setup     agent env, wheels, `agent install --wheelhouse`, patch 03's preflight on CUDA, the big
#             chain models (heads q100 and q080), four agents (one engine each), until all are ready
#   timing    patch 03's round timer at c=64: SGLang's 0-step path, the plain path and drafting on both
#             speculative engines, decode on both baselines; same greedy tokens on every path
#   trace     a torch profiler trace of a steady decode at c=$TRACE_C on every engine (the plain 0-step path
#             on the speculative ones), and trace_gaps.py on them: the GPU's idle time per round and what
#             the host did meanwhile (traces in $OUT/traces.tar, the report in trace-gaps-c$TRACE_C-o$TRACE_OUT_LEN.txt)
#   arrivals  issue 36, step 1: what an arrival and a finish cost, at the compare's shape (256 unique prompt
#             tokens in, 128 out) at c=$ARRIVAL_LEVELS: a long profiler trace of each engine (the plain 0-step
#             path on the speculative one), staggered streams so that requests come and go one by one,
#             then trace_arrivals.py (per arrival and per finish: iterations, GPU and host time by part)
#             and trace_gaps.py; one short trace with Python frames of each engine at c=64 names the host's
#             functions (the traces come back one file each, as many as $OUT holds)
#   upshift   accept length round by round after stepping up from 0 steps (the catch-up), triton
#   chain1    triton: `agent bench compare` chain head q080 vs no drafter, levels 1..128 (issues 23, 24)
#   chain2    the same again (compare-chain-2.json)
#   chain3    the same a third time, then bench_repeat.py on this session's pair and on every run there is
#             (two runs within 5 % per level and arm, interval coverage; the earlier session's chain-1
#             is taken from bench/results when it travelled)
#   fa3       fa3: the q100 head vs no drafter, levels 1, 16, 64, 128 (issue 23)
#   ramp      the autopilot on a 1 -> 128 -> 1 ramp against the best fixed and the profile's threshold
#   ruled     issue 36's figure: off against a server without a drafter (--arms off,baseline) at
#             $RULED_LEVELS, windows added until both intervals are within $RULED_UNTIL or the stage's
#             time runs out (--until, --budget), triton pair (fa3 pair with RULED_PAIR=fa3)
#   fa3swap   a card under 100 GiB serves two engines at a time: stop the triton pair, start the fa3 pair
#   tritonswap  the reverse: stop the fa3 pair, start the triton pair again
#   soak      issue 46: bench/real/soak.py in the background (setsid: it outlives the command), off (live
#             threshold 1) at c=$SOAK_C for $SOAK_S s in windows of 10 s on big-chain-$SOAK_PAIR, then
#             its baseline (big-base-$SOAK_PAIR; $SOAK_OPTS, default 60 s after), its JSON rewritten after
#             every window (out/soak-$SOAK_PAIR-c$SOAK_C.json: a call cut short keeps what it measured)
#   soakwait  wait for the soak started earlier (as long as the command has time; again in the next
#             call if it still runs), then print its table and verdict
#   collect   bundle everything into $OUT (every command ends with it)
# Everything that must outlive a command runs under setsid, every wait is bounded, every step prints
# its time, so a stage that runs out of time says where it was and keeps what it measured.
set -u
REPO=$(pwd)
R=/tmp/real
A=${K25_AGENT:-/tmp/agent}                 # the agent: python3 + its wheels and source, image untouched
AP=${K25_AGENT_PYTHON:-/tmp/agent-python}  # the same interpreter for the bench scripts: `$AP -m bench.real.X`,
                                           # run from the repository root (first on their path)

GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -n 1)
# Four 8B-shape engines take about 100 GiB: a card under that (an H100, 80 GB) serves the triton pair,
# and `fa3swap` replaces it by the fa3 pair (then give STATES="big-chain-fa3 big-base-fa3" to later calls).
if [ "${GPU_MIB:-0}" -ge 100000 ]; then
    STATES=${STATES:-big-chain-triton big-base-triton big-chain-fa3 big-base-fa3}
else
    STATES=${STATES:-big-chain-triton big-base-triton}
fi
LEVELS=${LEVELS:-1,4,16,32,64,128}
FA3_LEVELS=${FA3_LEVELS:-1,16,64,128}
BENCH_OPTS=${BENCH_OPTS:---repeats 3 --min-window-s 3}
CHAIN2_OPTS=${CHAIN2_OPTS:-$BENCH_OPTS}
INPUT_LEN=${INPUT_LEN:-256}                # the comparisons' request shape
OUTPUT_LEN=${OUTPUT_LEN:-128}
TIMING_ROUNDS=${TIMING_ROUNDS:-200}
TRACE_C=${TRACE_C:-64}                     # the trace stage's concurrency and forward steps
TRACE_STEPS=${TRACE_STEPS:-40}
TRACE_OUT_LEN=${TRACE_OUT_LEN:-512}        # 64 x (256 + 512) tokens fit a capped pool of 60,000; 128: the compares' shape
TRACE_STACK=${TRACE_STACK:-}               # a name: that engine is traced once more with Python frames
RULED_LEVELS=${RULED_LEVELS:-64,16}
RULED_UNTIL=${RULED_UNTIL:-4%}
RULED_OPTS=${RULED_OPTS:---min-windows 3 --max-windows 10 --min-window-s 6}
ARRIVAL_LEVELS=${ARRIVAL_LEVELS:-64 16}   # the arrivals stage: concurrency levels, and forward steps per level
ARRIVAL_STEPS_64=${ARRIVAL_STEPS_64:-200}  # ~0.5 finishes per decode round at c=64, 128 out: 50+ arrivals
ARRIVAL_STEPS_16=${ARRIVAL_STEPS_16:-420}  # ~0.125 per round at c=16
ARRIVAL_STACK_STEPS=${ARRIVAL_STACK_STEPS:-24}
SOAK_C=${SOAK_C:-64}                       # the soak: concurrency, seconds of off, the pair, more options
SOAK_S=${SOAK_S:-600}
SOAK_PAIR=${SOAK_PAIR:-triton}
SOAK_OPTS=${SOAK_OPTS:---baseline-after-s 60}
STAGE_S=${STAGE_S:-585}                    # a command's own limit, under the 600 s of one call
T0=$SECONDS
mkdir -p "$R/out"
say() { echo "[$(date +%T) +$((SECONDS - T0))s] $*"; }
left() { echo $((STAGE_S - (SECONDS - T0))); }
enough() {  # enough SECONDS WHAT: true if the command has that long left; otherwise says what it skips
    [ "$(left)" -ge "$1" ] && return 0
    say "SKIPPED (needs ~$1 s, $(left) s left): $2"; return 1
}

status_field() {  # status_field NAME FIELD: one field of that agent's `agent status --json`
    $A status --state-dir "/tmp/st-$1" --json 2>/dev/null |
        python3 -c "import json,sys; print(json.load(sys.stdin).get('$2') or '')" 2>/dev/null
}
state_of() { local s; s=$(status_field "$1" engine_state); echo "${s:-down}"; }
url_of() { status_field "$1" engine_url; }

wait_ready() {  # wait_ready LIMIT_S NAME...: until every named agent's engine is ready (or LIMIT_S)
    local limit=$1; shift
    [ "$limit" -gt $(($(left) - 30)) ] && limit=$(($(left) - 30))  # a wait never eats the collect's time
    [ "$limit" -lt 1 ] && limit=1
    local until=$((SECONDS + limit)) pending n
    while :; do
        pending=""
        for n in "$@"; do [ "$(state_of "$n")" = ready ] || pending="$pending $n"; done
        [ -z "$pending" ] && { say "ready: $*"; return 0; }
        [ $SECONDS -ge $until ] && { say "not ready after ${limit}s:$pending"; for n in $pending; do
            echo "  $n: $(state_of "$n")"; tail -n 5 "/tmp/st-$n/logs/engine.log" 2>/dev/null | cut -c1-300
            grep -n "Traceback\|Error\|error:\|exited\|Killed\|OOM" "/tmp/st-$n/logs/engine.log" 2>/dev/null | head -n 12 | cut -c1-300
            grep -i "exit\|restart\|crash" "$R/serve-$n.log" 2>/dev/null | tail -n 6 | cut -c1-300; done
            return 1; }
        sleep 5
    done
}
clocks_on() { nohup nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
    --format=csv -l 1 > "$R/out/clocks-$1.csv" 2>&1 & echo $! > "$R/clocks.pid"; }
clocks_off() { kill "$(cat "$R/clocks.pid" 2>/dev/null)" 2>/dev/null; }

setup() {
    say "agent environment"
    # the carried wheels must hold every dependency pyproject.toml lists, or no agent starts (2026-12-06:
    # a dependency added after the download cost a whole set-up waiting for engines)
    python3 -m bench.real.agent_deps --check .carry/agent-deps || return 1
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/agent-site .carry/agent-deps/*.whl
    rm -rf /tmp/agent-src && mkdir -p /tmp/agent-src "$R/profiles"
    cp -r agent console bench pyproject.toml /tmp/agent-src/
    cp bench/real/profiles/big-*.toml "$R/profiles/"
    local gpu_name
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
    case "$gpu_name" in
        *H200*) ;;
        ?*) say "the profiles are made for an H200; this host has $gpu_name: their stack.gpus.name_contains says so"
            sed -i "s/^name_contains = .*/name_contains = \"$gpu_name\"/" "$R"/profiles/big-*.toml ;;
    esac
    printf '#!/bin/sh\nexport PYTHONPATH=/tmp/agent-src:/tmp/agent-site\nexec python3 -m agent.cli.main "$@"\n' > $A
    printf '#!/bin/sh\nexport PYTHONPATH=/tmp/agent-src:/tmp/agent-site\nexec python3 "$@"\n' > $AP
    chmod +x $A $AP
    if ! $A --help > /dev/null; then
        say "the agent does not run here (above): nothing else can"; return 1
    fi
    say "agent runs: $(python3 --version), $(command -v python3)"
    nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version,clocks.max.sm --format=csv,noheader

    say "wheels"
    mkdir -p /tmp/w && cat /tmp/stash/w.* | tar -xf - -C /tmp/w && rm -f /tmp/stash/w.*
    ls /tmp/w | wc -l | xargs echo "  wheels:"

    # The image's torch writes the models while the stack is built: they do not depend on it.
    say "models (the big chain set: a cycling target, heads q100 and q080) in the background"
    $AP -m bench.real.write_models --python "$(command -v python3)" --root /tmp/smoke/models \
        --links /tmp/models --chain tuned big > "$R/out/models.log" 2>&1 &
    local models=$!

    say "agent install --wheelhouse /tmp/w --system-site-packages"
    $A install --profile "$R/profiles/big-chain-triton.toml" --wheelhouse /tmp/w --system-site-packages \
        > "$R/out/install.log" 2>&1
    echo "install exit $?" | tee -a "$R/out/install.log"
    tail -n 25 "$R/out/install.log"
    local site
    site=$(/tmp/stack/bin/python -c 'import sglang, pathlib; print(pathlib.Path(sglang.__file__).parents[1])' 2>/dev/null)
    say "patch 03 preflight on the GPU with the stack's python ($site)"
    # a failed preflight (or one that cannot run: no stack, no checks) stops the set-up: an engine on a
    # broken runtime costs minutes and measures nothing (2026-12-07: it failed and set-up went on)
    /tmp/stack/bin/python -m bench.real.zero_step_preflight "$site" --device cuda > "$R/out/preflight.txt" 2>&1
    local preflight=$?
    grep -h "^FAIL" "$R/out/preflight.txt" | head -n 20; tail -n 4 "$R/out/preflight.txt"
    if [ $preflight -ne 0 ]; then
        say "the preflight failed (exit $preflight, $R/out/preflight.txt): no engine starts"
        kill "$models" 2>/dev/null; return 1
    fi

    say "waiting for the models"
    if ! wait "$models"; then
        say "the image's python could not write them; the stack's python does"
        $AP -m bench.real.write_models --python /tmp/stack/bin/python --root /tmp/smoke/models \
            --links /tmp/models --chain tuned big >> "$R/out/models.log" 2>&1
    fi
    cat "$R/out/models.log"
    cat /tmp/models/big-chain/tiny-eagle3-*/k25-chain.json 2>/dev/null | tr -d '\n'; echo

    # shellcheck disable=SC2086
    launch $STATES
    say "setup stage done"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader
    for n in $STATES; do
        $AP -m bench.real.engine_meta --url "$(url_of "$n")" --profile "$R/profiles/$n.toml" \
            > "$R/out/meta-$n.json" 2> "$R/out/meta-$n.err"
    done
    head -c 600 "$R/out/meta-big-chain-triton.json"; echo
    for n in $STATES; do grep -h "k25 zero-step" "/tmp/st-$n/logs/engine.log" 2>/dev/null | tail -n 1 | cut -c1-240; done
}

launch() {  # launch NAME...: one agent per named profile (each supervises its engine), until all are ready
    say "launching $# agents (each supervises one engine): $*"
    local n
    for n in "$@"; do
        setsid nohup $A serve --engine sglang --profile "$R/profiles/$n.toml" --state-dir "/tmp/st-$n" \
            --gpus nvml > "$R/serve-$n.log" 2>&1 < /dev/null &
    done
    local limit=$(( $(left) - 20 ))
    [ $limit -gt 30 ] && wait_ready $limit "$@"
}

swap_pair() {  # swap_pair FROM TO: a card under 100 GiB serves one pair at a time: stop FROM's, serve TO's
    local n
    for n in "big-chain-$1" "big-base-$1"; do
        say "stopping $n (agent and engine)"
        $A stop --state-dir "/tmp/st-$n" --engine-too > /dev/null 2>&1
    done
    STATES="big-chain-$2 big-base-$2"
    launch $STATES
    nvidia-smi --query-gpu=memory.used --format=csv,noheader
}
fa3swap() { swap_pair triton fa3; }
tritonswap() { swap_pair fa3 triton; }  # after fa3swap: the triton pair again

timing() {
    wait_ready 60 $STATES || return 1
    say "same greedy tokens: baseline, plain 0-step, verify 0-step, drafting (triton)"
    $AP -m bench.real.same_tokens --url "$(url_of big-chain-triton)" --baseline-url "$(url_of big-base-triton)" \
        2>&1 | tee "$R/out/same-tokens-triton.txt" | tail -n 8
    clocks_on timing
    local n
    for n in $STATES; do
        case $n in big-chain-*) ;; *) continue ;; esac
        enough 60 "round timing on $n" || continue
        say "round timing on $n (c=64, $TIMING_ROUNDS rounds per setting)"
        $AP -m bench.real.round_timing --url "$(url_of "$n")" --concurrency 64 --rounds "$TIMING_ROUNDS" \
            --json "$R/out/timing-$n.json" 2>&1 | tee "$R/out/timing-$n.txt" | tail -n 16
    done
    for n in $STATES; do
        case $n in big-base-*) ;; *) continue ;; esac
        enough 30 "round timing on $n" || continue
        say "round timing on $n (decode, c=64)"
        # the load needs longer to fill a server without a drafter (6 running after 4 s last time)
        $AP -m bench.real.round_timing --baseline --warmup-s 10 --url "$(url_of "$n")" --concurrency 64 \
            --rounds "$TIMING_ROUNDS" --json "$R/out/timing-$n.json" 2>&1 | tee "$R/out/timing-$n.txt" | tail -n 8
    done
    clocks_off
}

trace() {
    wait_ready 60 $STATES || return 1
    mkdir -p "$R/traces"
    clocks_on "trace-c$TRACE_C-o$TRACE_OUT_LEN"
    local n base
    for n in $STATES; do
        enough 45 "trace of $n" || continue
        base=""; case $n in big-base-*) base=--baseline ;; esac
        say "trace of $n (c=$TRACE_C, $TRACE_OUT_LEN out, $TRACE_STEPS steps, $( [ -n "$base" ] && echo "as it is" || echo "plain 0-step path"))"
        # shellcheck disable=SC2086
        timeout -s INT 120 $AP -m bench.real.trace_rounds --url "$(url_of "$n")" --name "$n-c$TRACE_C-o$TRACE_OUT_LEN" \
            $base --out "$R/traces" --concurrency "$TRACE_C" --steps "$TRACE_STEPS" --output-len "$TRACE_OUT_LEN" \
            2>&1 | tail -n 3
    done
    if [ -n "$TRACE_STACK" ] && enough 45 "the trace of $TRACE_STACK with Python frames"; then
        say "trace of $TRACE_STACK with Python frames (names the host's functions; its times are slowed)"
        timeout -s INT 120 $AP -m bench.real.trace_rounds --url "$(url_of "$TRACE_STACK")" --with-stack \
            --name "stack-$TRACE_STACK-c$TRACE_C-o$TRACE_OUT_LEN" --out "$R/traces" --concurrency "$TRACE_C" \
            --steps 12 --output-len "$TRACE_OUT_LEN" 2>&1 | tail -n 3
    fi
    clocks_off
    ls -la "$R/traces"
    $AP -m bench.real.trace_gaps "$R"/traces/big-*-c"$TRACE_C"-o"$TRACE_OUT_LEN"-*.trace.json.gz \
        --json "$R/out/trace-gaps-c$TRACE_C-o$TRACE_OUT_LEN.json" 2>&1 | tee "$R/out/trace-gaps-c$TRACE_C-o$TRACE_OUT_LEN.txt"
}

arrivals() {
    wait_ready 60 $STATES || return 1
    mkdir -p "$R/traces"
    local c n base steps pair="" names=""
    for n in $STATES; do case $n in *-triton) pair="$pair $n" ;; esac; done
    [ -n "$pair" ] || pair=$STATES
    clocks_on arrivals
    for c in $ARRIVAL_LEVELS; do
        steps=$(eval echo "\${ARRIVAL_STEPS_$c:-300}")
        for n in $pair; do
            enough 70 "the arrival trace of $n at c=$c" || continue
            base=""; case $n in big-base-*) base=--baseline ;; esac
            say "arrival trace of $n (c=$c, 256 unique in, 128 out, $steps steps, $( [ -n "$base" ] && echo "as it is" || echo "plain 0-step path"))"
            # shellcheck disable=SC2086
            timeout -s INT 150 $AP -m bench.real.trace_rounds --url "$(url_of "$n")" --name "arr-$n-c$c" $base \
                --out "$R/traces" --concurrency "$c" --steps "$steps" --unique-prompts --input-len 256 \
                --output-len 128 --warmup-s 8 --limit-s 120 2>&1 | tail -n 3
            names="$names arr-$n-c$c"
        done
        $AP -m bench.real.trace_arrivals "$R"/traces/arr-big-*-c"$c"-*.trace.json.gz \
            --json "$R/out/arrivals-c$c.json" 2>&1 | tee "$R/out/arrivals-c$c.txt"
        $AP -m bench.real.trace_gaps "$R"/traces/arr-big-*-c"$c"-*.trace.json.gz \
            --json "$R/out/arrivals-gaps-c$c.json" > "$R/out/arrivals-gaps-c$c.txt" 2>&1
    done
    for n in $pair; do
        enough 60 "the trace of $n with Python frames" || continue
        base=""; case $n in big-base-*) base=--baseline ;; esac
        say "trace of $n with Python frames (c=64, unique prompts; names the host's functions, its times are slowed)"
        # shellcheck disable=SC2086
        timeout -s INT 150 $AP -m bench.real.trace_rounds --url "$(url_of "$n")" --with-stack $base \
            --name "arrstack-$n-c64" --out "$R/traces" --concurrency 64 --steps "$ARRIVAL_STACK_STEPS" \
            --unique-prompts --input-len 256 --output-len 128 --warmup-s 8 --limit-s 120 2>&1 | tail -n 3
    done
    clocks_off
    ls -la "$R/traces"
}

upshift() {
    wait_ready 60 big-chain-triton || return 1
    enough 80 "upshift recovery" || return 0
    say "upshift recovery on big-chain-triton (the plain path's catch-up)"
    zero_step_of big-chain-triton > "$R/out/upshift-zero-step-before.json"
    # requests arrive halfway through the 0-step stretch (issue 36: no draft work on their prefill at
    # 0 steps; the catch-up makes their draft state on the resume), every prompt prefilled whole
    $AP -m bench.studies.upshift_recovery --url "$(url_of big-chain-triton)" --concurrency 8 --zero-s 6 \
        --arrivals "${UPSHIFT_ARRIVALS:-8}" --unique-prompts \
        --input-len 256 --output-len 2400 --json "$R/out/upshift-plain.json" 2>&1 | tail -n 40
    zero_step_of big-chain-triton | tee "$R/out/upshift-zero-step-after.json"
    say "the catch-up's counters before and after (catchups, catchup_tokens, catchups_skipped, errors)"
}

zero_step_of() {  # zero_step_of NAME: patch 03's read-back (adaptive_spec_live.zero_step) from /server_info
    python3 - "$(url_of "$1")" <<'PY'
import json, sys, urllib.request
info = json.load(urllib.request.urlopen(sys.argv[1] + "/server_info", timeout=10))
states = info.get("internal_states") or [{}]
print(json.dumps((states[0].get("adaptive_spec_live") or {}).get("zero_step"), indent=1))
PY
}

compare() {  # compare NAME BASE OUTFILE LEVELS OPTS: one comparison against a server without a drafter
    local n=$1 base=$2 out=$3 levels=$4 opts=$5
    say "bench compare $n vs $base at $levels ($opts) -> $out"
    echo "agent bench compare --url URL_OF_$n --baseline-url URL_OF_$base --concurrency $levels" \
        "--input-len $INPUT_LEN --output-len $OUTPUT_LEN $opts --json $out" > "$R/out/${out%.json}.cmd"
    local limit=$(($(left) - 15)); [ $limit -lt 60 ] && limit=60
    # shellcheck disable=SC2086
    timeout -s INT $limit $A bench compare --url "$(url_of "$n")" --baseline-url "$(url_of "$base")" \
        --concurrency "$levels" --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" $opts --json "$R/out/$out" \
        > "$R/out/${out%.json}.txt" 2>&1
    echo "  exit $?"; tail -n 24 "$R/out/${out%.json}.txt"
}

chain1() { wait_ready 60 big-chain-triton big-base-triton || return 1; clocks_on chain1
    compare big-chain-triton big-base-triton compare-chain-1.json "$LEVELS" "$BENCH_OPTS"; clocks_off; }
chain2() { wait_ready 60 big-chain-triton big-base-triton || return 1; clocks_on chain2
    compare big-chain-triton big-base-triton compare-chain-2.json "$LEVELS" "$CHAIN2_OPTS"; clocks_off; }
chain3() { wait_ready 60 big-chain-triton big-base-triton || return 1; clocks_on chain3
    compare big-chain-triton big-base-triton compare-chain-3.json "$LEVELS" "$CHAIN2_OPTS"; clocks_off
    repeat_report; }
repeat_report() {  # this session's runs against each other, then with the earlier session's run
    local runs=() f earlier=bench/results/real-h200-2026-12-03-big/compare-chain-1.json
    for f in "$R"/out/compare-chain-[123].json; do [ -f "$f" ] && runs+=("$f"); done
    [ ${#runs[@]} -ge 2 ] || { say "SKIPPED: fewer than two comparisons to hold against each other"; return 0; }
    say "the runs against each other (within 5 % per level and arm; interval coverage): ${runs[*]}"
    $AP -m bench.studies.bench_repeat --from "${runs[@]}" --max-diff 0.05 2>&1 | tee "$R/out/chain-repeat.txt" | tail -n 40
    if [ -f "$earlier" ] && [ ! -f "$R/out/compare-chain-1.json" ]; then
        say "with the earlier session's run ($earlier)"
        $AP -m bench.studies.bench_repeat --from "$earlier" "${runs[@]}" --max-diff 0.05 2>&1 |
            tee "$R/out/chain-repeat-with-earlier.txt" | tail -n 40
    fi
}
fa3() { wait_ready 60 big-chain-fa3 big-base-fa3 || return 1; clocks_on fa3
    compare big-chain-fa3 big-base-fa3 compare-fa3.json "$FA3_LEVELS" "$BENCH_OPTS"; clocks_off; }

ruled() {  # off vs no drafter, windows until the intervals are tight or the stage's time is spent
    local pair=${RULED_PAIR:-triton}
    wait_ready 60 "big-chain-$pair" "big-base-$pair" || return 1
    local budget=$(($(left) - 40))
    [ $budget -lt 90 ] && { say "SKIPPED (needs ~90 s, $(left) s left): the ruled comparison"; return 0; }
    clocks_on "ruled-$pair"
    compare "big-chain-$pair" "big-base-$pair" "compare-ruled-$pair.json" "$RULED_LEVELS" \
        "--arms off,baseline --until $RULED_UNTIL --budget $budget $RULED_OPTS"
    clocks_off
}

ramp() {
    wait_ready 60 big-chain-triton || return 1
    [ -f bench/studies/autopilot_ramp.py ] || { say "SKIPPED: bench/studies/autopilot_ramp.py is not in this tree"; return 0; }
    local from=""; [ -f "$R/out/compare-chain-1.json" ] && from="--compare $R/out/compare-chain-1.json"
    enough 120 "the autopilot ramp" || return 0
    clocks_on ramp
    say "the autopilot on the 1 -> 128 -> 1 ramp (triton, head q080)"
    # shellcheck disable=SC2086
    timeout -s INT $(($(left) - 15)) $AP -m bench.studies.autopilot_ramp --state-dir /tmp/st-big-chain-triton $from \
        ${RAMP_OPTS:-} --json "$R/out/autopilot-ramp.json" > "$R/out/autopilot-ramp.txt" 2>&1
    echo "  exit $?"; tail -n 30 "$R/out/autopilot-ramp.txt"; clocks_off
}

soak() {  # issue 46: off held for SOAK_S at SOAK_C, then the baseline, in the background
    local on="big-chain-$SOAK_PAIR" base="big-base-$SOAK_PAIR" pid
    wait_ready 60 "$on" "$base" || return 1
    if [ -f "$R/soak.pid" ] && kill -0 "$(cat "$R/soak.pid")" 2>/dev/null; then
        say "a soak runs already (pid $(cat "$R/soak.pid"), $(cat "$R/soak.name")): soakwait first"; return 1
    fi
    local name="soak-$SOAK_PAIR-c$SOAK_C"
    echo "python -m bench.real.soak --state-dir /tmp/st-$on --baseline-state-dir /tmp/st-$base" \
        "--concurrency $SOAK_C --duration-s $SOAK_S --input-len $INPUT_LEN --output-len $OUTPUT_LEN $SOAK_OPTS" \
        "--json $name.json" > "$R/out/$name.cmd"
    say "soak in the background: off on $on at c=$SOAK_C for $SOAK_S s, then $base ($SOAK_OPTS) -> out/$name.json"
    # shellcheck disable=SC2086
    setsid nohup $AP -m bench.real.soak --state-dir "/tmp/st-$on" --baseline-state-dir "/tmp/st-$base" \
        --concurrency "$SOAK_C" --duration-s "$SOAK_S" --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" \
        $SOAK_OPTS --json "$R/out/$name.json" > "$R/out/$name.txt" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$R/soak.pid"; echo "$name" > "$R/soak.name"
    local until=$((SECONDS + 40))  # its first windows, so that a bad start shows in this call
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $until ] && [ "$(left)" -gt 40 ]; do sleep 5; done
    if kill -0 "$pid" 2>/dev/null; then
        say "the soak runs (pid $pid); soakwait waits for it"; tail -n 4 "$R/out/$name.txt"
    else
        say "the soak ended already:"; tail -n 20 "$R/out/$name.txt"; rm -f "$R/soak.pid"; return 1
    fi
}

soakwait() {  # until the soak started by `soak` ends, or this command's time runs out (then call it again)
    [ -f "$R/soak.pid" ] || { say "no soak is running"; return 0; }
    local pid name
    pid=$(cat "$R/soak.pid"); name=$(cat "$R/soak.name")
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$(left)" -lt 45 ]; then
            say "the soak still runs (pid $pid): what it measured so far is collected; call soakwait again"
            tail -n 3 "$R/out/$name.txt"; return 0
        fi
        sleep 5
    done
    rm -f "$R/soak.pid"
    say "the soak ended: $name"
    tail -n 80 "$R/out/$name.txt"
}

collect() {
    say "collect"
    local all
    all=$(cd /tmp && ls -d st-big-* 2>/dev/null | sed 's/^st-//')  # every agent this host ran (fa3swap too)
    for n in ${all:-$STATES}; do
        mkdir -p "$R/logs/$n"
        tail -n 20000 "/tmp/st-$n/logs/engine.log" > "$R/logs/$n/engine-tail.log" 2>/dev/null  # $OUT: 16 MiB a file
        cp "$R/serve-$n.log" "$R/logs/$n/" 2>/dev/null
        $A status --state-dir "/tmp/st-$n" --json > "$R/logs/$n/status.json" 2>&1
        grep -h -B 2 -A 40 "Traceback" /tmp/st-$n/logs/engine.log* 2>/dev/null | head -n 400 > "$R/out/errors-$n.log"
        ls -la "/tmp/st-$n/logs/" > "$R/out/logs-list-$n.txt" 2>&1
        grep -h "Decode batch" "/tmp/st-$n/logs/engine.log" 2>/dev/null | tail -n 400 > "$R/out/decode-lines-$n.log"
        grep -h "k25 zero-step\|Built adaptive runtime state\|Capture cuda graph end\|Traceback\|Error" \
            "/tmp/st-$n/logs/engine.log" 2>/dev/null | tail -n 60 > "$R/out/startup-$n.log"
    done
    cp /tmp/models/big-chain/tiny-eagle3-*/k25-chain.json "$R/out/" 2>/dev/null
    for f in /tmp/models/big-chain/tiny-eagle3-*/k25-chain.json; do
        [ -f "$f" ] && cp "$f" "$R/out/$(basename "$(dirname "$f")")-chain.json"
    done
    tar -czf "$OUT/results.tgz" -C "$R" out
    tar -czf "$OUT/logs.tgz" -C "$R" logs
    # the traces one file each (gzip already; $OUT takes 8 files of 16 MiB, 64 MiB in all): newest first,
    # as many as fit beside the two archives; what is left behind is listed
    if [ -d "$R/traces" ]; then
        local f size total files=2
        total=$(( $(stat -c %s "$OUT/results.tgz") + $(stat -c %s "$OUT/logs.tgz") ))
        for f in $(ls -t "$R"/traces/*.trace.json.gz 2>/dev/null); do
            size=$(stat -c %s "$f")
            if [ $files -lt 8 ] && [ "$size" -lt 16000000 ] && [ $((total + size)) -lt 64000000 ]; then
                cp "$f" "$OUT/$(basename "$f" | tr -c 'A-Za-z0-9._\n-' '_')"; files=$((files + 1)); total=$((total + size))
            else
                echo "left on the host: $f ($size bytes)"
            fi
        done
    fi
    ls -la "$OUT"
}

# The stages run in a child bounded by STAGE_S, so that however long a stage waits, collect still runs
# and the command returns what it measured before the call's own limit (the agents are setsid: they live on).
if [ "${1:-}" = __stages ]; then
    shift
    for stage in "$@"; do
        [ "$stage" = collect ] && continue
        if ! "$stage" && [ "$stage" = setup ]; then
            say "setup failed: the later stages are skipped"; exit 1
        fi
    done
    exit 0
fi
STAGE_S=$((STAGE_S - 15)) timeout -s TERM -k 5 $((STAGE_S - 10)) bash "$0" __stages "$@"
rc=$?; [ $rc -ne 0 ] && say "stages ended with $rc (124: cut at the stage limit)"
collect
