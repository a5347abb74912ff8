"""The console over a fleet: CPU and tick lateness per host with 16 hosts (the goal: under 15 % of one
core, every host's ticks on time).

Three processes, so that the console's own cost is what is measured:

1. Replayed agents (``--serve``): N fake agents, one UNIX socket each, in one process. Each answers
   ``/v1/version`` and ``/v1/status`` and streams snapshots of the real agent on the sim
   (``tests/console/data/local-sim.jsonl``, each host from its own offset, padded to 8 GPUs as the
   target host has) every ``--tick`` seconds, stamped with the time it is sent and a fresh seq:
   real HTTP and server-sent events over real sockets, as ``agent serve`` streams them.
2. The console (``--console``): ``k25console --host NAME=SOCKET`` for every host, as an operator runs
   it, in a pseudo-terminal of --cols x --rows on the Fleet screen (all hosts' rows, painted on the
   App's cadence). It records, per host, each snapshot's arrival minus its tick time, and its seq.
3. This process reads the console's CPU time with psutil over --seconds after --warmup.

A tick is on time when it arrives within one tick interval of being sent; a host's ticks are on time
when none is missing (no seq gap) and its 99th percentile lateness is under one interval.

Usage: .venv/bin/python -m bench.costs.fleet_console [--hosts 16] [--seconds 30] [--tick 0.25]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from bench import REPO
from bench.kit.pty_child import spawn_in_pty

RECORDING = REPO / "tests" / "console" / "data" / "local-sim.jsonl"
ME = [sys.executable, "-m", "bench.costs.fleet_console"]
"""This script again, as a child (the replayed agents, the console), run from the repository root."""
GOAL_CPU_PCT = 15.0


# -- 1. replayed agents ------------------------------------------------------------------------------
def _snapshots() -> list[dict[str, Any]]:
    items = [json.loads(line) for line in RECORDING.read_text().splitlines() if line.strip()]
    snaps = [i["data"] for i in items if i.get("kind") == "snapshot" and i["data"]["engine_state"] == "ready"]
    for snap in snaps:  # the target host's eight GPUs
        devices = snap["gpus"]["devices"]
        if devices:
            snap["gpus"]["devices"] = [{**devices[i % len(devices)], "index": i} for i in range(8)]
    return snaps


def _agent_app(index: int, snaps: list[dict[str, Any]], tick_s: float) -> Any:
    status = {
        "profile": "local-sim", "profile_path": "/p", "engine_kind": "sim", "engine_state": "ready",
        "engine_url": f"http://10.0.0.{index}:30000", "last_seq": 0, "agent_pid": os.getpid(),
        "agent_version": "0.1.0", "started_at": time.time(), "tick_interval_s": tick_s, "state_dir": "/s",
    }  # fmt: skip

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/v1/stream":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
            seq, n = 1, index * 17
            next_at = time.monotonic()
            while True:
                snap = dict(snaps[n % len(snaps)], seq=seq, time=time.time())
                event = f"id: {seq}\nevent: snapshot\ndata: {json.dumps(snap, separators=(',', ':'))}\n\n"
                try:
                    await send({"type": "http.response.body", "body": event.encode(), "more_body": True})
                except OSError:
                    return
                seq, n = seq + 1, n + 1
                next_at += tick_s
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        answers: dict[str, Any] = {
            "/v1/version": {"agent_version": "0.1.0", "api_version": 1, "wire_version": 1},
            "/v1/status": status,
        }
        body = json.dumps(answers.get(path, {"detail": "not here"})).encode()
        await send({"type": "http.response.start", "status": 200 if path in answers else 404,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    return app


async def serve(root: Path, hosts: int, tick_s: float) -> None:
    import uvicorn

    snaps = _snapshots()
    servers = []
    for i in range(hosts):
        state = root / f"h{i:02d}"
        (state / "run").mkdir(parents=True, exist_ok=True)
        (state / "token").write_text("bench")
        config = uvicorn.Config(_agent_app(i, snaps, tick_s), uds=str(state / "run" / "agent.sock"),
                                log_level="warning", lifespan="off", access_log=False)  # fmt: skip
        servers.append(uvicorn.Server(config))
    await asyncio.gather(*(s.serve() for s in servers))


# -- 2. the console ----------------------------------------------------------------------------------
def run_console(root: Path, hosts: int, total_s: float, out: Path) -> None:
    import gc

    from agent.wire import Event, Snapshot
    from console.fleet.app import FleetApp
    from console.fleet.host import Host
    from console.fleet.hosts import HostTarget

    gc_pauses: list[tuple[float, int, float]] = []  # (when, generation, seconds)
    started: dict[int, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[info["generation"]] = time.perf_counter()
        else:
            gc_pauses.append(
                (time.time(), info["generation"], time.perf_counter() - started[info["generation"]])
            )

    gc.callbacks.append(on_gc)

    class Measured(FleetApp):
        def on_ready(self) -> None:
            self.set_timer(total_s, self.exit)
            self.arrivals: dict[str, list[tuple[float, float, int]]] = {n: [] for n in self.hosts}
            self.stalls: list[tuple[float, float]] = []
            self.run_worker(self._heartbeat(), exit_on_error=False)

        async def _heartbeat(self) -> None:
            """How long the loop was held: a 50 ms sleep that came back late."""
            while True:
                before = time.perf_counter()
                await asyncio.sleep(0.05)
                self.stalls.append((time.time(), time.perf_counter() - before - 0.05))

        def _host_arrived(self, host: Host, item: Snapshot | Event) -> None:
            super()._host_arrived(host, item)
            if isinstance(item, Snapshot):
                now = time.time()
                self.arrivals[host.name].append((now, now - item.time, item.seq))

    targets = [
        HostTarget(f"gpu-{i:02d}", None, root / f"h{i:02d}" / "run" / "agent.sock") for i in range(hosts)
    ]
    app = Measured(targets, operator="bench")
    app.run()
    out.write_text(json.dumps({"arrivals": app.arrivals, "stalls": app.stalls, "gc": gc_pauses}))


# -- 3. the measurement ------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=16)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--warmup", type=float, default=8.0)
    p.add_argument("--tick", type=float, default=0.25)
    p.add_argument("--cols", type=int, default=120)
    p.add_argument("--rows", type=int, default=40)
    p.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--console", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.serve, args.hosts, args.tick))
        return 0
    if args.console:
        run_console(args.console, args.hosts, args.warmup + args.seconds, args.out)
        return 0

    root = Path(tempfile.mkdtemp(prefix="k25fleet-"))
    me = ME
    server = subprocess.Popen([*me, "--serve", str(root), "--hosts", str(args.hosts), "--tick", str(args.tick)],
                              cwd=REPO, start_new_session=True)  # fmt: skip

    out = root / "arrivals.json"
    try:
        sockets = [root / f"h{i:02d}" / "run" / "agent.sock" for i in range(args.hosts)]
        deadline = time.monotonic() + 30
        while not all(s.exists() for s in sockets):
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the replayed agents did not start")
            time.sleep(0.1)
        console, done, _ = spawn_in_pty(
            [*me, "--console", str(root), "--hosts", str(args.hosts), "--out", str(out),
             "--seconds", str(args.seconds), "--warmup", str(args.warmup)],
            args.cols, args.rows, cwd=REPO,
        )  # fmt: skip
        proc = psutil.Process(console.pid)
        time.sleep(args.warmup)
        before, t0, w0 = proc.cpu_times(), time.monotonic(), time.time()
        time.sleep(args.seconds)
        after, t1, w1 = proc.cpu_times(), time.monotonic(), time.time()
        cpu = 100.0 * ((after.user - before.user) + (after.system - before.system)) / (t1 - t0)
        console.wait(timeout=60)
        done.set()
        measured = json.loads(out.read_text())
        arrivals: dict[str, list[list[float]]] = measured["arrivals"]
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    print(f"fleet console: {args.hosts} hosts, one snapshot every {args.tick:g} s each "
          f"({args.hosts / args.tick:.0f}/s in all), {args.cols}x{args.rows} pty, Fleet screen, "
          f"{args.seconds:g} s measured after {args.warmup:g} s")  # fmt: skip
    print(f"{'host':8} {'ticks':>6} {'gaps':>5} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'on time':>8}")
    all_on_time = True
    for name, rows in arrivals.items():
        window = [r for r in rows if w0 <= r[0] <= w1]
        seqs = [int(r[2]) for r in rows]
        gaps = sum(1 for a, b in itertools.pairwise(seqs) if b != a + 1)
        late = [r[1] * 1000 for r in window]
        if not late:
            print(f"{name:8} {0:>6} {gaps:>5}  no ticks in the window")
            all_on_time = False
            continue
        on_time = sum(1 for x in late if x < args.tick * 1000) / len(late)
        ok = gaps == 0 and percentile(late, 0.99) < args.tick * 1000
        all_on_time &= ok
        print(f"{name:8} {len(late):>6} {gaps:>5} {statistics.median(late):>7.1f} {percentile(late, 0.99):>7.1f} "
              f"{max(late):>7.1f} {on_time:>7.1%}{'' if ok else '  LATE'}")  # fmt: skip
    spells = sorted({round(r[0] - w0, 1) for rows in arrivals.values() for r in rows
                     if w0 <= r[0] <= w1 and r[1] >= args.tick})  # fmt: skip
    if spells:
        print(f"late ticks arrived at (s into the window): {', '.join(f'{t:g}' for t in spells[:20])}")
    stalls = [x for t, x in measured["stalls"] if w0 <= t <= w1]
    pauses = [(g, x) for t, g, x in measured["gc"] if w0 <= t <= w1]
    if stalls:
        print(f"the console's loop held: p99 {percentile(stalls, 0.99) * 1000:.0f} ms, longest "
              f"{max(stalls) * 1000:.0f} ms; garbage collections: {len(pauses)}, longest "
              f"{max((x for _, x in pauses), default=0) * 1000:.0f} ms; longest by generation "
              + ", ".join(f"{g}: {max((x for gg, x in pauses if gg == g), default=0) * 1000:.0f} ms "
                          f"({sum(1 for gg, _ in pauses if gg == g)})" for g in (0, 1, 2)))  # fmt: skip
    print(f"console CPU: {cpu:.1f} % of one core (goal < {GOAL_CPU_PCT:g} %); every host's ticks on time: "
          f"{'yes' if all_on_time else 'NO'}")  # fmt: skip
    return 0 if cpu < GOAL_CPU_PCT and all_on_time else 1


if __name__ == "__main__":
    sys.exit(main())
