"""Soak: the console and the agent run together for N minutes under the demo traffic; memory and errors.

Usage: python -m bench.costs.soak [--minutes 10] [--speedup 10] [--peak 250] [--period 240]
                                  [--sample-every 5] [--switch-every 10] [--json FILE]


What it runs, all as separate processes so each one's memory is its own:
- ``agent serve --engine sim --sim-speedup X`` on a private socket (the simulated engine is a child
  process of its own, also sampled);
- the demo traffic (``python -m console.demo.traffic``): streaming chat requests whose concurrency
  ramps 1 -> peak -> 1 every period;
- the console: the real Textual app, headless (``App.run_test``) on a local link to that socket,
  mounting every screen once, then moving to the next one every ``--switch-every`` seconds so each
  one paints from a full model (``--console-child``, this same module).

Every ``--sample-every`` seconds it reads each process's RSS (psutil). At the end it prints, per
process, RSS at start (after a warm-up of 20% of the run, at least 10 s), at the end and at peak,
and the growth after warm-up; and the number of ERROR/CRITICAL lines and tracebacks in the agent's
log, the errors the console met (exceptions, link drops, error notifications), and how many
snapshots the console received. Exit status 0 means nothing was logged as an error and every
process was still running at the end; the memory figures are for the reader (and test_soak.py)
to judge against a bound.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench import REPO

MIB = 1024 * 1024
ERROR_LINE = re.compile(r"\b(ERROR|CRITICAL)\b|Traceback \(most recent call last\)")
SCREENS = ("overview", "kv", "gpus", "controls", "bench", "profiles", "logs")


# -- the console, headless, in its own process ------------------------------------------------------


async def console_child(socket_path: Path, seconds: float, report: Path, switch_every_s: float) -> int:
    """Run the real app on a local link for ``seconds``; write what it saw to ``report`` as it goes.

    Every screen is mounted once in the first seconds (part of the warm-up), then the app moves to
    the next screen every ``switch_every_s``, as an operator looking around would."""
    from console.app import ConsoleApp
    from console.link.local import LocalLink

    app = ConsoleApp(LocalLink(socket_path), operator="soak", readonly=True)
    errors: list[str] = []
    drops = 0
    was_connected = False
    started = time.monotonic()

    def write(final: bool) -> None:
        data = {
            "snapshots_received": app.model.version,
            "snapshots_held": len(app.model.snapshots),
            "events_held": len(app.model.events),
            "last_seq": app.model.last_seq,
            "link": app.model.link.state,
            "link_message": app.model.link.message,
            "drops": drops,
            "errors": errors[-20:],
            "error_count": len(errors),
            "final": final,
        }
        tmp = report.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(report)

    original_notify = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("severity") == "error":
            errors.append(f"notification: {message}")
        original_notify(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        for mode in SCREENS:
            await asyncio.sleep(1.0)
            app.action_show(mode)
            await pilot.pause()
        screen_index = 0
        switched_at = time.monotonic()
        while time.monotonic() - started < seconds:
            await asyncio.sleep(1.0)
            state = app.model.link.state
            if state == "connected":
                was_connected = True
            elif was_connected:
                drops += 1
                was_connected = False
                errors.append(f"link {state}: {app.model.link.message}")
            if time.monotonic() - switched_at >= switch_every_s:
                screen_index = (screen_index + 1) % len(SCREENS)
                app.action_show(SCREENS[screen_index])
                switched_at = time.monotonic()
            await pilot.pause()
            write(final=False)
    write(final=True)
    return 0


# -- the parent: start, sample, stop, report ----------------------------------------------------------


@dataclass
class Series:
    name: str
    pid: int | None = None
    rss: list[tuple[float, int]] = field(default_factory=list)
    alive_at_end: bool = False

    def sample(self, elapsed: float) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(psutil.Error):
            self.rss.append((elapsed, psutil.Process(self.pid).memory_info().rss))

    def summary(self, warmup_s: float) -> dict[str, Any]:
        if not self.rss:
            return {"name": self.name, "pid": self.pid, "samples": 0, "alive_at_end": self.alive_at_end}
        after = [v for t, v in self.rss if t >= warmup_s] or [self.rss[-1][1]]
        return {
            "name": self.name,
            "pid": self.pid,
            "samples": len(self.rss),
            "first_mib": round(self.rss[0][1] / MIB, 1),
            "start_mib": round(after[0] / MIB, 1),
            "end_mib": round(self.rss[-1][1] / MIB, 1),
            "peak_mib": round(max(v for _, v in self.rss) / MIB, 1),
            "growth_after_warmup_mib": round((after[-1] - after[0]) / MIB, 1),
            "peak_growth_after_warmup_mib": round((max(after) - after[0]) / MIB, 1),
            "alive_at_end": self.alive_at_end,
        }


def _spawn(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
            env=env,
        )


def _agent_get(socket_path: Path, token_path: Path, path: str) -> Any:
    token = token_path.read_text().strip()
    with httpx.Client(
        transport=httpx.HTTPTransport(uds=str(socket_path)),
        base_url="http://agent",
        headers={"Authorization": f"Bearer {token}"},
        timeout=5,
    ) as client:
        response = client.get(path)
        response.raise_for_status()
        return response.json()


def _wait_ready(
    agent: subprocess.Popen[bytes], socket_path: Path, token_path: Path, log: Path
) -> dict[str, Any]:
    """Poll until the agent answers and its engine is ready (another process: nothing to await)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if agent.poll() is not None:
            raise RuntimeError(f"agent exited with {agent.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError, httpx.HTTPError, ValueError):
            status: dict[str, Any] = _agent_get(socket_path, token_path, "/v1/status")
            if status.get("engine_state") == "ready":
                return status
        time.sleep(0.2)
    raise RuntimeError(f"the agent's engine was not ready in 90 s: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def _count_errors(text: str) -> tuple[int, list[str]]:
    lines = [line for line in text.splitlines() if ERROR_LINE.search(line)]
    return len(lines), lines[:10]


@contextlib.contextmanager
def _workdir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="k25soak-", dir="/tmp"))  # short: AF_UNIX paths <= 107 bytes
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def soak(
    minutes: float,
    speedup: float,
    peak: int,
    period_s: float,
    sample_every_s: float,
    switch_every_s: float = 10.0,
) -> dict[str, Any]:
    seconds = minutes * 60.0
    warmup_s = max(15.0, 0.2 * seconds)
    with _workdir() as root:
        profiles = root / "profiles"
        profiles.mkdir()
        for shipped in (REPO / "profiles").glob("*.toml"):
            shutil.copy(shipped, profiles / shipped.name)
        state = root / "state"
        socket_path, token_path = state / "run" / "agent.sock", state / "token"
        agent_log, traffic_log, console_log = root / "agent.log", root / "traffic.log", root / "console.log"
        report = root / "console.json"
        agent = traffic = console = None
        engine_pid: int | None = None
        try:
            agent = _spawn(
                [
                    sys.executable, "-m", "agent.cli.main", "serve", "--engine", "sim",
                    "--profile", str(profiles / "local-sim.toml"), "--profiles-dir", str(profiles),
                    "--state-dir", str(state), "--gpus", "none", "--sim-speedup", repr(speedup),
                ],
                agent_log,
            )  # fmt: skip
            status = _wait_ready(agent, socket_path, token_path, agent_log)
            engine_pid = status.get("engine_pid")
            traffic = _spawn(
                [
                    sys.executable, "-m", "console.demo.traffic", "--socket", str(socket_path),
                    "--token-file", str(token_path), "--peak", str(peak), "--period", str(period_s),
                    "--parent", str(os.getpid()),
                ],
                traffic_log,
            )  # fmt: skip
            console = _spawn(
                [
                    sys.executable, "-m", "bench.costs.soak", "--console-child",

                    "--socket", str(socket_path), "--seconds", str(seconds), "--report", str(report),
                    "--switch-every", str(switch_every_s),
                ],
                console_log,
                env={**os.environ, "TEXTUAL": "", "PYTHONPATH": str(REPO)},
            )  # fmt: skip
            series = [
                Series("agent", agent.pid),
                Series("engine (sim)", engine_pid),
                Series("console", console.pid),
            ]
            started = time.monotonic()
            next_sample = started
            while console.poll() is None and time.monotonic() - started < seconds + 60:
                now = time.monotonic()
                if now >= next_sample:
                    for s in series:
                        s.sample(now - started)
                    next_sample += sample_every_s
                time.sleep(min(0.5, max(0.0, next_sample - time.monotonic())))
            elapsed = time.monotonic() - started
            final_status = _agent_get(socket_path, token_path, "/v1/status")
            for s in series:
                s.alive_at_end = s.pid is not None and psutil.pid_exists(s.pid)
            series[2].alive_at_end = console.returncode == 0
            series[1].alive_at_end = (
                final_status.get("engine_pid") == engine_pid and final_status.get("engine_state") == "ready"
            )
        finally:
            _stop(console)
            _stop(traffic)
            if agent is not None and agent.poll() is None:
                with contextlib.suppress(OSError, httpx.HTTPError):
                    token = token_path.read_text().strip()
                    with httpx.Client(
                        transport=httpx.HTTPTransport(uds=str(socket_path)),
                        base_url="http://agent",
                        headers={"Authorization": f"Bearer {token}"},
                        timeout=5,
                    ) as client:
                        client.post("/v1/agent/stop", json={"engine_too": True})
                with contextlib.suppress(subprocess.TimeoutExpired):
                    agent.wait(timeout=15)
            _stop(agent)
            if engine_pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(engine_pid, signal.SIGKILL)
        agent_errors, agent_error_lines = _count_errors(agent_log.read_text(errors="replace"))
        engine_log = state / "logs" / "engine.log"
        engine_errors, engine_error_lines = _count_errors(
            engine_log.read_text(errors="replace") if engine_log.exists() else ""
        )
        console_stderr_errors, console_error_lines = _count_errors(console_log.read_text(errors="replace"))
        seen = json.loads(report.read_text()) if report.exists() else {}
        return {
            "minutes": minutes,
            "seconds_run": round(elapsed, 1),
            "speedup": speedup,
            "peak_concurrency": peak,
            "period_s": period_s,
            "switch_every_s": switch_every_s,
            "warmup_s": warmup_s,
            "processes": [s.summary(warmup_s) for s in series],
            "agent_error_lines": agent_errors,
            "agent_error_examples": agent_error_lines,
            "engine_error_lines": engine_errors,
            "engine_error_examples": engine_error_lines,
            "console_error_lines": console_stderr_errors + int(seen.get("error_count", 0)),
            "console_error_examples": console_error_lines + list(seen.get("errors", [])),
            "console": seen,
            "agent_last_seq": final_status.get("last_seq"),
            "engine_restarts": final_status.get("engine_restarts"),
        }


def print_report(result: dict[str, Any]) -> None:
    print(
        f"soak: {result['seconds_run']} s (sim speedup {result['speedup']}, demo traffic peak "
        f"{result['peak_concurrency']} every {result['period_s']} s, console switches screen every "
        f"{result['switch_every_s']} s), warm-up {result['warmup_s']:.0f} s"
    )
    print(
        f"{'process':<14}{'first':>9}{'start':>9}{'end':>9}{'peak':>9}{'growth':>9}  MiB RSS (start = after warm-up)"
    )
    for p in result["processes"]:
        if not p.get("samples"):
            print(f"{p['name']:<14} no samples")
            continue
        print(
            f"{p['name']:<14}{p['first_mib']:>9}{p['start_mib']:>9}{p['end_mib']:>9}{p['peak_mib']:>9}"
            f"{p['growth_after_warmup_mib']:>+9}  {'alive' if p['alive_at_end'] else 'NOT RUNNING at the end'}"
        )
    console = result["console"]
    print(
        f"console: {console.get('snapshots_received', 0)} items received, {console.get('snapshots_held', 0)} "
        f"snapshots held, link {console.get('link')}, {console.get('drops', 0)} drops"
    )
    print(
        f"errors logged: agent {result['agent_error_lines']}, engine {result['engine_error_lines']}, "
        f"console {result['console_error_lines']}; engine restarts {result['engine_restarts']}"
    )
    for key in ("agent_error_examples", "engine_error_examples", "console_error_examples"):
        for line in result[key][:5]:
            print(f"  {key.split('_')[0]}: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--speedup", type=float, default=10.0, help="simulated engine speed-up")
    parser.add_argument("--peak", type=int, default=250, help="demo traffic peak concurrency")
    parser.add_argument("--period", type=float, default=240.0, help="demo traffic ramp period, s")
    parser.add_argument("--sample-every", type=float, default=5.0, help="RSS sampling interval, s")
    parser.add_argument(
        "--switch-every", type=float, default=10.0, help="the console moves to the next screen this often, s"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--console-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--socket", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.console_child:
        return asyncio.run(console_child(args.socket, args.seconds, args.report, args.switch_every))
    result = soak(args.minutes, args.speedup, args.peak, args.period, args.sample_every, args.switch_every)
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    healthy = (
        all(p.get("alive_at_end") for p in result["processes"])
        and result["agent_error_lines"] == 0
        and result["console_error_lines"] == 0
    )
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
