"""What to run for a profile: the argv, environment and address of the engine process.

Both engines go through the same supervision code; only this step differs. The real engine is the
stack venv's own interpreter running SGLang with the argv rendered by ``agent.sglang.launch``; the
simulated engine is ``agent sim`` from this agent's interpreter on a free loopback port.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agent.engine.find import ENGINE_DIR_ENV
from agent.engine.record import EngineKind
from agent.profile import Profile, dump_profile
from agent.sglang.launch import LaunchError, read_env_files, render_launch, stack_environ, write_launch_files
from agent.sglang.redact import hidden_profile_toml


@dataclass(frozen=True)
class EngineSpec:
    kind: EngineKind
    argv: list[str]
    host: str
    port: int
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 60.0

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def free_loopback_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (tiny race until the engine binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_private(path: Path, text: str) -> Path:
    """Files the engine reads at start-up; 0600 because a profile may name key files and hosts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


def sim_spec(
    profile: Profile,
    run_dir: Path,
    *,
    speedup: float | None = None,
    draft_acceptance: str | None = None,
    drafter_change: str | None = None,
) -> EngineSpec:
    # The simulator reads its settings from the file; its environment comes from the process, so
    # the file keeps the env values hidden like every other copy the agent writes.
    profile_path = write_private(run_dir / "engine-profile.toml", hidden_profile_toml(dump_profile(profile)))
    port = free_loopback_port()
    argv = [sys.executable, "-m", "agent.cli.main", "sim", "--profile", str(profile_path)]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    if speedup is not None:
        argv += ["--speedup", repr(speedup)]
    if draft_acceptance is not None:
        argv += ["--draft-acceptance", draft_acceptance]
    if drafter_change is not None:
        argv += ["--drafter-change", drafter_change]
    if profile.server.api_key_file:
        argv += ["--api-key-file", str(Path(profile.server.api_key_file).expanduser())]
    env = {k: v for k, v in os.environ.items()}
    env.update(profile.server.env)
    try:
        env.update(read_env_files(profile.server.env_files))
    except LaunchError as exc:
        raise OSError(str(exc)) from None
    env[ENGINE_DIR_ENV] = str(run_dir)  # how an agent knows its engine without its record
    return EngineSpec(kind="sim", argv=argv, host="127.0.0.1", port=port, env=env)


def sglang_spec(profile: Profile, run_dir: Path) -> EngineSpec:
    """The real server: ``<stack venv>/bin/python`` + the rendered SGLang argv, never a shell string.

    Key files are read here, at launch, into a 0600 ``--config`` file (the SGLang surface's
    ``write_launch_files``), so keys never sit on a command line.
    """
    launch = render_launch(profile, run_dir)
    try:
        write_launch_files(launch)
        from_files = read_env_files(launch.env_files)
    except LaunchError as exc:
        raise OSError(str(exc)) from None
    python = Path(profile.stack.venv).expanduser() / "bin" / "python"
    env = stack_environ()  # never the agent's own PYTHONPATH: it would shadow the stack's packages
    env.update(launch.env)
    env.update(from_files)  # values from files: the engine's environment only, never its argv
    env[ENGINE_DIR_ENV] = str(run_dir)  # how an agent knows its engine without its record
    return EngineSpec(
        kind="sglang",
        argv=[str(python), *launch.argv],
        host=profile.server.host,
        port=profile.server.port,
        env=env,
        startup_timeout_s=3600.0,
    )
