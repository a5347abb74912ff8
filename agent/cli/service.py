"""``agent service install|uninstall``: the agent as a systemd unit (written here, enabled by you)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "service",
        help="write or remove the systemd unit that runs `agent serve`",
        description="Run the agent under systemd. `install` checks the profile, writes the unit "
        "(Restart=on-failure, KillMode=process so the engine outlives an agent restart, the state "
        "directory and the profile; no secrets) atomically and prints the systemctl commands to enable "
        "it; `uninstall` removes a unit it wrote. Neither calls systemctl itself.",
    )
    sub = p.add_subparsers(dest="service_command", metavar="ACTION", required=True)

    inst = sub.add_parser(
        "install",
        help="write the unit for a profile",
        description="Write k25console-agent.service for PROFILE: a system unit in /etc/systemd/system "
        "(needs root; the agent runs as --run-as USER, default the user behind sudo) or, with --user, "
        "a user unit in ~/.config/systemd/user. A unit already there that this command did not write "
        "is left alone (error); one it wrote is replaced.",
    )
    inst.add_argument("--profile", required=True, type=Path, help="the profile the agent serves (TOML)")
    _scope_args(inst)
    inst.add_argument("--engine", choices=("sglang", "sim"), default="sglang", help="passed to `agent serve`")
    inst.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="passed to `agent serve` (loopback only unless --metrics-listen-any)",
    )
    inst.add_argument("--metrics-listen-any", action="store_true", help="passed to `agent serve`")
    inst.add_argument(
        "--state-dir",
        type=Path,
        help="the agent's state directory (default: the default of the user it runs as, "
        "~/.local/state/k25console, where the console and `agent status` look)",
    )
    inst.add_argument("--run-as", metavar="USER", help="system unit: the account to run the agent as (User=)")
    inst.add_argument(
        "--dry-run", action="store_true", help="print the unit and where it would go; write nothing"
    )
    inst.set_defaults(handler=run_install)

    uninst = sub.add_parser(
        "uninstall",
        help="remove the unit `agent service install` wrote",
        description="Remove k25console-agent.service if `agent service install` wrote it and it is not "
        "enabled (disable it first). The agent and the engine are not stopped.",
    )
    _scope_args(uninst)
    uninst.set_defaults(handler=run_uninstall)


def _scope_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", action="store_true", help="a user unit (systemctl --user), not a system unit")
    p.add_argument(
        "--unit-dir",
        type=Path,
        help="the unit directory (default /etc/systemd/system, or ~/.config/systemd/user with --user)",
    )


def _systemctl(user: bool) -> str:
    return "systemctl --user" if user else "sudo systemctl"


def run_install(args: argparse.Namespace) -> int:
    from agent.service.install import InstallRequest, ServiceError, install, render_for
    from agent.service.unit import UNIT_NAME

    request = InstallRequest(
        profile=args.profile,
        user_unit=args.user,
        engine=args.engine,
        metrics_listen=args.metrics_listen,
        metrics_listen_any=args.metrics_listen_any,
        state_dir=args.state_dir,
        run_as=args.run_as,
        unit_dir=args.unit_dir,
    )
    try:
        rendered = render_for(request)
        if args.dry_run:
            print(f"# {rendered.path} (not written: --dry-run)")
            print(rendered.text, end="")
            return 0
        changed = install(rendered)
    except ServiceError as exc:
        print(f"agent service install: {exc}", file=sys.stderr)
        return 2
    print(f"{'wrote' if changed else 'unchanged'}: {rendered.path}")
    systemctl = _systemctl(args.user)
    print("enable and start it with:")
    print(f"  {systemctl} daemon-reload")
    print(f"  {systemctl} enable --now {UNIT_NAME}")
    print(f"follow it with: {'journalctl --user' if args.user else 'sudo journalctl'} -u {UNIT_NAME} -f")
    if args.user:
        print("to keep it running while you are logged out: loginctl enable-linger")
    return 0


def run_uninstall(args: argparse.Namespace) -> int:
    from agent.service.install import ServiceError, uninstall, unit_path

    path = unit_path(user_unit=args.user, unit_dir=args.unit_dir)
    systemctl = _systemctl(args.user)
    try:
        removed = uninstall(path, systemctl)
    except ServiceError as exc:
        print(f"agent service uninstall: {exc}", file=sys.stderr)
        return 2
    if not removed:
        print(f"no unit at {path}; nothing to remove")
        return 0
    print(f"removed: {path}")
    print(f"then: {systemctl} daemon-reload")
    return 0
