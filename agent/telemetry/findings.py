"""Health findings: what is wrong with a running deployment, why it matters and what to do.

Each rule is a small pure function of ``HealthInputs`` (what the collector saw this tick and over
its recent window), so that a rule can be tested by building its inputs, and an operator reads the
same words in the console and in ``agent status``. The thresholds are deliberately conservative: a
finding that cries wolf is one an operator learns to ignore.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from agent.telemetry.throttle import HARMFUL, POWER_CAP
from agent.wire import Finding, Gpus

ACCEPT_STUCK_MAX: Final = 1.15
"""Accept length (tokens per verify, incl. the bonus token) below which the drafter helps nobody."""
ACCEPT_STUCK_MIN_SAMPLES: Final = 5
"""Ticks of speculating traffic needed before "stuck near 1.0" is believed."""
SPEC_KV_SHARE_WARN: Final = 0.10
"""Share of the KV pool held as speculative look-ahead at which retractions come sooner."""


@dataclass(frozen=True)
class HealthInputs:
    """Everything the rules look at; None means unknown and never triggers a rule."""

    speculating: bool = False
    algorithm: str | None = None
    draft_path: str | None = None
    accept_lengths: tuple[float, ...] = ()
    """Accept-length readings of recent ticks while speculating with traffic, each over a window
    spent drafting (``agent.telemetry.drafting``), oldest first."""
    accept_length: float | None = None
    """This tick's reading when it is one of those (the number the snapshot shows)."""
    topk: int | None = None
    running: int | None = None
    queued: int | None = None
    max_running_requests: int | None = None
    cuda_graph_max_bs: int | None = None
    decode_passes_no_graph_delta: float | None = None
    adaptive_requested: bool = False
    adaptive_resolved: bool | None = None
    adaptive_off_reason: str | None = None
    speculation_share: float | None = None
    reserve_on: int | None = None
    reserve_off: int | None = None
    retractions_delta: float | None = None
    retraction_window_s: float | None = None
    gpus: Gpus = field(default_factory=Gpus)


def accept_length_stuck(i: HealthInputs) -> Finding | None:
    recent = i.accept_lengths[-ACCEPT_STUCK_MIN_SAMPLES:]
    if not i.speculating or len(recent) < ACCEPT_STUCK_MIN_SAMPLES:
        return None
    mean = sum(recent) / len(recent)
    if mean > ACCEPT_STUCK_MAX:
        return None
    algo = i.algorithm or "the configured algorithm"
    said = (
        f"accept length {i.accept_length:.2f}"
        if i.accept_length is not None
        else f"accept length {mean:.2f} over the last {len(recent)} readings"
    )
    return Finding(
        code="accept_length_stuck",
        severity="warning",
        title=f"Speculation accepts almost nothing ({said})",
        explanation=(
            f"Over the last {len(recent)} readings each verify step kept {mean:.2f} tokens, about the "
            "one token a step makes without any drafting, so the draft model costs time and KV and "
            f"buys nothing. The usual cause with Kimi K2.5 is a draft that does not match {algo}: an "
            "EAGLE (v1/v2) draft run with --speculative-algorithm EAGLE3, or the reverse, loads "
            "without error and then predicts nothing (sglang#21272). A draft trained for another "
            "target model does the same."
        ),
        action=(
            f"Check that the draft model ({i.draft_path or 'speculation draft path'}) is an EAGLE-3 "
            "draft for this exact target, and that the algorithm says EAGLE3. Until it is fixed, set "
            "the speculation threshold to 1 (never speculate) or run the baseline profile."
        ),
    )


def cuda_graph_below_max_running(i: HealthInputs) -> Finding | None:
    if i.cuda_graph_max_bs is None or i.max_running_requests is None:
        return None
    if i.cuda_graph_max_bs >= i.max_running_requests:
        return None
    seen = ""
    if i.decode_passes_no_graph_delta:
        seen = f" SGLang ran {i.decode_passes_no_graph_delta:.0f} decode passes without a graph recently."
    return Finding(
        code="cuda_graph_below_max_running",
        severity="warning",
        title=f"CUDA graphs stop at batch {i.cuda_graph_max_bs}, requests go up to {i.max_running_requests}",
        explanation=(
            f"SGLang captures decode CUDA graphs up to batch size {i.cuda_graph_max_bs}, but admits up to "
            f"{i.max_running_requests} running requests. Larger batches decode eagerly, launching every "
            f"kernel from Python, which is much slower per step exactly when the server is busiest.{seen}"
        ),
        action=(
            f"Set server.cuda_graph_max_bs to at least {i.max_running_requests} (costs GPU memory at start-up), "
            "or lower server.max_running_requests to the captured size. Both need a restart."
        ),
    )


def topk_with_batch(i: HealthInputs) -> Finding | None:
    if not i.speculating or i.topk is None or i.topk <= 1 or i.running is None or i.running <= 1:
        return None
    return Finding(
        code="topk_with_batch",
        severity="warning",
        title=f"Tree drafting (topk {i.topk}) with {i.running} requests running",
        explanation=(
            f"With topk {i.topk} every request verifies a tree of draft tokens each step, so the target "
            "model does several times the work per request. That pays off for one stream, but with "
            "more than one request the GPUs are already busy and the extra verify work lowers total "
            "throughput. SGLang's adaptive mode, and so the live threshold, needs topk 1."
        ),
        action=(
            "Use chain drafting (topk 1, e.g. the kimi-k25-eagle3 profile) with adaptive mode and a "
            "threshold, or keep this profile only for single-stream use. Changing topk needs a restart."
        ),
    )


def adaptive_silently_off(i: HealthInputs) -> Finding | None:
    if not i.adaptive_requested or i.adaptive_resolved is not False:
        return None
    reason = i.adaptive_off_reason or "SGLang logged 'speculative_adaptive disabled: <reason>' at start-up"
    return Finding(
        code="adaptive_silently_off",
        severity="warning",
        title="Adaptive speculation was asked for but SGLang turned it off",
        explanation=(
            "The profile enables adaptive speculation, but the server reports speculative_adaptive = "
            f"false: SGLang 0.5.23 fell back to static speculation without failing. Reason: {reason}. "
            "Without adaptive mode the server speculates at every batch size and the live threshold "
            "and step controls do nothing."
        ),
        action=(
            "Remove what SGLang names above (adaptive needs topk 1, no attention DP, no multi-layer "
            "EAGLE, no two-batch overlap, no PD multiplexing) and restart."
        ),
    )


def queueing(i: HealthInputs) -> Finding | None:
    if not i.queued or i.running is None or i.max_running_requests is None:
        return None
    if i.running < i.max_running_requests:
        return None
    return Finding(
        code="queueing",
        severity="info",
        title=f"{i.queued} requests wait: the server runs its maximum of {i.max_running_requests}",
        explanation=(
            f"Clients send more concurrent requests than max_running_requests ({i.max_running_requests}); "
            "the rest wait in SGLang's queue, so their time to first token grows with the queue. This "
            "is correct behaviour, but it means the cap, not the GPUs, sets the concurrency."
        ),
        action=(
            "If the KV pool has room (see the KV view), raise server.max_running_requests (restart); "
            "otherwise the queue is the price of the load. With speculation on, a lower threshold frees "
            "KV look-ahead for more requests."
        ),
    )


def speculation_kv_share(i: HealthInputs) -> Finding | None:
    if i.speculation_share is None or i.speculation_share < SPEC_KV_SHARE_WARN:
        return None
    per = ""
    if i.reserve_on is not None and i.reserve_off is not None:
        per = f" Each running request holds {i.reserve_on} tokens ahead instead of {i.reserve_off}."
    return Finding(
        code="speculation_kv_share",
        severity="warning" if i.speculation_share >= 2 * SPEC_KV_SHARE_WARN else "info",
        title=f"Speculation holds {i.speculation_share:.0%} of the KV pool",
        explanation=(
            "SGLang reserves look-ahead KV slots for every decoding request, sized by the widest "
            f"draft the server can run, even in steps where it does not speculate.{per} That memory is "
            "not available to other requests, so the server retracts requests sooner under load."
        ),
        action=(
            "Lower speculation steps/topk (fewer look-ahead slots), or turn speculation off above a "
            "concurrency threshold; with adaptive mode, drop the widest candidate step count (restart)."
        ),
    )


def retractions(i: HealthInputs) -> Finding | None:
    if not i.retractions_delta or i.retractions_delta <= 0:
        return None
    window = f" in the last {i.retraction_window_s:.0f} s" if i.retraction_window_s else ""
    return Finding(
        code="retractions",
        severity="warning",
        title=f"{i.retractions_delta:.0f} requests retracted{window}",
        explanation=(
            "The KV cache pool ran out: SGLang took running requests back to the queue and will "
            "recompute their tokens later, so work is thrown away and their latency jumps. "
            "Speculative look-ahead makes this happen at a lower concurrency."
        ),
        action=(
            "Lower server.max_running_requests, turn speculation off above a concurrency threshold, "
            "or give the KV cache more memory (mem_fraction_static, fp8 KV cache). Restart needed for all "
            "but the threshold."
        ),
    )


def gpu_health(i: HealthInputs) -> list[Finding]:
    found: list[Finding] = []
    if i.gpus.state == "error" and i.gpus.devices:
        found.append(
            Finding(
                code="gpu_not_answering",
                severity="critical",
                title="A GPU stopped answering the driver",
                explanation=(
                    f"NVML reports: {i.gpus.detail or 'a device error'}. A GPU that fell off the bus or "
                    "needs a reset stalls every tensor-parallel step; SGLang will hang or crash."
                ),
                action=(
                    "Drain and stop the server, check dmesg for Xid errors, reset the GPU "
                    "(nvidia-smi -r -i N) or reboot the host, then start the server again."
                ),
            )
        )
    hot = [(g.index, [r for r in g.throttle_reasons if r in HARMFUL]) for g in i.gpus.devices]
    hot = [(idx, reasons) for idx, reasons in hot if reasons]
    if hot:
        where = ", ".join(f"GPU {idx} ({' + '.join(r)})" for idx, r in hot)
        found.append(
            Finding(
                code="gpu_throttling",
                severity="warning",
                title=f"GPU clocks held down by heat or power protection: {where}",
                explanation=(
                    "The driver reports a hardware or thermal slowdown: the GPU runs below its clocks "
                    "to protect itself. With tensor parallelism the slowest GPU sets the pace of all."
                ),
                action="Check cooling, fans and power delivery of the named GPUs (nvidia-smi -q -d PERFORMANCE,TEMPERATURE).",
            )
        )
    capped = [g.index for g in i.gpus.devices if POWER_CAP in g.throttle_reasons]
    if capped:
        found.append(
            Finding(
                code="gpu_power_cap",
                severity="info",
                title=f"GPU {', '.join(map(str, capped))} at the power limit",
                explanation=(
                    "The driver holds the clocks to stay within the board power limit. Under full load "
                    "this is normal; it only matters if the limit was lowered from the card's default."
                ),
                action="Compare power.limit with power.default_limit (nvidia-smi -q -d POWER).",
            )
        )
    bad_ecc = [(g.index, g.ecc_uncorrected) for g in i.gpus.devices if g.ecc_uncorrected]
    if bad_ecc:
        where = ", ".join(f"GPU {idx}: {n}" for idx, n in bad_ecc)
        found.append(
            Finding(
                code="gpu_ecc_uncorrected",
                severity="critical",
                title=f"Uncorrected ECC memory errors ({where})",
                explanation=(
                    "GPU memory returned data it could not correct since the driver loaded. Results "
                    "computed on that GPU may be wrong, and the GPU may need a reset or replacement."
                ),
                action=(
                    "Drain and stop the server, check nvidia-smi -q -d ECC,PAGE_RETIREMENT / row remapping, "
                    "reset the GPU, and contact the provider if the count rises again."
                ),
            )
        )
    return found


RULES: Final[tuple[Callable[[HealthInputs], Finding | None], ...]] = (
    accept_length_stuck,
    adaptive_silently_off,
    cuda_graph_below_max_running,
    topk_with_batch,
    queueing,
    speculation_kv_share,
    retractions,
)


def evaluate(inputs: HealthInputs) -> list[Finding]:
    """Every finding that holds now, most severe first."""
    found = [f for f in (rule(inputs) for rule in RULES) if f is not None]
    found.extend(gpu_health(inputs))
    order = {"critical": 0, "warning": 1, "info": 2}
    return sorted(found, key=lambda f: order[f.severity])
