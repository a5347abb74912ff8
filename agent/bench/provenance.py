"""What a benchmark records about where it ran (``agent.wire.bench_env`` says why and what).

The caller knows what the benchmark cannot see for itself and hands it over as a ``RunContext``:

* the agent (``POST /v1/bench``): its own telemetry's GPUs, the profile the engine was launched
  with (name, file, sha256 of its TOML as the agent writes it) and the stack's manifest;
* ``agent bench`` on the command line (``local_context``): this machine's NVML, only when the URL
  is on this machine (loopback); otherwise the GPUs are unknown and say so. It knows no profile.

The server's own facts (SGLang's version, the attention backends in force, the model) come from the
``/server_info`` the run reads anyway, for the baseline server as well.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError

from agent.install import stack_versions
from agent.install.manifest import manifest_hash, read_manifest
from agent.profile.schema import Profile
from agent.profile.store import dump_profile
from agent.sglang.info_view import ServerInfo
from agent.telemetry.nvml import make_sampler
from agent.wire import Gpus
from agent.wire.bench_env import (
    SIMULATED_HOST_PATH,
    BenchEnvironment,
    GpuFacts,
    ProfileFacts,
    ServerFacts,
    StackFacts,
)

RUN_AT_A_URL = "the benchmark ran straight at a URL, not through the agent that runs a profile"


@dataclass(frozen=True)
class RunContext:
    gpus: GpuFacts | None = None
    gpus_unknown: str | None = None
    profile: ProfileFacts | None = None
    profile_unknown: str | None = RUN_AT_A_URL
    stack: StackFacts | None = None
    stack_unknown: str | None = RUN_AT_A_URL


def gpu_facts(gpus: Gpus, where: str) -> tuple[GpuFacts | None, str | None]:
    """The GPUs of a sample, or why there are none to record."""
    if gpus.state != "ok" or not gpus.devices:
        why = "no NVIDIA driver" if gpus.state == "no_driver" else gpus.detail or gpus.state.replace("_", " ")
        return None, f"{where} found none ({why})"
    facts = GpuFacts(
        source=gpus.source,
        where=where,
        count=len(gpus.devices),
        names=[d.name or "unnamed GPU" for d in gpus.devices],
        driver=gpus.driver_version,
        cuda=gpus.cuda_driver_version,
        detail=gpus.detail,
    )
    return facts, None


def profile_facts(profile: Profile, path: Path | None) -> ProfileFacts:
    digest = hashlib.sha256(dump_profile(profile).encode()).hexdigest()
    return ProfileFacts(name=profile.identity.name, path=None if path is None else str(path), sha256=digest)


STACK_PYTHON = "the stack's python"


def stack_facts(profile: Profile) -> tuple[StackFacts | None, str | None]:
    """The stack's manifest, and the torch, CUDA and SGLang its python imports (``stack_versions``:
    with ``--system-site-packages`` the manifest's torch is not the one the engine runs)."""
    venv = Path(profile.stack.venv).expanduser()
    manifest = read_manifest(venv)
    if manifest is None:
        return None, f"no readable stack manifest in {venv} (a stack not installed by agent install)"
    versions, why = stack_versions.probe(venv / "bin" / "python")
    if versions is None:
        torch, cuda, sglang = manifest.packages.get("torch"), None, manifest.packages.get("sglang")
        source = f"the stack's manifest ({why})"
    else:
        torch, cuda, sglang, source = versions.torch, versions.torch_cuda, versions.sglang, STACK_PYTHON
    facts = StackFacts(
        torch=torch,
        torch_cuda=cuda,
        sglang=sglang,
        versions_from=source,
        manifest_sha256=manifest_hash(venv),
        patch_set_sha256=manifest.patch_set_sha256,
    )
    return facts, None


def agent_context(profile: Profile, path: Path | None, gpus: Gpus | None, engine_kind: str) -> RunContext:
    """What the agent knows about the engine it runs."""
    facts, unknown = (
        gpu_facts(gpus, "the agent's telemetry") if gpus is not None else (None, "no telemetry yet")
    )
    stack: StackFacts | None = None
    stack_unknown: str | None = "the simulated engine runs no SGLang stack"
    if engine_kind != "sim":
        stack, stack_unknown = stack_facts(profile)
    return RunContext(facts, unknown, profile_facts(profile, path), None, stack, stack_unknown)


def is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_context(url: str) -> RunContext:
    """``agent bench`` on the command line: this machine's GPUs when the server is on it."""
    if not is_local(url):
        return RunContext(gpus_unknown=f"{url} is not on this machine, so its GPUs were not read")
    sampler = make_sampler("auto")
    try:
        facts, unknown = gpu_facts(sampler.sample(), "this machine's NVML")
    finally:
        sampler.close()
    return RunContext(gpus=facts, gpus_unknown=unknown)


def server_facts(info: ServerInfo) -> ServerFacts:
    prefill, decode = info.attention_backends
    return ServerFacts(
        sglang_version=info.version,
        attention_prefill=prefill,
        attention_decode=decode,
        model_path=info.model_path,
        draft_model_path=info.speculative_draft_model_path,
        served_model_name=info.served_model_name,
        tp_size=info.tp_size,
    )


SIMULATED_HOST_MAX_BYTES = 4096


async def simulated_gpus(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> GpuFacts | None:
    """The host ``agent sim`` at ``url`` models (``SIMULATED_HOST_PATH``); None from anything else (a
    real SGLang answers 404), or from an answer that is not one (too large, not ``GpuFacts``)."""
    try:
        answer = await client.get(url.rstrip("/") + SIMULATED_HOST_PATH, headers=headers, timeout=5.0)
    except httpx.HTTPError:
        return None
    if answer.status_code != 200 or len(answer.content) > SIMULATED_HOST_MAX_BYTES:
        return None
    try:
        facts = GpuFacts.model_validate_json(answer.content)
    except ValidationError:
        return None
    return facts.model_copy(update={"source": "simulated"})


def environment(
    info: ServerInfo,
    context: RunContext | None,
    baseline: ServerInfo | None = None,
    simulated: GpuFacts | None = None,
) -> dict[str, Any]:
    """The result's ``environment``; ``simulated``: the host the simulated engine models, which
    replaces what the caller read of its own machine (``simulated_gpus``)."""
    ctx = context or RunContext(gpus_unknown="the caller did not say where the server runs")
    gpus = simulated if simulated is not None else ctx.gpus
    env = BenchEnvironment(
        gpus=gpus,
        gpus_unknown=None if gpus is not None else ctx.gpus_unknown,
        server=server_facts(info),
        baseline=None if baseline is None else server_facts(baseline),
        stack=ctx.stack,
        stack_unknown=None if ctx.stack is not None else ctx.stack_unknown,
        profile=ctx.profile,
        profile_unknown=None if ctx.profile is not None else ctx.profile_unknown,
    )
    return env.model_dump()
