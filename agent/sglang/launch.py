"""Profile → how to start SGLang 0.5.23: the argv (a list, never a shell string), environment and files.

The argv is for the stack's own Python (``[stack_python, *spec.argv]``) and uses
``-m sglang.launch_server``, whose parser is 0.5.23's ``prepare_server_args``; every flag it
contains is checked against that parser's source by ``tests/contract``. Several names in recipes on
the web are gone in 0.5.23 (``--cuda-graph-max-bs`` is ``--cuda-graph-max-bs-decode`` now).

API keys never appear on the command line, where any local user can read them in
``/proc/<pid>/cmdline``. The profile names key *files*; at launch the agent reads them and writes
a YAML config file (mode 0600) that the argv passes with ``--config``: 0.5.23's launcher merges
such a file into its arguments (``srt/utils/server_args_config_parser.py``; each key ``k`` becomes
the argument ``--k``, so keys are flag names without their leading dashes). SGLang itself still
reports the keys in ``/server_info`` (its ``api_key`` fields and ``launch_command``, which is built
from the merged arguments), so ``/server_info`` must stay behind the key, and the agent redacts it.

The adaptive config (``agent.sglang.adaptive``) is written next to it and passed with
``--speculative-adaptive --speculative-adaptive-config PATH``. Environment switches that profile keys
stand for (``agent.sglang.spec_env``: the zero-step draft-extend skip) are added to ``server.env``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.profile.atomic import write_atomic
from agent.profile.schema import Profile
from agent.sglang import adaptive, spec_env

STACK_ENV_DROP = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "__PYVENV_LAUNCHER__",
)


def stack_environ() -> dict[str, str]:
    """The environment for the stack's interpreter (and the one that builds it): the agent's own,
    less how the agent's interpreter was pointed at its packages (``PYTHONPATH``, ``PYTHONHOME``,
    ``VIRTUAL_ENV``...). On the GPU host the agent itself may run as
    ``PYTHONPATH=/tmp/agent-site python3 -m agent.cli.main``; inherited, that path would come before
    the stack's site-packages (shadowing its packages) and its folders' .pth files would not run
    (``import cutlass`` fails). A profile's ``server.env`` can still set them for the engine."""
    return {k: v for k, v in os.environ.items() if k not in STACK_ENV_DROP}


LAUNCH_MODULE = ("-m", "sglang.launch_server")


def default_run_dir() -> Path:
    """Where the agent keeps a launch's files: ``$XDG_STATE_HOME/k25console/engine`` (``~/.local/state/...``)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "k25console" / "engine"


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start SGLang for one profile, before any file is written.

    ``argv`` follows the Python executable; ``env`` is added to the agent's environment;
    ``adaptive_config`` is the JSON object written to ``adaptive_config_path``; the key file
    contents go to ``secrets_config_path`` (see :func:`write_launch_files`).
    """

    argv: list[str]
    env: dict[str, str]
    adaptive_config: dict[str, Any] | None
    adaptive_config_path: str | None = None
    secrets_config_path: str | None = None
    key_files: dict[str, str] = field(default_factory=dict)
    """``--config`` key (``api-key``, ``admin-api-key``) → the file the key is read from.

    Dashes, not underscores: 0.5.23's merger turns each YAML key ``k`` into ``--k`` verbatim
    (``ConfigArgumentMerger._add_scalar_arg``), so ``api_key`` would become the unknown ``--api_key``."""
    env_files: dict[str, str] = field(default_factory=dict)
    """Environment variable → the file its value is read from when the engine starts (``env_environ``)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``agent profile render --json``: no key material, only paths."""
        return {"argv": list(self.argv), "env": dict(self.env), "adaptive_config": self.adaptive_config}


class LaunchError(Exception):
    """A launch file could not be prepared; the message names the file and what is wrong."""


def _opt(argv: list[str], flag: str, value: object | None) -> None:
    if value is not None:
        argv += [flag, str(value)]


def render_launch(profile: Profile, run_dir: str | os.PathLike[str] | None = None) -> LaunchSpec:
    """Render a profile (already checked by ``rules.check_profile``) into a :class:`LaunchSpec`."""
    base = Path(run_dir) if run_dir is not None else default_run_dir()
    name = profile.identity.name
    model, server, spec = profile.model, profile.server, profile.speculation
    argv: list[str] = [*LAUNCH_MODULE, "--model-path", os.path.expanduser(model.path)]
    if model.trust_remote_code:
        argv.append("--trust-remote-code")
    _opt(argv, "--served-model-name", model.served_name)
    _opt(argv, "--context-length", model.context_length)
    _opt(argv, "--reasoning-parser", model.reasoning_parser)
    _opt(argv, "--tool-call-parser", model.tool_call_parser)
    if model.language_model_only:
        argv.append("--language-model-only")

    argv += ["--tp-size", str(server.tp_size), "--page-size", str(server.page_size)]
    _opt(argv, "--mem-fraction-static", server.mem_fraction_static)
    _opt(argv, "--max-running-requests", server.max_running_requests)
    _opt(argv, "--cuda-graph-max-bs-decode", server.cuda_graph_max_bs)
    _opt(argv, "--max-total-tokens", server.max_total_tokens)
    _opt(argv, "--chunked-prefill-size", server.chunked_prefill_size)
    argv += ["--kv-cache-dtype", server.kv_cache_dtype]
    _opt(argv, "--attention-backend", server.attention_backend)
    argv += ["--host", server.host, "--port", str(server.port)]
    # Always: the agent's telemetry reads /metrics, which 0.5.23 mounts only with this flag.
    argv.append("--enable-metrics")

    adaptive_cfg: dict[str, Any] | None = None
    adaptive_path: str | None = None
    if profile.speculative and spec.num_steps is not None:
        argv += ["--speculative-algorithm", spec.algorithm]
        if model.draft_path is not None:
            argv += ["--speculative-draft-model-path", os.path.expanduser(model.draft_path)]
        topk = spec.eagle_topk or 1
        # SGLang replaces the draft-token count by steps + 1 when topk is 1 (and always in adaptive mode);
        # render the value it will run with so that its log and ours agree.
        draft_tokens = spec.num_steps + 1 if topk == 1 else (spec.num_draft_tokens or spec.num_steps + 1)
        argv += [
            "--speculative-num-steps",
            str(spec.num_steps),
            "--speculative-eagle-topk",
            str(topk),
            "--speculative-num-draft-tokens",
            str(draft_tokens),
        ]
        adaptive_cfg = adaptive.adaptive_config(profile)
        if adaptive_cfg is not None:
            adaptive_path = str(base / f"{name}.adaptive.json")
            argv += ["--speculative-adaptive", "--speculative-adaptive-config", adaptive_path]

    key_files: dict[str, str] = {}
    if server.api_key_file is not None:
        key_files["api-key"] = os.path.expanduser(server.api_key_file)
    if server.admin_api_key_file is not None:
        key_files["admin-api-key"] = os.path.expanduser(server.admin_api_key_file)
    secrets_path: str | None = None
    if key_files:
        secrets_path = str(base / f"{name}.secrets.yaml")
        argv += ["--config", secrets_path]

    argv += list(server.extra_flags)
    return LaunchSpec(
        argv=argv,
        env={**server.env, **spec_env.render_env(profile)},
        adaptive_config=adaptive_cfg,
        adaptive_config_path=adaptive_path,
        secrets_config_path=secrets_path,
        key_files=key_files,
        env_files={k: os.path.expanduser(v) for k, v in server.env_files.items()},
    )


def env_file_secrets(files: dict[str, str]) -> list[str]:
    """The values ``server.env_files`` hold, to hide wherever the agent answers (none when a file
    cannot be read: the launch says so, and nothing of it can leak)."""
    try:
        return [v for v in read_env_files(files).values() if v]
    except LaunchError:
        return []


def read_env_files(files: dict[str, str]) -> dict[str, str]:
    """``server.env_files`` read at launch: each file holds one value (a trailing newline is allowed).
    The values go into the engine's environment only, never its argv."""
    out = {}
    for name, path in files.items():
        try:
            text = Path(os.path.expanduser(path)).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LaunchError(f"server.env_files.{name}: cannot read {path}: {exc}") from None
        value = text.removesuffix("\n").removesuffix("\r")
        if "\x00" in value or "\n" in value:
            raise LaunchError(f"server.env_files.{name}: {path} must hold one line, the value")
        out[name] = value
    return out


def read_key_file(path: str) -> str:
    """A key from its file: one line of printable, non-space characters (a trailing newline is allowed)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LaunchError(f"{path}: cannot read the key file: {exc}") from None
    key = text.removesuffix("\n").removesuffix("\r")
    if not key:
        raise LaunchError(f"{path}: the key file is empty")
    if any(c.isspace() or not c.isprintable() for c in key):
        raise LaunchError(f"{path}: the key must be one line of printable characters without spaces")
    return key


def _write_private(path: Path, text: str) -> None:
    """Write atomically with mode 0600 from the start (never briefly readable by others)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, text)


def secrets_config_text(spec: LaunchSpec) -> str:
    """The ``--config`` file's text: a JSON object (valid YAML) of the keys read from their files.

    JSON's double-quoted strings are read back verbatim by YAML's safe loader, whatever the key holds.
    """
    return json.dumps({k: read_key_file(path) for k, path in sorted(spec.key_files.items())}) + "\n"


def write_launch_files(spec: LaunchSpec) -> list[Path]:
    """Write the adaptive config and the key config a launch needs; returns the paths written."""
    written: list[Path] = []
    if spec.adaptive_config is not None and spec.adaptive_config_path is not None:
        path = Path(spec.adaptive_config_path)
        _write_private(path, json.dumps(spec.adaptive_config, indent=2, sort_keys=True) + "\n")
        written.append(path)
    if spec.secrets_config_path is not None:
        path = Path(spec.secrets_config_path)
        _write_private(path, secrets_config_text(spec))
        written.append(path)
    return written
