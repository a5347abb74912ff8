"""Zero-step rounds as plain decodes: the decisions (k25console patch 03).

SGLang 0.5.23 runs a 0-step round (adaptive speculation at or above the live threshold)
through the speculative worker: a one-token TARGET_VERIFY forward through the target-verify
graph, then (unless ``SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND``) a draft-extend pass. Measured
on a GPU-bound target (Llama-3-8B shape, one H200): such a round delivers 0.45 of a plain decode
step's throughput at 64 running requests under the triton backend, whose verify path is an
extend kernel. Patch 03 runs a 0-step round as the target's own decode instead
(``ForwardMode.DECODE`` through a decode graph built for it at start-up), keeps no draft state
warm while it does, and catches the draft up over the last tokens it missed when speculation
resumes.

This module holds every decision of that, with no torch and no SGLang imports, so it can be
tested alone (``k25_zero_step_runtime`` is the torch side):

* ``ZeroStepConfig``: the launch path (``plain`` or ``verify``, from the adaptive config's
  ``k25_zero_step`` key) and the live one (``/set_internal_state`` key
  ``adaptive_spec_zero_step``), validated identically on every TP rank.
* ``plain_ineligible_reason``: why one batch must take SGLang's verify path instead.
* ``ReservePlanner``: the KV a decode batch reserves per request. SGLang reserves
  ``2 x max(steps x topk, max draft tokens)`` whatever the step count (8 slots at 3 steps);
  a server without a drafter needs 1 a step. A batch routed to the fixed 0-step slot reserves
  ``1 + what the batch in flight may still commit`` (2 in steady state), and is recorded as
  planned so that its forward runs at 0 steps whatever happens in between.
* ``StreakBook``: which request slots decoded without the draft since their last catch-up (the
  runtime finds how many positions each can re-extend on the GPU).
* ``prefill_joins_zero``: whether a prefill joins a batch that decodes at 0 steps; such a prefill
  runs as a plain server's (the target keeps only each request's last hidden state, no draft
  extend), and the catch-up makes the new request's draft state when drafting resumes.
* ``RoundTimingBook``: stage timings of sampled rounds, for the committed timing table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sglang.srt.speculative.k25_zero_step_host import METER, host_readback

ZERO_STEP_KEY = "adaptive_spec_zero_step_plain"
"""``/set_internal_state`` key: 1 = the plain decode, 0 = SGLang's own 0-step path (verify).

An integer because ``SetInternalStateReq.server_args`` is ``Dict[str, Union[int, float]]``: the
HTTP layer refuses any other value before a handler sees it."""
ROUND_TIMING_KEY = "k25_round_timing"
"""``/set_internal_state`` key: time the next N rounds part by part (0 clears the table)."""
CONFIG_KEY = "k25_zero_step"
"""Global key of the adaptive config JSON: the launch path (absent: ``plain``)."""
READBACK_FIELD = "zero_step"
"""Field of ``adaptive_spec_live`` (patch 02's read-back) that this patch adds."""
TIMING_FIELD = "k25_round_timing"
"""Field of ``internal_states[i]`` holding the timing table (any server, drafter or not)."""

PLAIN = "plain"
VERIFY = "verify"
PATHS = (PLAIN, VERIFY)
PATH_OF_VALUE = {1: PLAIN, 0: VERIFY}
"""The live key's values and the paths they select."""
MAX_TIMED_ROUNDS = 100_000


def check_path(value: Any, plain_built: bool) -> str | None:
    """Why ``value`` cannot select the 0-step path, or None when it can."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in PATH_OF_VALUE:
        return f"{ZERO_STEP_KEY} must be 1 (plain decode) or 0 (SGLang's verify path), got {value!r}"
    if PATH_OF_VALUE[value] == PLAIN and not plain_built:
        return (
            f"{ZERO_STEP_KEY}=1 needs the plain decode state, which was not built "
            "at start-up (see the engine log's 'k25 zero-step' line)"
        )
    return None


def check_timing_rounds(value: Any) -> str | None:
    """Why ``value`` cannot be a number of rounds to time, or None when it can."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{ROUND_TIMING_KEY} must be an integer >= 0, got {value!r}"
    if value < 0 or value > MAX_TIMED_ROUNDS:
        return f"{ROUND_TIMING_KEY} must be between 0 and {MAX_TIMED_ROUNDS}, got {value}"
    return None


def launch_path(config: dict[str, Any]) -> str:
    """The path an adaptive config asks for at launch; a wrong value fails the start."""
    value: str = config.get(CONFIG_KEY, PLAIN)
    if value not in PATHS:
        raise ValueError(f"adaptive config {CONFIG_KEY} must be one of {list(PATHS)}, got {value!r}")
    return value


class ZeroStepConfig:
    """The path in force; ``plain_built`` says whether the plain decode state exists."""

    def __init__(self, path: str) -> None:
        self.launch_path = path
        self.path = path
        self.plain_built = False
        self.build_error: str | None = None

    def mark_built(self, error: str | None) -> None:
        """After start-up: without the plain state every 0-step round takes the verify path."""
        self.plain_built = error is None
        self.build_error = error
        if error is not None:
            self.path = VERIFY

    @property
    def plain(self) -> bool:
        return self.path == PLAIN and self.plain_built


def plain_ineligible_reason(facts: dict[str, Any]) -> str | None:
    """Why a 0-step batch takes SGLang's verify path, or None for the plain decode.

    ``facts`` are read off the batch by the runtime (``batch_facts``); each is a feature the
    plain decode does not carry over from the verify path: a grammar's mask and logprobs are
    computed by the verify sampler, a hierarchical-sparse or mamba model keeps state per
    verified token, M-RoPE positions are built for the verify layout, and a watermark hooks the
    verify tree.
    """
    checks = (
        ("idle", "an idle batch"),
        ("has_grammar", "a grammar-constrained request"),
        ("return_logprob", "a request asking for logprobs"),
        ("hisparse", "hierarchical sparse attention"),
        ("mamba", "mamba state tracking"),
        ("mrope", "M-RoPE positions"),
        ("watermark", "a watermark"),
        ("input_embeds", "input embeddings"),
    )
    for key, words in checks:
        if facts.get(key):
            return words
    return None


STALE_DECODE_S = 1.0
"""A decode round older than this says nothing of the batch a prefill joins: the server was idle."""


def prefill_joins_zero(
    threshold: int, running: int, running_zero: bool, arriving: int, since_decode_s: float
) -> bool:
    """Whether a prefill of ``arriving`` requests joins a batch that decodes at 0 steps.

    Measured on the real engine (one H100, 2026-12-06, ``bench/results/real-h100-2026-12-06-arrivals``):
    at 0 steps an arrival's draft extend costs the GPU about 1.3 us a prompt token and its ring put
    blocked the host for the whole target extend; neither is used while the batch decodes at 0
    steps. So a prefill that joins such a batch (the last decode ran at 0 steps, recently, and the
    batch with the new requests is still at or above the live threshold) runs as a plain server's,
    and the draft state of its requests is made on the first drafting round after it, by the
    catch-up, as for any request that decoded without the draft. If requests finish meanwhile and
    the batch drops below the threshold, the next round drafts and the catch-up runs then.
    """
    if threshold <= 0 or not running_zero or since_decode_s > STALE_DECODE_S:
        return False
    return running + arriving >= threshold


class ReservePlanner:
    """KV slots a decode batch reserves per request beyond what it has committed.

    The scheduler prepares a batch and launches its forward in the same loop iteration, with
    no request handling in between (``event_loop_overlap``), so a batch that routes to the
    fixed 0-step slot when prepared also routes there when launched. The forward still checks
    (``_k25_zero_planned``): a batch planned at 0 steps runs at 0 steps, whatever moved.

    Under overlap the batch in flight has not committed yet; SGLang's reserve doubles its
    per-step length to cover it. Here the in-flight batch's own length is used when it is known:
    1 for a 0-step decode. After a speculating decode, an extend, or nothing yet, the in-flight
    batch is assumed to commit SGLang's full per-step length, as SGLang itself assumes.
    """

    def __init__(self) -> None:
        self.inflight_tokens: int | None = None  # None: nothing launched yet, assume the worst

    def reserve(self, zero: bool, alloc_len_per_decode: int, default_reserve: int) -> int:
        if not zero:
            return default_reserve
        inflight = alloc_len_per_decode if self.inflight_tokens is None else self.inflight_tokens
        return min(default_reserve, 1 + inflight)

    def launched(self, decode: bool, zero: bool) -> None:
        self.inflight_tokens = 1 if (decode and zero) else None


class StreakBook:
    """Which request slots decoded without the draft since their last catch-up (the CPU side).

    A 0-step plain round marks its requests; an extend (a new request, or a chunk of one) clears its
    slots, whose draft state the extend made current; a catch-up clears the batch it ran for. The
    positions themselves, and how many of them a request can re-extend, are found on the GPU
    (``HiddenRing.run_lengths``): SGLang keeps no CPU copy of the sequence lengths on every path.
    """

    def __init__(self) -> None:
        self._missed: set[int] = set()

    @property
    def pending(self) -> bool:
        """Some request decoded without the draft and has not been caught up (the drafting path's
        one check per round while nothing is pending)."""
        return bool(self._missed)

    def pending_in(self, slots: Sequence[int]) -> bool:
        return any(slot in self._missed for slot in slots)

    def missed(self, slots: Sequence[int]) -> None:
        self._missed.update(slots)

    def caught_up(self, slots: Sequence[int]) -> None:
        self._missed.difference_update(slots)

    def __len__(self) -> int:
        """Slots marked: at most the request pool's (a slot is marked, never a request)."""
        return len(self._missed)


class RoundTimingBook:
    """Stage timings of sampled rounds: host and GPU milliseconds, by round kind.

    A kind is what the round was: ``zero_plain`` and ``zero_verify`` (0 steps by either path),
    ``spec`` (drafting) or ``decode`` (a server without a drafter). The runtime records one
    round as ``(kind, batch_size, [(stage, host_ms, gpu_ms), ...])``; a stage is the time from
    the previous mark to its own.
    """

    def __init__(self) -> None:
        self.remaining = 0
        self.kinds: dict[str, dict[str, Any]] = {}

    def start(self, rounds: int) -> None:
        self.remaining = rounds
        if rounds == 0:
            self.kinds = {}

    def add(self, kind: str, batch_size: int, stages: list[tuple[str, float, float | None]]) -> None:
        entry = self.kinds.setdefault(kind, {"rounds": 0, "batch_size_sum": 0, "stages": {}})
        entry["rounds"] += 1
        entry["batch_size_sum"] += int(batch_size)
        for name, host_ms, gpu_ms in stages:
            acc = entry["stages"].setdefault(name, [0, 0.0, 0, 0.0])
            acc[0] += 1
            acc[1] += float(host_ms)
            if gpu_ms is not None:
                acc[2] += 1
                acc[3] += float(gpu_ms)

    def summary(self) -> dict[str, Any]:
        """JSON-safe: per kind, rounds, mean batch size, and per stage mean host/GPU ms."""
        out: dict[str, Any] = {}
        for kind, entry in sorted(self.kinds.items()):
            rounds = max(1, entry["rounds"])
            out[kind] = {
                "rounds": int(entry["rounds"]),
                "mean_batch_size": round(entry["batch_size_sum"] / rounds, 2),
                "stages": {
                    name: {
                        "host_ms": round(acc[1] / max(1, acc[0]), 4),
                        "gpu_ms": round(acc[3] / acc[2], 4) if acc[2] else None,
                    }
                    for name, acc in entry["stages"].items()
                },
            }
        return out


class ZeroStepCounters:
    """What the read-back reports: rounds per path, fall-backs and catch-ups."""

    def __init__(self) -> None:
        self.plain_rounds = 0
        self.verify_rounds = 0
        self.fallback_rounds = 0
        self.last_fallback: str | None = None
        self.forced_zero = 0
        self.catchups = 0
        self.catchup_tokens = 0
        self.catchups_skipped = 0
        self.plain_prefills = 0
        self.errors = 0
        self.last_error: str | None = None
        self.last_reserve: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


TIMING = RoundTimingBook()
"""The process's timing table (one scheduler per process): the runtime fills it."""
_controller: Any = None


def register(ctl: Any) -> None:
    """The runtime's controller of this process (it has ``config`` and ``counters``); the collector's
    meter starts with it (``k25_zero_step_host``)."""
    global _controller
    _controller = ctl
    if ctl is not None:
        METER.install()


def controller() -> Any:
    return _controller


def readback(
    config: ZeroStepConfig, counters: ZeroStepCounters, state: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``adaptive_spec_live.zero_step``: str keys, ints, floats, bools, strings and lists (msgpack, JSON).

    ``state``: the sizes of the runtime's own structures (``ZeroStepController.state_sizes``); ``host``:
    this process's resident memory and collector time (issue 46: what grows over a long run)."""
    return {
        "path": config.path,
        "launch_path": config.launch_path,
        "plain_built": bool(config.plain_built),
        "build_error": config.build_error,
        **counters.as_dict(),
        "state": state,
        "host": host_readback(),
    }


def update_handlers(
    controller_of: Callable[[], Any],
    timing_book: RoundTimingBook,
    handler_cls: Callable[..., Any],
    rejected_cls: Callable[[str], Exception],
) -> dict[str, Any]:
    """``/set_internal_state`` handlers: the 0-step path (adaptive only) and round timing (any).

    Validation reads only the value and what every rank built identically (whether the plain
    state exists), so that all TP ranks decide alike. The apply handlers return None: these
    keys are not ``ServerArgs`` fields, and ``get_context().override`` raises for other names.
    """

    def controller(key: str) -> Any:
        ctl = controller_of()
        if ctl is None:
            raise rejected_cls(f"{key} needs adaptive speculative decoding with k25console patch 03")
        return ctl

    def validate_path(key: str, value: Any) -> None:
        reason = check_path(value, controller(key).config.plain_built)
        if reason is not None:
            raise rejected_cls(reason)

    def apply_path(key: str, value: Any) -> None:
        controller(key).config.path = PATH_OF_VALUE[int(value)]

    def validate_timing(key: str, value: Any) -> None:
        reason = check_timing_rounds(value)
        if reason is not None:
            raise rejected_cls(reason)

    def apply_timing(key: str, value: Any) -> None:
        timing_book.start(int(value))

    return {
        ZERO_STEP_KEY: handler_cls(validate_path, apply_path),
        ROUND_TIMING_KEY: handler_cls(validate_timing, apply_timing),
    }


def internal_state_handlers(
    handler_cls: Callable[..., Any], rejected_cls: Callable[[str], Exception]
) -> dict[str, Any]:
    """The handlers for this process's controller and timing table (``internal_state.py``)."""
    return update_handlers(controller, TIMING, handler_cls, rejected_cls)


def add_readback(state: dict[str, Any], draft_worker: Any) -> None:
    """Patch 02's read-back gets ``zero_step``; any server gets the timing table once sampled."""
    ctl = getattr(draft_worker, "k25_zero_step", None)
    live = state.get("adaptive_spec_live")
    if ctl is not None and isinstance(live, dict):
        sizes = getattr(ctl, "state_sizes", None)
        held: dict[str, Any] | None
        try:
            held = sizes() if callable(sizes) else None
        except Exception as exc:  # a read-back never fails the server_info answer
            held = {"error": f"{type(exc).__name__}: {exc}"}
        live[READBACK_FIELD] = readback(ctl.config, ctl.counters, held)
    if TIMING.kinds or TIMING.remaining:
        state[TIMING_FIELD] = {"remaining": TIMING.remaining, "kinds": TIMING.summary()}
