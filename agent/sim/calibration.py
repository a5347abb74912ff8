"""The one place where the simulated engine is calibrated to the measured Kimi K2.5 deployment.

The deployment: Kimi K2.5 INT4 (a ~1T-parameter MoE, 384 routed experts, 8 active per token,
61 layers, MLA attention) at TP 8 on 8 RTX PRO 6000 Blackwell GPUs over PCIe, SGLang 0.5.23,
EAGLE-3 tree drafting topk 4 / steps 2 / 16 draft tokens. Measured there (``docs/design.md``),
with 1024 input / 256 output tokens per request and a closed loop of ``c`` clients:

==========  ==================  ==================
concurrency  no speculation      EAGLE-3 2/4/16
==========  ==================  ==================
1            93 tok/s            96 tok/s
250          773 tok/s           354 tok/s
==========  ==================  ==================

and speculation behind at every concurrency from 2 up. ``ANCHORS`` lists these targets; the
calibration test (``tests/sim/test_calibration.py``) runs the engine model on its virtual clock and
checks each within ``ANCHOR_TOLERANCE``.

Why the model has the shape it has (each parameter below says what it stands for):

* A target forward pass of ``n`` query tokens costs a fixed part (kernel launches, the latency
  floor of 122 all-reduces per pass over PCIe, the dense and attention weights), then the larger
  of two (a roofline): reading the routed experts it touches (``n`` tokens touch
  ``1 − (1 − 8/384)^n`` of them, so a 16-token tree verify reads ~14× the expert weights of a
  single token: that is why the tree barely helps a single stream) or computing ``n`` tokens
  (which wins from a few hundred tokens on: a tree verify at batch 100 pushes 1,600 tokens through
  the 1T model), plus attention over the KV the batch reads. A verify reads each request's KV once
  per draft token (``verify_kv_factor`` 1: the tree-verify attention does not share KV reads
  across draft tokens), which is why speculation loses half the throughput at saturation, and why
  the crossover falls as contexts grow.
* ``experts_read_s`` is set from the hardware, not fitted: ~63 GB of INT4 routed experts per rank
  read at ~1.7 TB/s. ``fixed_s``, ``token_s``, ``prefill_token_s`` and ``kv_token_s`` are fitted to
  the four anchors (the fit is exact enough that each lands within 1 %).
* The EAGLE-3 draft is one dense layer plus the LM head: a small fixed and per-token cost per draft
  step; the draft-extend pass after each verify runs over every verified token, and over every
  prefilled token.
* A speculative round also pays a fixed overhead (tree building, verification sampling, the
  GPU→CPU sync). A round at 0 steps inside a speculative server is a plain decode step
  plus what the 0-step path adds, in milliseconds per round (``ZeroStepCosts``: the one-node verify
  and its bookkeeping, a fixed part and a part per request, plus the draft-extend pass over the
  batch unless the profile skips it), whose values and origin are recorded once, in
  ``ZERO_STEP_RECORD``; ``tests/sim/test_calibration.py`` checks that the engine model's off ÷
  baseline, measured the way the GPU benchmark measures it, equals the recorded ratio within
  ``ZERO_STEP_TOLERANCE``, for Kimi (an estimate) and for the deployment where it was measured
  (``agent.sim.calibration_h200``: the real engine on one H200). Public reports put the tax at
  +2 % … +22 % (vLLM: +1.9 % after its fix, +0.6 % when it skips K = 0). Patch 03's plain path
  (``zero_step = "plain"``) has its own, smaller costs (``SpecCosts.plain_zero_step``): measured on
  one H200 (``H200_PLAIN_ZERO_STEP``, ``agent.sim.calibration_h200_big``) and scaled to Kimi's GPUs
  by memory bandwidth (``PLAIN_ZERO_STEP_ESTIMATE``).
* Speculation costs KV capacity: the draft's weights come out of the same memory budget, the draft
  adds its share to every KV cell (``agent.sglang.kv.mla_cell_bytes``), and every running request
  keeps the widest candidate's reserve (``agent.sglang.kv.reserve_per_decode``).
* Acceptance: each request draws how predictable it is (``first_accept`` uniform in a range), the
  chance to accept draft position ``i`` given the previous ones falls geometrically with ``i``,
  and ``topk`` candidates per position miss less often (each extra candidate keeps ``topk_miss``
  of the remaining miss probability). At steps 3 / topk 1 this gives accept lengths of ~2.3-3.3
  per verify (mean ~2.75), in line with the public Kimi K2.5 EAGLE-3 drafters.

The model against the anchors (``tests/sim/test_calibration.py`` checks each within 5 %):

==========  ===========  =============  ===========  =============
concurrency  no spec      model          2/4/16       model
==========  ===========  =============  ===========  =============
1            93 tok/s     92.9 (-0.1 %)  96 tok/s     97.0 (+1.0 %)
250          773 tok/s    777.2 (+0.5 %) 354 tok/s    354.5 (+0.1 %)
==========  ===========  =============  ===========  =============

The steps 3 / topk 1 / 4 draft-token configuration is not calibrated separately: it follows from
the same parameters (fewer verify tokens, deeper chain): ~147 tok/s at concurrency 1, and
speculation stays ahead of 0-step rounds up to a running batch of 125 at this workload's mean
context (``CROSSOVER_CONTEXT``) on SGLang's verify path, which is the threshold kimi-k25-eagle3
carries; on patch 03's plain path (the profile's, with ``PLAIN_ZERO_STEP_ESTIMATE``) it is 124.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent.sglang.kv import DRAFT_WEIGHT_BYTES_PER_RANK


@dataclass(frozen=True)
class TargetCosts:
    """Seconds of one target (Kimi K2.5) forward pass, by part."""

    fixed_s: float
    """Per pass whatever its size: launches, all-reduce latency floor, dense/attention weights."""
    experts_read_s: float
    """Reading every routed expert of every layer once (INT4 weights of one rank)."""
    token_s: float
    """Per query token of a decode/verify pass once compute-bound: MoE/dense compute, all-reduce volume."""
    prefill_token_s: float
    """Per token of a prefill pass (large GEMMs run closer to peak than decode-shaped MoE)."""
    kv_token_s: float
    """Attention, per KV token a decoding request reads in one pass."""
    verify_kv_factor: float
    """Extra KV reads per additional query token of a request in a verify pass (tree attention)."""
    prefill_pair_s: float
    """Prefill attention per (query token, key token) pair."""
    eager_factor: float
    """Slow-down of a decode pass whose batch is above the largest captured CUDA graph."""
    routed_experts: int = 384
    active_experts: int = 8
    prefill_fixed_s: float | None = None
    """Per prefill pass whatever its size, where it differs from ``fixed_s`` (a prefill runs without CUDA
    graphs: on a small model its launches cost more than a graphed decode step's); None: ``fixed_s``."""


@dataclass(frozen=True)
class DraftCosts:
    """Seconds of one EAGLE-3 draft forward pass (one layer plus the LM head)."""

    fixed_s: float
    token_s: float


@dataclass(frozen=True)
class ZeroStepCosts:
    """What a round at 0 steps inside a speculative server costs beyond a plain decode step of the
    same batch in a server without a drafter, in seconds per round: the form the real engine showed.

    On one H200 (``bench/results/real-h200-2026-12-01``) "off" cost a fixed number of milliseconds
    more than a plain step, growing a little with the batch, whatever the step itself took; a ratio
    of the plain step cannot carry that from a 2 ms step to Kimi K2.5's 60-150 ms one. At 0 steps
    SGLang 0.5.23 builds a one-node verify and runs it through the TARGET_VERIFY graph for one draft
    token, does the verify's accept and KV bookkeeping, and runs the draft-extend pass over the batch
    (``eagle_worker_v2.py``; the last unless ``SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND``). The
    draft-extend pass is ``DraftCosts`` over the batch's tokens (``costmodel.zero_step_s``); the rest
    is these two numbers.
    """

    round_s: float
    """Per 0-step round: the verify path instead of the decode path, sampling, the GPU→CPU sync."""
    request_s: float
    """Per running request of the round: the accept and KV bookkeeping the verify path does per request."""


H200_PLAIN_ZERO_STEP = ZeroStepCosts(round_s=0.0001475, request_s=0.0000052)
"""MEASURED on the real engine (patched SGLang 0.5.23, one H200, the Llama-3-8B-shape target under
triton, ``bench/results/real-h200-2026-12-03-big``): what a 0-step round on patch 03's plain path
(``speculation.zero_step = "plain"``) costs beyond a plain decode step of a server without a
drafter. ``request_s`` and ``round_s`` are derived from two committed figures by
``agent.sim.calibration_h200_big.plain_zero_step_from`` (a test keeps these literals equal to it):

* ``round_s``: off's mean time per output token minus the baseline's at c = 1 (``compare-chain-1.json``:
  4.657 − 4.509 ms), the one level where a round is one request's step;
* ``request_s``: the plain round's GPU time outside the target forward and the sampling a plain server
  runs too (``timing-big-chain-triton.json``, ``zero_plain``: prepare 0.396 ms, input, commit, the
  empty draft extend: 0.449 ms in all at 58 requests), less ``round_s``, over the 58 requests.

Under fa3 the same stages take 0.08 ms (``timing-big-chain-fa3.json``): the cost is the triton
backend's decode metadata, built outside the decode graph once a round. Every shipped profile runs
triton, so the triton figure is the one the model carries."""

H200_HBM_BYTES_S = 4.8e12
"""An H200's memory bandwidth (bytes/s)."""
KIMI_HBM_BYTES_S = 1.7e12
"""An RTX PRO 6000 Blackwell's memory bandwidth as this model uses it (``experts_read_s`` is set from it)."""


def scaled(costs: ZeroStepCosts, factor: float) -> ZeroStepCosts:
    """``costs`` ``factor`` times as long (both parts), rounded to 0.1 µs."""
    return ZeroStepCosts(
        round_s=round(costs.round_s * factor, 7), request_s=round(costs.request_s * factor, 8)
    )


PLAIN_ZERO_STEP_ESTIMATE = scaled(H200_PLAIN_ZERO_STEP, H200_HBM_BYTES_S / KIMI_HBM_BYTES_S)
"""ESTIMATE for Kimi K2.5 on 8 RTX PRO 6000: the plain 0-step path's cost beyond a plain decode step,
scaled from the H200 measurement (``H200_PLAIN_ZERO_STEP``) the way the rest of Kimi's hardware-bound
figures are set: by memory bandwidth (the experts' read, ``TargetCosts.experts_read_s``, is ~63 GB at
``KIMI_HBM_BYTES_S``). The extra is small GPU kernels that build the decode batch's metadata (index
tensors of the batch, not weights): the same work on every rank at TP 8, bound by memory, not by the
model's size, so neither the step's length nor the layer count scales it, and the H200's 4.8 TB/s
against 1.7 TB/s makes it 2.8 times as long: 0.42 ms a round plus 0.015 ms a request (4 % of a plain
step at one request, 3.4 % at a batch of 125; off ÷ baseline 0.95-0.96 at every level through the
model, ``bench/studies/zero_step_tax.py``). Never measured on the Kimi host: a comparison there
(``agent bench compare --baseline-url``, then ``python -m bench.studies.zero_step_tax --from … --path plain``)
replaces it."""


@dataclass(frozen=True)
class ArrivalCosts:
    """What a request's arrival costs a speculative server beyond its prefill on a server without a
    drafter, besides the draft's extend pass over its prompt (``Calibration.prefill_draft_factor``).

    Measured on the real engine (``bench/results/real-h200-2026-12-06``): once patch 03's plain
    0-step round cost what a plain decode step costs, "off" still lost 4-14 % to a server without a
    drafter, and at c=64 a request's time per output token was 10.5 ms against 8.7 ms and its first
    token 49-76 ms against 33-57 ms, with decode rounds of 6.9 ms on both: the rest is between
    decode rounds, in requests arriving (the target's extend with the hidden states the draft needs,
    the draft's extend, any extra scheduler round or sync) and leaving. The model charges it per
    request whose prefill completes, on that prefill pass (it holds up every running request, as the
    real one does); ``request_s`` is fitted to the real comparison (``agent.sim.arrivals``), not
    derived part by part: ``bench/real`` measures the parts (issue 36, step 1), and a figure from
    there replaces it.
    """

    request_s: float = 0.0
    """Seconds per arriving request on the prefill pass that completes it."""
    at_zero_steps: bool = True
    """False: the patched arrival path (issue 36, step 2): a request that arrives while the batch runs
    at 0 steps (patch 03's plain path) costs what it costs a server without a drafter (no draft
    extend, no ``request_s``); its draft catches up over its prompt when speculation resumes
    (``zero_step_path.ZeroStepBook.plain_prefill``, counted as patch 03 counts ``plain_prefills``)."""


NO_ARRIVAL_COST = ArrivalCosts()
"""Kimi K2.5's: never measured on its host; the H200's figure is not carried over (what it would give
is one of ``bench/studies/zero_step_tax.py``'s lines)."""


@dataclass(frozen=True)
class SpecCosts:
    round_overhead_s: float
    """Per speculative round (steps > 0): tree mask, verification sampling, GPU→CPU sync."""
    zero_step: ZeroStepCosts
    """"0 steps is not free": what a 0-step round adds to a plain decode step (``ZeroStepCosts``) on
    SGLang's own path (``zero_step = "verify"``). Its values come from a ``ZeroStepRecord``, which says
    where they came from. The draft's pass over prefilled tokens is not part of it
    (``Calibration.prefill_draft_factor``), nor is the KV the drafter holds."""
    plain_zero_step: ZeroStepCosts = PLAIN_ZERO_STEP_ESTIMATE
    """The same on patch 03's plain path (``zero_step = "plain"``): the decode graph, no draft extend,
    the decode batch's metadata built outside the graph (Kimi: ``PLAIN_ZERO_STEP_ESTIMATE``)."""
    arrival: ArrivalCosts = NO_ARRIVAL_COST
    """What an arriving request costs the speculative server beyond the draft's extend over its prompt
    (``ArrivalCosts``): a named parameter of its own, so that the patched arrival path's figure can
    replace it."""


@dataclass(frozen=True)
class ZeroStepRecord:
    """Off ÷ baseline output throughput per concurrency level, and the zero-step costs that reproduce it.

    "Off" is the speculative server forced to 0 steps at every batch size (live threshold 1, the
    ``off`` arm of ``agent bench compare``); "baseline" is the same target launched without a
    drafter (its ``--baseline-url`` arm). ``zero_step`` are the costs with which the engine model,
    run with the record's calibration and profiles (``agent.sim.zerostep``), reproduces these ratios
    within ``ZERO_STEP_TOLERANCE`` where they were fitted to them (``tests/sim/test_zero_step.py``;
    ``bench/studies/zero_step_tax.py`` prints the model against every record and fits the costs to a new
    result file), or inside the comparison's noise band where they were derived from a timing table
    instead (the GPU-bound H200's plain record, ``tests/sim/test_zero_step_big.py``; its source says so).
    """

    zero_step: ZeroStepCosts
    off_over_baseline: tuple[tuple[int, float], ...]
    """(concurrency, off ÷ baseline) at each level the costs must reproduce."""
    measured: bool
    """False while the ratios are an estimate, not a measurement on a real engine."""
    source: str
    """Where the ratios came from: the run, the hardware, the models, the command and result file."""
    spec_profile: str
    baseline_profile: str
    """The profiles (repository paths) the comparison ran, and the engine model runs, with."""
    skip_zero_step_draft_extend: bool = False
    """The setting the off arm ran with (``speculation.skip_zero_step_draft_extend``); the test wants
    ``spec_profile`` to carry the same setting."""
    zero_step_path: str = "verify"
    """The 0-step path the off arm ran (``speculation.zero_step``): ``verify`` (SGLang's own, before
    patch 03) or ``plain``. The engine model runs the record's profile on this path, and ``zero_step``
    are that path's costs."""
    input_len: int = 1024
    output_len: int = 256
    results: tuple[str, ...] = ()
    """The result files (repository paths) of a measured record: ``agent bench compare --json`` runs
    of the same comparison, pooled per level (mean off over mean baseline)."""
    arrival: ArrivalCosts | None = None
    """The arrival costs the model runs the record with (None: the calibration's own)."""


@dataclass(frozen=True)
class Acceptance:
    first_accept_min: float
    first_accept_max: float
    """Per request: probability that the first draft token is accepted (uniform in this range)."""
    depth_decay: float
    """Each further draft position is accepted with this factor times the previous probability."""
    topk_miss: float
    """Each extra top-k candidate keeps this fraction of the remaining miss probability."""


@dataclass(frozen=True)
class Memory:
    """Memory figures of one rank, as ``/server_info`` → ``memory_usage`` reports them (GiB)."""

    draft_weight_bytes_per_rank: int
    """EAGLE-3 draft weights on one rank (one layer, its share of the LM head), taken from the KV budget."""
    target_weight_gb: float = 69.3
    """Kimi K2.5 INT4 weights on one of 8 ranks (~555 GB in all)."""
    startup_available_gb: float = 93.7
    """Free memory of an RTX PRO 6000 when SGLang starts."""
    graph_gb: tuple[tuple[str, float], ...] = (
        ("prefill", 1.5),
        ("decode", 0.9),
        ("target_verify", 1.1),
        ("draft_prefill", 0.0),
        ("draft_decode", 0.3),
        ("draft_extend", 0.3),
    )
    """CUDA-graph memory per phase (target and draft merged, as SGLang reports it)."""
    default_chunked_prefill_size: int = 8192
    """SGLang's default for 90-160 GiB cards (reference §3.3)."""
    default_graph_max_bs: int = 512
    """SGLang's default decode CUDA-graph max batch for 90-160 GiB cards at TP >= 4."""


@dataclass(frozen=True)
class Calibration:
    target: TargetCosts
    draft: DraftCosts
    spec: SpecCosts
    acceptance: Acceptance
    memory: Memory
    prefill_draft_factor: float
    """A speculative server also runs the draft over every prefilled token (draft extend)."""
    gpu: str = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    """The GPU the costs are of (one per TP rank), as NVML names it: what the simulator says it models
    (``agent.wire.bench_env.SIMULATED_HOST_PATH``)."""


ZERO_STEP_PROFILE_SPEC = "profiles/kimi-k25-eagle3.toml"
ZERO_STEP_PROFILE_BASELINE = "profiles/kimi-k25-baseline.toml"
"""The profiles the Kimi K2.5 off ÷ baseline comparison runs the engine model with (adaptive 3/1/4, and no drafter)."""

ZERO_STEP_RECORD = ZeroStepRecord(
    zero_step=ZeroStepCosts(round_s=0.0004, request_s=0.0),
    off_over_baseline=((64, 0.950), (128, 0.947)),
    measured=False,
    source=(
        "ESTIMATE for Kimi K2.5: never measured on its host. A 0-step round costs a plain decode step, "
        "the draft's extend pass over the batch and 0.4 ms, from the +2 … +22 % of public reports: "
        "+10 % at batch 1 falling to +3.7 % at batch 125, where it keeps the crossover (125). Through "
        "the model (roomy KV, 1024/256) off ÷ baseline is about 0.95 at c = 64 and 128. The real engine "
        "(one H200, tiny models, agent.sim.calibration_h200) measured the 0-step path at about 1.4 ms a "
        "round plus 0.02 ms a request (three runs pooled); carried over as they are, Kimi's off ÷ "
        "baseline would be 0.93 at c = 64 and 128 and its crossover would move from 125 to 139 (131 "
        "with the skip). Replace "
        "with agent bench compare --baseline-url on the Kimi host and python -m bench.studies.zero_step_tax --from."
    ),
    spec_profile=ZERO_STEP_PROFILE_SPEC,
    baseline_profile=ZERO_STEP_PROFILE_BASELINE,
)
"""Where Kimi K2.5's zero-step costs come from (an estimate until measured on its host)."""
ZERO_STEP_TOLERANCE = 0.02
"""The engine model's off ÷ baseline must equal the recorded ratio within 2 points at every recorded level."""


CALIBRATION = Calibration(
    target=TargetCosts(
        fixed_s=0.00912,
        experts_read_s=0.037,
        token_s=0.0001473,
        prefill_token_s=0.0001628,
        kv_token_s=0.1613e-6,
        verify_kv_factor=1.0,
        prefill_pair_s=0.02e-6,
        eager_factor=1.25,
    ),
    draft=DraftCosts(fixed_s=0.00060, token_s=0.000012),
    spec=SpecCosts(round_overhead_s=0.0015, zero_step=ZERO_STEP_RECORD.zero_step),
    acceptance=Acceptance(first_accept_min=0.65, first_accept_max=0.92, depth_decay=0.92, topk_miss=0.7),
    memory=Memory(draft_weight_bytes_per_rank=DRAFT_WEIGHT_BYTES_PER_RANK),
    prefill_draft_factor=1.0,
)


DRAFT_ACCEPTANCE: dict[str, Acceptance | None] = {
    "calibrated": None,  # CALIBRATION.acceptance: the Kimi K2.5 EAGLE-3 drafters
    "oracle": Acceptance(first_accept_min=1.0, first_accept_max=1.0, depth_decay=1.0, topk_miss=0.0),
    "random": Acceptance(first_accept_min=0.0, first_accept_max=0.0, depth_decay=1.0, topk_miss=1.0),
}
"""``agent sim --draft-acceptance``: the calibrated drafter, or the two tiny EAGLE-3 heads of
``agent smoke``: ``oracle`` (every draft accepted: accept length = steps + 1) and ``random``
(no draft accepted: accept length 1)."""


def with_draft_acceptance(name: str, calibration: Calibration = CALIBRATION) -> Calibration:
    if name not in DRAFT_ACCEPTANCE:
        raise ValueError(f"draft acceptance must be one of {', '.join(DRAFT_ACCEPTANCE)}, got {name!r}")
    acceptance = DRAFT_ACCEPTANCE[name]
    return calibration if acceptance is None else replace(calibration, acceptance=acceptance)


@dataclass(frozen=True)
class Anchor:
    """One measured figure the model must reproduce."""

    concurrency: int
    speculative: bool
    output_tok_s: float
    input_len: int = 1024
    output_len: int = 256


ANCHORS: tuple[Anchor, ...] = (
    Anchor(concurrency=1, speculative=False, output_tok_s=93.0),
    Anchor(concurrency=1, speculative=True, output_tok_s=96.0),
    Anchor(concurrency=250, speculative=False, output_tok_s=773.0),
    Anchor(concurrency=250, speculative=True, output_tok_s=354.0),
)
ANCHOR_TOLERANCE = 0.05
"""Relative tolerance of each anchor in the calibration test."""

ANCHOR_PROFILE_SPEC = "profiles/kimi-k25-eagle3-tree.toml"
ANCHOR_PROFILE_BASELINE = "profiles/kimi-k25-baseline.toml"
"""The profiles the anchors were measured with (the tree config and the same server without speculation)."""

CROSSOVER_CONTEXT = 1024 + 256 // 2
"""Mean context of a request of the anchor workload over its decode: where the crossover is read.

``agent.sim.costmodel.crossover_batch`` at this context gives the speculation threshold the model
recommends; for steps 3 / topk 1 / 4 draft tokens it is the ``threshold`` of
``profiles/kimi-k25-eagle3.toml`` (a test keeps them equal). It falls as contexts grow (attention
over each verify token's KV), so long-context traffic wants a lower threshold. The demo profile
(``profiles/local-sim.toml``) carries instead what its own benchmark finds by concurrency, a little
lower because a closed loop at concurrency C runs fewer than C requests at once on average
(``tests/sim/test_demo_story.py``).
"""
