"""`k25console`: pick a link from the arguments, run the app, and clean up whatever the demo started."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.profile import ProfileError, load_profile
from console.link import Link
from console.link.local import LocalLink, default_socket_path
from console.link.recording import RecordingLink
from console.link.replay import ReplayLink
from console.link.ssh import SshLink, SshTarget

if TYPE_CHECKING:
    from console.demo.fleet import FleetDemo
    from console.demo.stack import DemoStack
    from console.fleet.hosts import HostTarget

THEME_CHOICES = ("dark", "light", "high-contrast")
"""console.theme.THEMES' names, spelled here so that --help and argument errors need no Textual."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="k25console",
        description="Operations console for Kimi K2.5 on SGLang with EAGLE-3: watch, tune, benchmark.",
        epilog="Examples: k25console --demo | k25console gpu-box | k25console ops@10.0.0.5 -p 2222 -J bastion",
    )
    parser.add_argument("target", nargs="?", help="SSH destination: user@host or a Host from ~/.ssh/config")
    parser.add_argument(
        "--host",
        action="append",
        metavar="[NAME=]DEST",
        help="a host of a fleet, given once per host: user@host, ssh://user@host:port/path/to/agent.sock or "
        "a local agent's socket path; two or more open the Fleet screen (-i, -J, --known-hosts apply to each)",
    )
    parser.add_argument(
        "--hosts-file",
        type=Path,
        help="the fleet's hosts (TOML, [[host]] tables; default $XDG_CONFIG_HOME/k25console/hosts.toml, "
        "read when no target is given)",
    )
    parser.add_argument("--profile", help="a profile name or .toml path; its [host] section gives the target")
    parser.add_argument(
        "--demo", action="store_true", help="run a local agent on the simulated engine, with traffic"
    )
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="with --demo: three simulated hosts behind SGLang's real router (smg), traffic through it",
    )
    parser.add_argument(
        "--demo-drafter",
        metavar="AFTER_S:NAME",
        help="with --demo: the simulated drafter changes after AFTER_S seconds, e.g. 60:random (it stops "
        "matching: acceptance collapses, drafts are wasted) or 60:oracle (a looping client); the "
        "Overview's findings say so (docs/sim.md)",
    )
    parser.add_argument(
        "--socket", type=Path, help="the local agent's UNIX socket (default: the agent's own)"
    )
    parser.add_argument(
        "--token-file", type=Path, help="the local agent's token (default: beside the socket)"
    )
    parser.add_argument("--readonly", action="store_true", help="watch only: every control is greyed")
    parser.add_argument(
        "--fleet-changes",
        action="store_true",
        help="print the last fleet changes made from this machine, every host each was meant for with its "
        "plan and outcome (reached or not), then exit",
    )
    parser.add_argument(
        "--theme",
        choices=THEME_CHOICES,
        default="dark",
        help="colours: dark (default), light, or high-contrast; the palette (ctrl+p, Theme) switches live",
    )
    parser.add_argument("-p", "--port", type=int, help="SSH port")
    parser.add_argument("-i", "--identity", help="SSH identity file")
    parser.add_argument("-J", "--jump", help="SSH jump host (user@host[:port])")
    parser.add_argument("--known-hosts", help="known_hosts file to check the host key against")
    parser.add_argument("--remote-state-dir", help="the agent's state directory on the host")
    parser.add_argument("--replay", type=Path, help="play a recording (JSON lines) instead of connecting")
    parser.add_argument("--replay-speed", type=float, default=1.0, help="1 = recorded pace, 0 = all at once")
    parser.add_argument("--record", type=Path, help="append every snapshot and event received to this file")
    return parser


def _ssh_target(args: argparse.Namespace) -> SshTarget | None:
    destination, port, identity, jump = args.target, args.port, args.identity, args.jump
    if args.profile:
        from console.demo.profiles import find_profile

        host = load_profile(find_profile(args.profile)).host
        destination = destination or host.destination or None
        port, identity, jump = port or host.port, identity or host.identity_file, jump or host.jump_host
    if not destination:
        return None
    return SshTarget(
        destination,
        port=port,
        identity_file=identity,
        jump_host=jump,
        known_hosts=args.known_hosts,
        remote_state_dir=args.remote_state_dir,
    )


def fleet_targets(args: argparse.Namespace) -> list[HostTarget]:
    """The hosts given by --host, by --hosts-file, or by the default hosts file when nothing else
    names a target; empty: the single-host console as before."""
    from console.fleet.hosts import default_hosts_file, load_hosts_file, target_of_spec, unique

    if args.host:
        if args.target or args.socket or args.replay or args.hosts_file:
            raise ValueError(
                "--host names the hosts itself: give no target, --socket, --replay or --hosts-file"
            )
        common: dict[str, object] = {
            "port": args.port,
            "identity_file": args.identity,
            "jump_host": args.jump,
            "known_hosts": args.known_hosts,
        }
        return unique([target_of_spec(spec, common) for spec in args.host], "--host")
    if args.hosts_file:
        return load_hosts_file(args.hosts_file, args.known_hosts)
    quiet = not (args.target or args.socket or args.replay or args.profile or args.demo)
    if quiet and default_hosts_file().is_file():
        return load_hosts_file(default_hosts_file(), args.known_hosts)
    return []


def make_link(args: argparse.Namespace) -> Link:
    if args.replay:
        return ReplayLink(args.replay, speed=args.replay_speed)
    target = _ssh_target(args)
    if target is not None:
        return SshLink(target)
    return LocalLink(args.socket or default_socket_path(), args.token_file)


def _hung_up(demo: DemoStack) -> None:
    """The terminal is gone: there is no screen to restore, and Textual's input thread may spin on the
    dead terminal, so stop the demo's processes here and leave at once."""
    demo.stop()
    os._exit(129)


def _fleet_hung_up(demo: FleetDemo) -> None:
    demo.stop()
    os._exit(129)


def run_fleet_demo(args: argparse.Namespace) -> int:
    """Three simulated hosts behind SGLang's router, each with its own agent, and the Fleet screen."""
    from console.demo.fleet import FleetDemo
    from console.fleet.app import FleetApp
    from console.fleet.hosts import HostTarget

    demo = FleetDemo()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *_: _fleet_hung_up(demo))
    try:
        demo.start()
        targets = [HostTarget(name, None, sock, url) for name, sock, url in demo.hosts()]
        FleetApp(targets, readonly=args.readonly, theme=args.theme).run()
    finally:
        demo.stop()
    return 0


def print_fleet_changes() -> int:
    """The console's own account of the last fleet changes (``console.fleet.ledger``)."""
    from console.fleet.ledger import ChangesFile, account_words, default_changes_file

    path = default_changes_file()
    changes = ChangesFile(path).changes()
    if not changes:
        print(f"no fleet change is recorded in {path}")
    for account in changes:
        print("\n".join(account_words(account)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.fleet_changes:
        return print_fleet_changes()
    from console.app import ConsoleApp  # after argument errors, which need no Textual
    from console.demo.stack import DemoError, DemoStack

    demo: DemoStack | None = None
    if args.fleet and not args.demo:
        print(
            "k25console: --fleet goes with --demo (a fleet of your own: --host or a hosts file)",
            file=sys.stderr,
        )
        return 2
    if args.demo_drafter and (not args.demo or args.fleet):
        print("k25console: --demo-drafter goes with --demo (one host)", file=sys.stderr)
        return 2
    try:
        if args.demo and args.fleet:
            return run_fleet_demo(args)
        targets = fleet_targets(args)
        if len(targets) > 1:
            from console.fleet.app import FleetApp

            FleetApp(targets, readonly=args.readonly, theme=args.theme).run()
            return 0
        if targets:
            link: Link = targets[0].link()
            if args.record:
                link = RecordingLink(link, args.record)
            ConsoleApp(link, readonly=args.readonly, theme=args.theme).run()
            return 0
        if args.demo:
            drafter = ["--sim-drafter-change", args.demo_drafter] if args.demo_drafter else None
            demo = DemoStack(agent_args=drafter)
            # A kill or a closed terminal must still stop the demo's processes (the guard covers SIGKILL).
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
            signal.signal(signal.SIGHUP, lambda *_: _hung_up(demo))
            demo.start()
            link = LocalLink(demo.socket_path, demo.token_path)
        else:
            link = make_link(args)
        if args.record:
            link = RecordingLink(link, args.record)
        ConsoleApp(link, readonly=args.readonly, theme=args.theme).run()
    except (ProfileError, FileNotFoundError, ValueError, DemoError) as exc:
        print(f"k25console: {exc}", file=sys.stderr)
        return 2
    finally:
        if demo is not None:
            demo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
