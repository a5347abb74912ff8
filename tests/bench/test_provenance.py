"""Where a benchmark ran: what a result records (from real captures), and ``agent bench show``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from agent.bench.provenance import (
    RUN_AT_A_URL,
    agent_context,
    environment,
    gpu_facts,
    is_local,
    local_context,
)
from agent.profile.store import dump_profile, load_profile
from agent.sglang.info_view import parse_server_info
from agent.telemetry.nvml import FixtureSampler, NoGpuSampler
from agent.wire.bench_env import NOT_RECORDED, BenchEnvironment, describe, parse_environment

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "sglang-0.5.23-real"
OLD_RESULT = REPO / "bench" / "results" / "real-h200-2026-12-01" / "compare-oracle-1.json"
PROFILE = REPO / "profiles" / "kimi-k25-eagle3.toml"


def _real_info() -> dict[str, object]:
    return json.loads((REAL / "server_info.json").read_text())


def test_the_server_facts_come_from_the_real_server_info() -> None:
    env = BenchEnvironment.model_validate(environment(parse_server_info(_real_info()), None))
    assert env.server is not None
    assert env.server.sglang_version == "0.5.23"
    assert (env.server.attention_prefill, env.server.attention_decode) == ("triton", "triton")
    assert env.server.model_path == "/tmp/models/tiny-llama"
    assert env.server.draft_model_path == "/tmp/models/tiny-eagle3-oracle"
    assert env.gpus is None and env.gpus_unknown == "the caller did not say where the server runs"
    assert env.profile is None and env.profile_unknown == RUN_AT_A_URL


def test_split_attention_backends_are_read_as_sglang_resolves_them() -> None:
    raw = {**_real_info(), "attention_backend": "fa3", "decode_attention_backend": "triton"}
    assert parse_server_info(raw).attention_backends == ("fa3", "triton")
    words = dict(describe(BenchEnvironment.model_validate(environment(parse_server_info(raw), None))))
    assert "attention fa3 (prefill), triton (decode)" in words["server"]


def test_the_gpus_come_from_a_real_nvml_capture_and_say_whose_reading() -> None:
    sampler = FixtureSampler(REPO / "tests" / "fixtures" / "gpu" / "h200" / "nvml.json")
    facts, unknown = gpu_facts(sampler.sample(), "the agent's telemetry")
    assert unknown is None and facts is not None
    assert (facts.count, facts.names, facts.driver, facts.cuda) == (1, ["NVIDIA H200"], "580.159.04", "13.0")
    words = dict(describe(BenchEnvironment(gpus=facts)))
    assert words["GPUs"].startswith("1 × NVIDIA H200, driver 580.159.04, CUDA 13.0 (driver)")
    assert "a captured or modelled host, not this run's" in words["GPUs"]  # a fixture is not a measurement


def test_no_gpu_is_said_with_its_reason() -> None:
    facts, unknown = gpu_facts(NoGpuSampler().sample(), "the agent's telemetry")
    assert facts is None and unknown == "the agent's telemetry found none (GPU sampling is off)"


def test_a_url_on_another_machine_leaves_the_gpus_unknown() -> None:
    assert (
        is_local("http://127.0.0.1:30000") and is_local("http://localhost:1") and is_local("http://[::1]:2")
    )
    assert not is_local("http://gpu-host:30000") and not is_local("http://10.0.0.5:30000")
    ctx = local_context("http://gpu-host:30000")
    assert (
        ctx.gpus is None
        and ctx.gpus_unknown == "http://gpu-host:30000 is not on this machine, so its GPUs were not read"
    )


def test_the_agent_records_the_launched_profile_and_its_digest() -> None:
    profile = load_profile(PROFILE)
    ctx = agent_context(profile, PROFILE, None, "sim")
    assert ctx.profile is not None and ctx.profile.name == "kimi-k25-eagle3"
    assert ctx.profile.sha256 == hashlib.sha256(dump_profile(profile).encode()).hexdigest()
    changed = profile.model_copy(
        update={"speculation": profile.speculation.model_copy(update={"num_steps": 2})}
    )
    assert agent_context(changed, PROFILE, None, "sim").profile.sha256 != ctx.profile.sha256  # type: ignore[union-attr]
    assert ctx.stack is None and ctx.stack_unknown == "the simulated engine runs no SGLang stack"
    assert ctx.gpus_unknown == "no telemetry yet"


def test_a_stack_without_a_manifest_says_so() -> None:
    profile = load_profile(PROFILE)  # its venv (~/.local/share/k25console/stack) is not installed here
    ctx = agent_context(profile, PROFILE, None, "sglang")
    assert (
        ctx.stack is None
        and ctx.stack_unknown is not None
        and "no readable stack manifest" in ctx.stack_unknown
    )


def test_an_older_result_loads_and_reads_not_recorded_where_it_kept_nothing() -> None:
    old = json.loads(OLD_RESULT.read_text())
    assert "environment" not in old
    env = parse_environment(old)
    assert env is not None and env.server is not None and env.server.sglang_version == "0.5.23"
    words = dict(describe(env))
    assert words["GPUs"] == f"unknown: {NOT_RECORDED}" and words["profile"] == f"unknown: {NOT_RECORDED}"
    assert "attention backend not recorded" in words["server"]
    assert describe(parse_environment({"levels": []})) == [("where it ran", NOT_RECORDED)]


def _show(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "bench", "show", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bench_show_prints_where_a_result_ran_then_its_table(tmp_path: Path) -> None:
    result = json.loads(OLD_RESULT.read_text())
    sampler = FixtureSampler(REPO / "tests" / "fixtures" / "gpu" / "h200" / "nvml.json")
    facts, _ = gpu_facts(sampler.sample(), "the agent's telemetry")
    ctx = agent_context(load_profile(PROFILE), PROFILE, None, "sim")
    assert facts is not None and ctx.profile is not None
    result["environment"] = environment(parse_server_info(_real_info()), ctx) | {"gpus": facts.model_dump()}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    shown = _show(str(path))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].strip().startswith("GPUs: 1 × NVIDIA H200, driver 580.159.04, CUDA 13.0")
    assert "server: SGLang 0.5.23, attention triton, model /tmp/models/tiny-llama" in shown.stdout
    assert f"profile: kimi-k25-eagle3 (sha256 {(ctx.profile.sha256 or '')[:12]}, {PROFILE})" in shown.stdout
    assert "recommended threshold" in shown.stdout and " conc " in shown.stdout
    as_json = _show(str(path), "--json")
    assert json.loads(as_json.stdout)["gpus"]["names"] == ["NVIDIA H200"]
    old = _show(str(OLD_RESULT))
    assert old.returncode == 0 and f"GPUs: unknown: {NOT_RECORDED}" in old.stdout


def test_bench_show_names_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    missing = _show(str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "nope.json: cannot read it" in missing.stderr
    (tmp_path / "text.json").write_text("not json")
    assert "text.json: not JSON" in _show(str(tmp_path / "text.json")).stderr
    (tmp_path / "list.json").write_text("[1, 2]")
    listed = _show(str(tmp_path / "list.json"))
    assert (
        listed.returncode == 2 and "not a benchmark result (an object with a 'levels' list" in listed.stderr
    )
    (tmp_path / "env.json").write_text(json.dumps({"levels": [], "environment": {"gpus": {"count": "many"}}}))
    bad = _show(str(tmp_path / "env.json"))
    assert bad.returncode == 2 and "its 'environment' is malformed" in bad.stderr
    assert "Traceback" not in missing.stderr + listed.stderr + bad.stderr


async def test_a_run_against_the_simulator_records_the_host_it_models_not_this_machine() -> None:
    """``agent sim`` says which host it models (a route SGLang does not have): the result records that,
    marked simulated, in place of whatever this machine's NVML found (nothing, here)."""
    import httpx

    from agent.bench.options import BenchOptions
    from agent.bench.provenance import simulated_gpus
    from agent.bench.sweep import run_sweep
    from agent.sim.calibration import CALIBRATION
    from agent.sim.server import run_sim
    from agent.wire.bench_env import SIMULATED_HOST_PATH

    profile = load_profile(PROFILE)
    options = BenchOptions(
        concurrency=(2,), input_len=16, output_len=8, repeats=1, min_window_s=0.0, min_requests=2
    )
    async with run_sim(profile, port=0, speedup=50, seed=2, api_key="k") as sim:
        result = await run_sweep(sim.url, options.with_api_key("k"), context=local_context(sim.url))
        async with httpx.AsyncClient() as client:
            refused = await client.get(sim.url + SIMULATED_HOST_PATH)
            assert await simulated_gpus(client, sim.url + "/nowhere", {}) is None  # a 404: not the sim
    assert refused.status_code == 401, "the route takes the engine's API key, as /server_info does"
    gpus = result["environment"]["gpus"]
    assert gpus["source"] == "simulated" and result["environment"]["gpus_unknown"] is None
    assert gpus["names"] == [CALIBRATION.gpu] * profile.server.tp_size and gpus["driver"] is None
    lines = dict(describe(BenchEnvironment.model_validate(result["environment"])))
    assert lines["GPUs"].startswith(f"{profile.server.tp_size} × {CALIBRATION.gpu} [simulated from agent sim")
    assert "a captured or modelled host, not this run's" in lines["GPUs"]


def _stack_with_torch(tmp_path: Path, torch: str, cuda: str | None, manifest_torch: str) -> Path:
    """A real venv whose python imports torch ``torch`` (built for ``cuda``) and SGLang 0.5.23, with a
    manifest that lists another torch (what ``--system-site-packages`` leaves in it: issue 46)."""
    from agent.install.manifest import StackManifest, write_manifest

    venv = tmp_path / "stack"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    site = Path(done.stdout.strip())
    for name, version in (("torch", torch), ("sglang", "0.5.23")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("raise ImportError('the probe must not import torch')\n")
    (site / "torch" / "version.py").write_text(
        f"__version__ = '{torch}'\ncuda: Optional[str] = {cuda!r}\ngit_version = 'abc'\n"
    )
    write_manifest(
        venv,
        StackManifest(
            created_at="2026-12-07T00:00:00Z",
            profile="p",
            python_version="3.11",
            installer="uv",
            index_url=None,
            find_links=[],
            sglang_version="0.5.23",
            packages={"torch": manifest_torch, "sglang": "0.5.23"},
            packages_fingerprint="f",
            patch_set_sha256=None,
            patches=[],
            patched_files={},
        ),
    )
    return venv


def test_the_stack_records_the_torch_cuda_and_sglang_its_python_imports(tmp_path: Path) -> None:
    venv = _stack_with_torch(tmp_path, "2.14.1+cu130", "13.0", manifest_torch="2.11.0")
    profile = load_profile(PROFILE)
    profile = profile.model_copy(update={"stack": profile.stack.model_copy(update={"venv": str(venv)})})
    ctx = agent_context(profile, PROFILE, None, "sglang")
    assert ctx.stack is not None
    assert (ctx.stack.torch, ctx.stack.torch_cuda, ctx.stack.sglang) == ("2.14.1+cu130", "13.0", "0.5.23")
    assert ctx.stack.versions_from == "the stack's python"
    env = parse_environment({"environment": environment(parse_server_info(_real_info()), ctx)})
    words = dict(describe(env))["stack"]
    assert words.startswith("torch 2.14.1+cu130 (CUDA 13.0 runtime), SGLang 0.5.23, manifest sha256 ")
    assert words.endswith("[versions from the stack's python]")


def test_a_stack_whose_python_cannot_answer_falls_back_to_its_manifest_and_says_why(tmp_path: Path) -> None:
    venv = _stack_with_torch(tmp_path, "2.14.1+cu130", "13.0", manifest_torch="2.11.0")
    (venv / "bin" / "python").unlink()
    profile = load_profile(PROFILE)
    profile = profile.model_copy(update={"stack": profile.stack.model_copy(update={"venv": str(venv)})})
    ctx = agent_context(profile, PROFILE, None, "sglang")
    assert ctx.stack is not None and ctx.stack.torch == "2.11.0" and ctx.stack.torch_cuda is None
    assert ctx.stack.versions_from is not None
    assert (
        ctx.stack.versions_from.startswith("the stack's manifest (")
        and "does not exist" in ctx.stack.versions_from
    )
