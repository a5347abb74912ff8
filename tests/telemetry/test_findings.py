"""Each health finding fires on its condition, stays quiet just short of it, and says what to do."""

from __future__ import annotations

from agent.telemetry.findings import (
    ACCEPT_STUCK_MIN_SAMPLES,
    SPEC_KV_SHARE_WARN,
    HealthInputs,
    evaluate,
)
from agent.telemetry.nvml import FixtureSampler
from agent.wire import Gpu, Gpus

from .conftest import GPU


def codes(inputs: HealthInputs) -> list[str]:
    return [f.code for f in evaluate(inputs)]


def test_nothing_wrong_nothing_said() -> None:
    assert evaluate(HealthInputs()) == []
    healthy = HealthInputs(
        speculating=True,
        accept_lengths=(2.6,) * 10,
        topk=1,
        running=8,
        queued=0,
        max_running_requests=256,
        cuda_graph_max_bs=256,
        adaptive_requested=True,
        adaptive_resolved=True,
        speculation_share=0.02,
        retractions_delta=0,
    )
    assert evaluate(healthy) == []


def test_accept_length_stuck_near_one_needs_enough_readings() -> None:
    stuck = HealthInputs(
        speculating=True, algorithm="EAGLE3", accept_lengths=(1.02,) * ACCEPT_STUCK_MIN_SAMPLES
    )
    (finding,) = evaluate(stuck)
    assert finding.code == "accept_length_stuck"
    assert "sglang#21272" in finding.explanation and "EAGLE3" in finding.explanation
    assert "threshold to 1" in finding.action
    too_few = HealthInputs(speculating=True, accept_lengths=(1.0,) * (ACCEPT_STUCK_MIN_SAMPLES - 1))
    assert codes(too_few) == []
    fine = HealthInputs(speculating=True, accept_lengths=(1.0, 1.0, 1.0, 1.9, 1.9))
    assert codes(fine) == []
    not_speculating = HealthInputs(speculating=False, accept_lengths=(1.0,) * 10)
    assert codes(not_speculating) == []


def test_cuda_graph_below_max_running() -> None:
    f = evaluate(
        HealthInputs(cuda_graph_max_bs=48, max_running_requests=256, decode_passes_no_graph_delta=120)
    )
    assert [x.code for x in f] == ["cuda_graph_below_max_running"]
    assert "120 decode passes without a graph" in f[0].explanation
    assert "at least 256" in f[0].action
    assert codes(HealthInputs(cuda_graph_max_bs=256, max_running_requests=256)) == []


def test_topk_above_one_with_a_batch() -> None:
    assert codes(HealthInputs(speculating=True, topk=4, running=2)) == ["topk_with_batch"]
    assert codes(HealthInputs(speculating=True, topk=4, running=1)) == []
    assert codes(HealthInputs(speculating=True, topk=1, running=64)) == []


def test_adaptive_silently_off_quotes_sglangs_reason() -> None:
    reason = "speculative_eagle_topk=4 (only topk=1 is supported)"
    (f,) = evaluate(
        HealthInputs(adaptive_requested=True, adaptive_resolved=False, adaptive_off_reason=reason)
    )
    assert f.code == "adaptive_silently_off" and reason in f.explanation
    assert codes(HealthInputs(adaptive_requested=True, adaptive_resolved=None)) == []  # unknown: no claim
    assert codes(HealthInputs(adaptive_requested=True, adaptive_resolved=True)) == []


def test_queueing_only_at_the_cap() -> None:
    assert codes(HealthInputs(running=256, queued=30, max_running_requests=256)) == ["queueing"]
    assert codes(HealthInputs(running=200, queued=3, max_running_requests=256)) == []  # prefill backlog
    assert codes(HealthInputs(running=256, queued=0, max_running_requests=256)) == []


def test_speculation_share_of_the_pool() -> None:
    (f,) = evaluate(HealthInputs(speculation_share=SPEC_KV_SHARE_WARN, reserve_on=16, reserve_off=2))
    assert f.code == "speculation_kv_share" and f.severity == "info"
    assert "16 tokens ahead instead of 2" in f.explanation
    (g,) = evaluate(HealthInputs(speculation_share=2 * SPEC_KV_SHARE_WARN))
    assert g.severity == "warning"
    assert codes(HealthInputs(speculation_share=SPEC_KV_SHARE_WARN * 0.99)) == []


def test_retractions_in_the_window() -> None:
    (f,) = evaluate(HealthInputs(retractions_delta=3, retraction_window_s=60))
    assert f.code == "retractions" and "3 requests retracted in the last 60 s" in f.title
    assert codes(HealthInputs(retractions_delta=0)) == []


def test_gpu_findings_from_the_loaded_capture_and_bad_gpus() -> None:
    loaded = FixtureSampler(GPU / "h200x2-loaded" / "nvml-loaded.json").sample()
    assert codes(HealthInputs(gpus=loaded)) == ["gpu_power_cap"]  # GPU 0 at 695 of 700 W
    idle = FixtureSampler(GPU / "h200" / "nvml.json").sample()
    assert codes(HealthInputs(gpus=idle)) == []  # "gpu_idle" is not a problem
    bad = Gpus(
        state="ok",
        devices=[
            Gpu(index=0, throttle_reasons=["hw_thermal_slowdown"]),
            Gpu(index=3, ecc_uncorrected=2),
        ],
    )
    found = evaluate(HealthInputs(gpus=bad))
    assert [f.code for f in found] == ["gpu_ecc_uncorrected", "gpu_throttling"]  # most severe first
    assert found[0].severity == "critical" and "GPU 3: 2" in found[0].title
    assert "GPU 0 (hw_thermal_slowdown)" in found[1].title


def test_every_finding_has_words_for_the_operator() -> None:
    everything = HealthInputs(
        speculating=True,
        accept_lengths=(1.0,) * 10,
        topk=4,
        running=300,
        queued=10,
        max_running_requests=256,
        cuda_graph_max_bs=64,
        adaptive_requested=True,
        adaptive_resolved=False,
        speculation_share=0.5,
        retractions_delta=4,
        gpus=Gpus(
            devices=[
                Gpu(index=0, throttle_reasons=["sw_thermal_slowdown", "sw_power_cap"], ecc_uncorrected=1)
            ]
        ),
    )
    found = evaluate(everything)
    assert len({f.code for f in found}) == len(found) == 10
    for f in found:
        assert len(f.explanation) > 80 and len(f.action) > 30, f.code


def test_a_gpu_that_stopped_answering_is_critical() -> None:
    lost = Gpus(
        state="error", detail="GPU(s) not answering (GPU 5: NVMLError_GpuIsLost)", devices=[Gpu(index=5)]
    )
    (f,) = evaluate(HealthInputs(gpus=lost))
    assert (f.code, f.severity) == ("gpu_not_answering", "critical") and "GPU 5" in f.explanation
    no_driver_yet = Gpus(state="error", detail="NVML would not start")  # the sampler, not a GPU
    assert evaluate(HealthInputs(gpus=no_driver_yet)) == []
