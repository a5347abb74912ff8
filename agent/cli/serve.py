"""``agent serve``: the headless daemon (engine supervision, telemetry, control API)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from agent.cli.sim import drafter_change_arg
from agent.profile import ProfileError, load_profile

# Start-up cost: `agent` imports every command module to build its parser, so what only this
# command needs (FastAPI, uvicorn, httpx, the simulator, the daemon) is imported inside the
# function that runs it; `agent --help` and the other commands do not load it.


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the agent daemon: supervise the engine, sample telemetry, serve the control API",
        description="Run the agent daemon. It listens on a UNIX socket (default) or a loopback port, "
        "needs the bearer token from <state-dir>/token on every request, and leaves the engine "
        "running when it exits (unless stopped with `agent stop --engine-too`). With --metrics-listen "
        "it also serves its own Prometheus series (k25_*) on that address, read-only and without a token.",
    )
    p.add_argument("--profile", required=True, type=Path, help="the profile to launch (TOML)")
    p.add_argument(
        "--engine", choices=("sglang", "sim"), default="sglang", help="real SGLang or the simulator"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="UNIX socket path (default <state-dir>/run/agent.sock)")
    where.add_argument(
        "--listen", metavar="HOST:PORT", help="loopback TCP instead of a socket (127.0.0.1:PORT)"
    )
    p.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="serve the agent's Prometheus series (k25_*) at http://HOST:PORT/metrics; loopback only "
        "(127.0.0.1:PORT, [::1]:PORT) unless --metrics-listen-any",
    )
    p.add_argument(
        "--metrics-listen-any",
        action="store_true",
        help="allow --metrics-listen on an address that is not loopback (e.g. 0.0.0.0:9464): the page "
        "needs no token and holds nothing secret, but firewall it",
    )
    p.add_argument("--state-dir", type=Path, help="default $XDG_STATE_HOME/k25console")
    p.add_argument(
        "--profiles-dir",
        type=Path,
        help="profiles the API lists and saves (default: the --profile's directory)",
    )
    p.add_argument(
        "--gpus",
        choices=("auto", "nvml", "smi", "fixture", "sim", "none"),
        default="auto",
        help="where GPU readings come from; sim: a simulated 8-GPU host (the demo), labelled as simulated",
    )
    p.add_argument("--gpu-fixture", type=Path, help="an nvml*.json capture for --gpus fixture")
    p.add_argument(
        "--drain-timeout", type=float, default=60.0, metavar="S", help="drain before a stop/restart"
    )
    p.add_argument(
        "--restart-backoff", type=float, default=2.0, metavar="S", help="first restart delay, doubling"
    )
    p.add_argument("--restart-backoff-max", type=float, default=120.0, metavar="S")
    p.add_argument(
        "--crash-loop-limit", type=int, default=5, metavar="N", help="consecutive failures before giving up"
    )
    p.add_argument("--sim-speedup", type=float, help="passed to `agent sim --speedup`")
    p.add_argument(
        "--sim-draft-acceptance",
        choices=("calibrated", "oracle", "random"),
        help="passed to `agent sim --draft-acceptance`: the simulated drafter (oracle: every draft kept, "
        "random: none)",
    )
    p.add_argument(
        "--sim-drafter-change",
        type=drafter_change_arg,
        metavar="AFTER_S:NAME",
        help="passed to `agent sim --drafter-change`: the drafter changes while the engine runs, e.g. "
        "60:random (stops matching) or 60:oracle (a looping client)",
    )
    p.add_argument(
        "--router-url",
        metavar="URL",
        help="SGLang's router (smg) in front of this host and others, e.g. http://10.0.0.2:30000: "
        "GET /v1/router answers its view of its workers (the console's Fleet screen shows it)",
    )
    p.add_argument(
        "--router-metrics-url",
        metavar="URL",
        help="the router's metrics port (smg --prometheus-port, e.g. http://10.0.0.2:29000): adds each "
        "worker's circuit breaker to GET /v1/router (needs --router-url)",
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(handler=run)


def _is_http_url(url: str) -> bool:
    scheme, sep, rest = url.partition("://")
    return bool(sep) and scheme in ("http", "https") and bool(rest) and len(url) <= 2048 and url.isprintable()


def run(args: argparse.Namespace) -> int:
    from agent.api.run import serve
    from agent.api.transport import InstanceLock, bind_tcp, bind_unix
    from agent.cli.log_lines import setup_logging
    from agent.engine.policy import RestartPolicy
    from agent.serve.daemon import ServeConfig
    from agent.serve.exporter import AgentExporter
    from agent.serve.listen import ListenError, parse_listen
    from agent.serve.metrics_http import MetricsServer, parse_metrics_listen, start_metrics_server
    from agent.serve.paths import StatePaths, UnsafePathError, default_state_dir
    from agent.serve.token import load_or_create_token
    from agent.sglang.rules import check_profile, errors_of

    setup_logging(args.log_level)
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"agent serve: the profile is not valid:\n{exc}", file=sys.stderr)
        return 2
    errors = errors_of(check_profile(profile, str(args.profile)))
    if errors:
        print("agent serve: SGLang 0.5.23 would refuse this profile:", file=sys.stderr)
        for issue in errors:
            print(f"  {issue}", file=sys.stderr)
        return 2
    if args.engine == "sglang":
        from agent.install.stack_check import launch_problems

        changed = launch_problems(Path(profile.stack.venv))
        if changed:
            print(f"agent serve: the stack at {profile.stack.venv} is not as agent install left it; the "
                  "engine was not started:", *(f"  {p}" for p in changed), sep="\n", file=sys.stderr)  # fmt: skip
            return 2
    if args.crash_loop_limit < 1 or args.restart_backoff < 0 or args.drain_timeout < 0:
        print("agent serve: --crash-loop-limit must be >= 1, backoff and drain timeout >= 0", file=sys.stderr)
        return 2
    if args.gpus == "fixture" and args.gpu_fixture is None:
        print("agent serve: --gpus fixture needs --gpu-fixture FILE", file=sys.stderr)
        return 2
    if args.metrics_listen_any and not args.metrics_listen:
        print("agent serve: --metrics-listen-any needs --metrics-listen HOST:PORT", file=sys.stderr)
        return 2
    if args.router_url is not None and not _is_http_url(args.router_url):
        print(
            f"agent serve: --router-url {args.router_url!r} is not an http:// or https:// URL",
            file=sys.stderr,
        )
        return 2
    if args.router_metrics_url is not None and (
        args.router_url is None or not _is_http_url(args.router_metrics_url)
    ):
        why = "needs --router-url" if args.router_url is None else "is not an http:// or https:// URL"
        print(f"agent serve: --router-metrics-url {args.router_metrics_url!r} {why}", file=sys.stderr)
        return 2
    paths = StatePaths((args.state_dir or default_state_dir()).expanduser().absolute())
    lock = InstanceLock(paths.lock)
    metrics: MetricsServer | None = None
    try:
        metrics_at = (
            parse_metrics_listen(args.metrics_listen, allow_any=args.metrics_listen_any)
            if args.metrics_listen
            else None
        )
        paths.prepare()
        lock.acquire()
        token = load_or_create_token(paths.token)
        if args.listen:
            host, port = parse_listen(args.listen)
            sock, socket_path = bind_tcp(host, port), None
        else:
            socket_path = (args.socket or paths.socket).expanduser().absolute()
            sock = bind_unix(socket_path)
        if metrics_at is not None:
            try:
                metrics = start_metrics_server(*metrics_at, AgentExporter())
            except ListenError:
                sock.close()
                if socket_path is not None:
                    socket_path.unlink(missing_ok=True)
                raise
    except (ListenError, UnsafePathError, OSError) as exc:
        print(f"agent serve: {exc}", file=sys.stderr)
        lock.release()
        return 2
    config = ServeConfig(
        profile=profile,
        profile_path=args.profile.absolute(),
        profiles_dir=(args.profiles_dir or args.profile.parent).absolute(),
        engine=args.engine,
        paths=paths,
        policy=RestartPolicy(
            backoff_initial_s=args.restart_backoff,
            backoff_max_s=args.restart_backoff_max,
            crash_loop_limit=args.crash_loop_limit,
        ),
        drain_timeout_s=args.drain_timeout,
        gpus=args.gpus,
        gpu_fixture=args.gpu_fixture,
        sim_speedup=args.sim_speedup,
        sim_draft_acceptance=args.sim_draft_acceptance,
        sim_drafter_change=None if args.sim_drafter_change is None else str(args.sim_drafter_change),
        router_url=args.router_url,
        router_metrics_url=args.router_metrics_url,
    )
    try:
        return asyncio.run(serve(config, token, sock, socket_path, metrics.exporter if metrics else None))
    finally:
        if metrics is not None:
            metrics.close()
        lock.release()
