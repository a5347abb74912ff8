"""Where a benchmark ran: the hardware and software behind its figures, as a result records them.

A figure means little without its machine: the same compare read 0.45 off ÷ baseline under the
triton attention backend and 0.93 under fa3 on the same H200. Every result therefore keeps
``environment``: the GPUs (name, count, driver, the driver's CUDA version) with where they were
read, SGLang's version, the attention backends in force and the model from ``/server_info`` (the
baseline server's too), the stack's torch build, and the profile's name and sha256. What a run
could not know is said, with why (``*_unknown``), never guessed: a bench run straight at a URL from
another machine knows neither the GPUs nor the profile.

Results from before this record have no ``environment``; they load, and read as "not recorded".
``describe`` gives the words ``agent bench show`` and the console's Bench screen print.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

NOT_RECORDED = "not recorded (the result is older than this record)"

SIMULATED_HOST_PATH = "/k25console/simulated_host"
"""Where ``agent sim`` says which host it models (a ``GpuFacts`` with ``source="simulated"``): a
result of a run against the simulator records that, not the GPUs of the machine the simulator ran
on. SGLang has no such route (404): a real engine's GPUs come from NVML or the agent's telemetry."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class GpuFacts(_Wire):
    source: str | None = Field(None, description="nvml, nvidia-smi, fixture or simulated")
    where: str | None = Field(None, description="whose reading: the agent's telemetry, this machine's NVML")
    count: int | None = None
    names: list[str] = Field(default_factory=list)
    driver: str | None = None
    cuda: str | None = Field(None, description="the CUDA version the driver supports (NVML)")
    detail: str | None = None


class ServerFacts(_Wire):
    """From the server's ``/server_info``: its server args as resolved at launch."""

    sglang_version: str | None = None
    attention_prefill: str | None = None
    attention_decode: str | None = None
    model_path: str | None = None
    draft_model_path: str | None = None
    served_model_name: str | None = None
    tp_size: int | None = None


class StackFacts(_Wire):
    """From the stack's manifest (``agent install``): what the server's venv holds."""

    torch: str | None = None
    manifest_sha256: str | None = None
    patch_set_sha256: str | None = None


class ProfileFacts(_Wire):
    name: str
    path: str | None = None
    sha256: str | None = Field(None, description="of the profile file's bytes when the run started")


class BenchEnvironment(_Wire):
    gpus: GpuFacts | None = None
    gpus_unknown: str | None = None
    server: ServerFacts | None = None
    baseline: ServerFacts | None = None
    stack: StackFacts | None = None
    stack_unknown: str | None = None
    profile: ProfileFacts | None = None
    profile_unknown: str | None = None


def _from_summary(summary: dict[str, Any]) -> ServerFacts:
    """An older result's ``server`` summary (``ServerInfo.summary``): version, served name, tp."""

    def text(key: str) -> str | None:
        value = summary.get(key)
        return value if isinstance(value, str) else None

    tp = summary.get("tp_size")
    return ServerFacts(
        sglang_version=text("version"),
        served_model_name=text("served_model_name"),
        tp_size=tp if isinstance(tp, int) and not isinstance(tp, bool) else None,
    )


def parse_environment(result: dict[str, Any]) -> BenchEnvironment | None:
    """A result's ``environment``. An older result has none: what it kept (its ``server`` summary, the
    agent's ``profile`` name) is read into one, the rest marked not recorded; None when it kept nothing."""
    data = result.get("environment")
    if isinstance(data, dict):
        return BenchEnvironment.model_validate(data)
    summary, profile = result.get("server"), result.get("profile")
    if not isinstance(summary, dict) and not isinstance(profile, str):
        return None
    baseline = result.get("baseline_server")
    return BenchEnvironment(
        gpus_unknown=NOT_RECORDED,
        server=_from_summary(summary) if isinstance(summary, dict) else None,
        baseline=_from_summary(baseline) if isinstance(baseline, dict) else None,
        stack_unknown=NOT_RECORDED,
        profile=ProfileFacts(name=profile) if isinstance(profile, str) else None,
        profile_unknown=NOT_RECORDED,
    )


def _cuda_of_torch(torch: str) -> str | None:
    """``2.9.1+cu129`` → ``12.9`` (the CUDA runtime the wheel was built for)."""
    m = re.search(r"\+cu(\d+)(\d)$", torch)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _gpus(gpus: GpuFacts) -> str:
    names = sorted(set(gpus.names))
    what = " + ".join(f"{gpus.names.count(n)} × {n}" for n in names) if names else f"{gpus.count or 0} GPUs"
    parts = [what]
    if gpus.driver:
        parts.append(f"driver {gpus.driver}")
    if gpus.cuda:
        parts.append(f"CUDA {gpus.cuda} (driver)")
    text = ", ".join(parts)
    where = " ".join(w for w in (gpus.source, gpus.where and f"from {gpus.where}") if w)
    if gpus.source in ("fixture", "simulated"):
        where += ": a captured or modelled host, not this run's"
    return text + (f" [{where}]" if where else "")


def _attention(server: ServerFacts) -> str:
    prefill, decode = server.attention_prefill, server.attention_decode
    if prefill is None and decode is None:
        return "attention backend not recorded"
    if prefill == decode:
        return f"attention {prefill}"
    return f"attention {prefill or 'unknown'} (prefill), {decode or 'unknown'} (decode)"


def _server(server: ServerFacts) -> str:
    parts = [f"SGLang {server.sglang_version or 'version not recorded'}", _attention(server)]
    model = server.model_path or server.served_model_name or "not recorded"
    if server.draft_model_path:
        model += f" (draft {server.draft_model_path})"
    if server.tp_size:
        model += f", tp {server.tp_size}"
    parts.append(f"model {model}")
    return ", ".join(parts)


def describe(env: BenchEnvironment | None) -> list[tuple[str, str]]:
    """(label, words) per line, in the order a reader wants them."""
    if env is None:
        return [("where it ran", NOT_RECORDED)]
    lines = [("GPUs", _gpus(env.gpus) if env.gpus else f"unknown: {env.gpus_unknown or 'not read'}")]
    lines.append(
        ("server", _server(env.server) if env.server else "unknown: the engine's server info was not read")
    )
    if env.baseline is not None:
        lines.append(("baseline", _server(env.baseline)))
    if env.stack is not None:
        cuda = _cuda_of_torch(env.stack.torch) if env.stack.torch else None
        torch = (
            f"torch {env.stack.torch}" + (f" (CUDA {cuda} runtime)" if cuda else "")
            if env.stack.torch
            else ""
        )
        manifest = f"manifest sha256 {env.stack.manifest_sha256[:12]}" if env.stack.manifest_sha256 else ""
        lines.append(("stack", ", ".join(p for p in (torch, manifest) if p) or "no versions recorded"))
    else:
        lines.append(("stack", f"unknown: {env.stack_unknown or 'not read'}"))
    if env.profile is not None:
        digest = (
            f"sha256 {env.profile.sha256[:12]}"
            if env.profile.sha256
            else "no digest: the file was unreadable"
        )
        where = f", {env.profile.path}" if env.profile.path else ""
        lines.append(("profile", f"{env.profile.name} ({digest}{where})"))
    else:
        lines.append(("profile", f"unknown: {env.profile_unknown or 'not recorded'}"))
    return lines
