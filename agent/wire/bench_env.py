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
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

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
    torch_cuda: str | None = Field(None, description="the CUDA runtime the stack's torch was built for")
    sglang: str | None = None
    versions_from: str | None = Field(
        None, description="whose word the versions are: the stack's python, or its manifest (older results)"
    )
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


def _or_none(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    """An older result's field of another type than expected reads as not recorded, never as an error."""
    try:
        return handler(value)
    except ValidationError:
        return None


Lenient = WrapValidator(_or_none)


class ServerSummary(_Wire):
    """An older result's ``server`` summary (``ServerInfo.summary``): version, served name, tp."""

    version: Annotated[str | None, Lenient] = None
    served_model_name: Annotated[str | None, Lenient] = None
    tp_size: Annotated[StrictInt | None, Lenient] = None

    def facts(self) -> ServerFacts:
        return ServerFacts(
            sglang_version=self.version, served_model_name=self.served_model_name, tp_size=self.tp_size
        )


class RecordedEnvironment(_Wire):
    """What a result kept of where it ran: its ``environment`` (malformed: an error), or an older
    result's summaries (of another type than expected: not recorded)."""

    environment: BenchEnvironment | None = None
    server: Annotated[ServerSummary | None, Lenient] = None
    baseline_server: Annotated[ServerSummary | None, Lenient] = None
    profile: Annotated[str | None, Lenient] = None


def parse_environment(result: object) -> BenchEnvironment | None:
    """A result's ``environment`` (``result`` as JSON). An older result has none: what it kept (its
    ``server`` summary, the agent's ``profile`` name) is read into one, the rest marked not recorded;
    None when it kept nothing."""
    kept = RecordedEnvironment.model_validate(result if isinstance(result, dict) else {})
    if kept.environment is not None:
        return kept.environment
    if kept.server is None and kept.profile is None:
        return None
    return BenchEnvironment(
        gpus_unknown=NOT_RECORDED,
        server=kept.server.facts() if kept.server is not None else None,
        baseline=kept.baseline_server.facts() if kept.baseline_server is not None else None,
        stack_unknown=NOT_RECORDED,
        profile=ProfileFacts(name=kept.profile) if kept.profile is not None else None,
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
        stack = env.stack
        cuda = stack.torch_cuda or (_cuda_of_torch(stack.torch) if stack.torch else None)
        torch = f"torch {stack.torch}" + (f" (CUDA {cuda} runtime)" if cuda else "") if stack.torch else ""
        sglang = f"SGLang {stack.sglang}" if stack.sglang else ""
        manifest = f"manifest sha256 {stack.manifest_sha256[:12]}" if stack.manifest_sha256 else ""
        words = ", ".join(p for p in (torch, sglang, manifest) if p) or "no versions recorded"
        if stack.versions_from and (torch or sglang):
            words += f" [versions from {stack.versions_from}]"
        lines.append(("stack", words))
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
