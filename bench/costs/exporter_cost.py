"""What ``--metrics-listen`` costs the agent: per published snapshot, and per scrape.

Usage: python -m bench.costs.exporter_cost [--snapshots N] [--scrapes N] [--runs R]

What it runs: a real ``Daemon`` (not started: no engine) with the exporter attached, its stream fed
snapshots shaped like a busy TP-8 host (8 GPUs, three findings, speculation flipping every tenth
snapshot so switches are counted). It times ``StreamHub.publish_snapshot`` with and without the
exporter's listener (the difference is what the exporter adds to every telemetry tick), then a
scrape: ``generate_latest`` on the exporter's registry, which is what prometheus-client's HTTP thread
runs per request. CPU is ``time.process_time()``; each figure is the median of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from agent.profile import load_profile
from agent.serve.daemon import Daemon, ServeConfig
from agent.serve.exporter import AgentExporter
from agent.serve.paths import StatePaths
from agent.wire import Finding, Gpu, Gpus, Snapshot, Speculation
from bench import REPO

PROFILE = REPO / "profiles" / "kimi-k25-eagle3.toml"


def make_daemon(root: Path) -> Daemon:
    profile = load_profile(PROFILE)
    paths = StatePaths(root / "state").prepare()
    config = ServeConfig(
        profile=profile, profile_path=PROFILE, profiles_dir=PROFILE.parent, engine="sglang", paths=paths
    )
    daemon = Daemon(config, token="t" * 43)
    daemon.supervisor.profile = profile
    return daemon


def busy_snapshot(i: int) -> Snapshot:
    on = (i // 10) % 2 == 0
    gpus = Gpus(
        source="nvml",
        state="ok",
        devices=[
            Gpu(index=g, name="NVIDIA RTX PRO 6000", utilization_pct=97.0, memory_used_bytes=90 << 30,
                memory_total_bytes=96 << 30, power_w=580.0, power_limit_w=600.0, temperature_c=71.0,
                sm_clock_mhz=2400, mem_clock_mhz=14000, throttle_reasons=["sw_power_cap"])
            for g in range(8)
        ],
    )  # fmt: skip
    findings = [
        Finding(code=c, severity="warning", title=c, explanation="x" * 200, action="y" * 120)
        for c in ("queueing", "speculation_kv_share", "gpu_power_cap")
    ]
    spec = Speculation(
        configured=True, on=on, steps=3 if on else 0, threshold=64, threshold_available=True, pinned_steps=-1,
        topk=1, draft_tokens=4, accept_length=2.8 if on else None, off_reason=None if on else "above_threshold",
    )  # fmt: skip
    return Snapshot(seq=i, time=time.time(), speculation=spec, gpus=gpus, findings=findings)


def publish_cost(daemon: Daemon, snaps: list[Snapshot]) -> float:
    """CPU seconds per publish_snapshot."""
    start = time.process_time()
    for s in snaps:

        def numbered(seq: int, s: Snapshot = s) -> Snapshot:
            return s.model_copy(update={"seq": seq})

        daemon.hub.publish_snapshot(numbered)
    return (time.process_time() - start) / len(snaps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshots", type=int, default=2000)
    ap.add_argument("--scrapes", type=int, default=500)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    snaps = [busy_snapshot(i) for i in range(args.snapshots)]
    without, with_exporter, scrape = [], [], []
    page_bytes = 0
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            plain = make_daemon(Path(tmp) / f"plain{run}")
            without.append(publish_cost(plain, snaps))
            watched = make_daemon(Path(tmp) / f"watched{run}")
            exporter = AgentExporter()
            exporter.attach(watched)
            with_exporter.append(publish_cost(watched, snaps))
            registry = CollectorRegistry()
            registry.register(exporter)
            start = time.process_time()
            for _ in range(args.scrapes):
                page = generate_latest(registry)
            scrape.append((time.process_time() - start) / args.scrapes)
            page_bytes = len(page)
    base, watched_cost = statistics.median(without), statistics.median(with_exporter)
    print(f"publish_snapshot without the exporter: {base * 1e6:8.1f} µs CPU (median of {args.runs} runs)")
    print(f"publish_snapshot with the exporter:    {watched_cost * 1e6:8.1f} µs CPU")
    print(f"the exporter's listener adds:          {(watched_cost - base) * 1e6:8.1f} µs per telemetry tick")
    print(
        f"one scrape (generate_latest):          {statistics.median(scrape) * 1e3:8.2f} ms CPU, {page_bytes} bytes"
    )
    print(f"spread of the scrape figure:           {min(scrape) * 1e3:.2f}-{max(scrape) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
