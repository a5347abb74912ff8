"""``agent doctor``: check this host (or a saved capture of one) against a profile; exit 1 when it does not fit."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agent.install.doctor import (
    SMI_CC_QUERY,
    fill_compute_capability,
    fits,
    real_probe,
    render_table,
    run_checks,
    to_json,
)
from agent.profile.schema import Profile
from agent.profile.store import ProfileError, load_profile
from agent.telemetry.facts import HostGpuFacts, facts_from_smi_q, gpu_host_facts, run_smi
from agent.telemetry.nvml import FixtureSampler


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the host's GPUs, driver, disk, paths and settings against a profile",
        description=__doc__,
    )
    parser.add_argument("--profile", help="profile TOML file (without it: the host's facts only)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--facts-from",
        metavar="FILE",
        help="use a saved capture instead of this host's GPUs: an NVML capture (*.json) or `nvidia-smi -q` text",
    )
    parser.add_argument(
        "--topo", metavar="FILE", help="saved `nvidia-smi topo -m` text to go with --facts-from"
    )
    parser.set_defaults(handler=run)


def gather_facts(facts_from: str | None, topo: str | None) -> HostGpuFacts:
    topo_text = Path(topo).read_text() if topo else None
    if facts_from is None:
        facts = gpu_host_facts(topo_text=topo_text)
        if facts.state == "ok" and any(g.compute_capability is None for g in facts.gpus):
            csv_text = run_smi(SMI_CC_QUERY)
            if csv_text:
                facts = fill_compute_capability(facts, csv_text)
        return facts
    path = Path(facts_from)
    if path.suffix == ".json":
        return gpu_host_facts(FixtureSampler(path), topo_text=topo_text, use_nvidia_smi=False)
    return facts_from_smi_q(path.read_text(), topo_text)


def run(args: argparse.Namespace) -> int:
    profile: Profile | None = None
    if args.profile:
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            print(f"agent doctor: the profile is not valid:\n{exc}", file=sys.stderr)
            return 2
    try:
        facts = gather_facts(args.facts_from, args.topo)
    except (OSError, ValueError) as exc:
        print(f"agent doctor: cannot read {args.facts_from or args.topo}: {exc}", file=sys.stderr)
        return 2
    checks = run_checks(facts, profile, real_probe())
    if args.json:
        print(json.dumps(to_json(checks, facts), indent=2))
    else:
        against = f" against profile {profile.identity.name}" if profile else ""
        if args.facts_from:
            title = f"agent doctor: GPUs from {args.facts_from}, disk/paths/python of this machine{against}"
        else:
            title = f"agent doctor: this host ({facts.source}){against}"
        print(render_table(checks, title))
    return 0 if fits(checks) else 1
