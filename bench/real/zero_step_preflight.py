"""Patch 03's torch side, driven without SGLang: the ring, the streaks and the catch-up's inputs.

``agent install`` applies patch 03 to the stack; this script imports its two new modules from a
site-packages (or any folder holding ``sglang/srt/speculative/k25_zero_step_*.py``) with stand-ins
for the four SGLang names the runtime imports lazily, and plays one request mix through them:
prefills, 0-step plain rounds, a resume. It checks that the catch-up re-extends exactly the
positions the draft missed, with the tokens and hidden states those positions produced, and that
the KV reserve and the forced 0-step plan hold. It needs torch (CPU or CUDA) and nothing else:

    python bench/real/zero_step_preflight.py SITE_PACKAGES [--device cuda]

Exit 0 when every check passed. ``bench/real/gpu.sh`` runs it on the GPU host with the stack's
python before any engine starts, so that a shape bug costs seconds, not an engine start-up.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import torch


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so that submodules resolve through sys.modules
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


class ForwardMode:
    """The three modes the runtime sets or asks about."""

    def __init__(self, name: str) -> None:
        self.name = name

    def is_idle(self) -> bool:
        return self.name == "IDLE"

    def is_extend(self) -> bool:
        return self.name == "EXTEND"

    def is_decode(self) -> bool:
        return self.name == "DECODE"


ForwardMode.DECODE = ForwardMode("DECODE")  # type: ignore[attr-defined]
ForwardMode.EXTEND = ForwardMode("EXTEND")  # type: ignore[attr-defined]
ForwardMode.TARGET_VERIFY = ForwardMode("TARGET_VERIFY")  # type: ignore[attr-defined]


class EagleDraftInput:
    def __init__(self, bonus_tokens: Any = None) -> None:
        self.bonus_tokens = bonus_tokens
        self.topk_p = self.topk_index = self.hidden_states = self.draft_probs = None
        self.future_indices = None  # the overlap scheduler sets it: the future map relays the rest


def assign_extend_cache_locs_uniform_func(
    *, req_pool_indices, req_to_token, start_offset, batch_size, draft_token_num, device
):
    cols = torch.arange(draft_token_num, device=device, dtype=torch.int64)
    pos = start_offset.to(torch.int64).unsqueeze(1) + cols
    return req_to_token[req_pool_indices.to(torch.int64).unsqueeze(1), pos].reshape(-1)


class CaptureHiddenMode:
    FULL = "FULL"


class ForwardBatch:
    """What the plain round's target forward is handed: the decode view's fields."""

    def __init__(self, view: Any, capture_hidden_mode: Any) -> None:
        self.forward_mode = view.forward_mode
        self.input_ids = view.input_ids
        self.seq_lens = view.seq_lens
        self.req_pool_indices = view.req_pool_indices
        self.out_cache_loc = view.out_cache_loc
        self.spec_info = view.spec_info
        self.capture_hidden_mode = capture_hidden_mode

    @classmethod
    def init_new(cls, view: Any, model_runner: Any, capture_hidden_mode: Any, **_: Any) -> ForwardBatch:
        return cls(view, capture_hidden_mode)


def load(site: Path) -> tuple[Any, Any]:
    stubs = {
        "sglang": _module("sglang"),
        "sglang.srt": _module("sglang.srt"),
        "sglang.srt.speculative": _module("sglang.srt.speculative"),
        "sglang.kernels": _module("sglang.kernels"),
        "sglang.kernels.ops": _module("sglang.kernels.ops"),
        "sglang.kernels.ops.speculative": _module("sglang.kernels.ops.speculative"),
        "sglang.kernels.ops.speculative.cache_locs": _module(
            "sglang.kernels.ops.speculative.cache_locs",
            assign_extend_cache_locs_uniform_func=assign_extend_cache_locs_uniform_func,
        ),
        "sglang.srt.model_executor": _module("sglang.srt.model_executor"),
        "sglang.srt.model_executor.forward_batch_info": _module(
            "sglang.srt.model_executor.forward_batch_info",
            ForwardMode=ForwardMode,
            CaptureHiddenMode=CaptureHiddenMode,
            ForwardBatch=ForwardBatch,
        ),
        "sglang.srt.managers": _module("sglang.srt.managers"),
        "sglang.srt.managers.utils": _module(
            "sglang.srt.managers.utils", GenerationBatchResult=types.SimpleNamespace
        ),
        "sglang.srt.speculative.spec_info": _module(
            "sglang.srt.speculative.spec_info",
            SpeculativeAlgorithm=types.SimpleNamespace(NONE="NONE"),
        ),
        "sglang.srt.speculative.eagle_info": _module(
            "sglang.srt.speculative.eagle_info", EagleDraftInput=EagleDraftInput
        ),
        "sglang.srt.mem_cache": _module("sglang.srt.mem_cache"),
        "sglang.srt.mem_cache.allocation_sizing": _module(
            "sglang.srt.mem_cache.allocation_sizing", get_alloc_len_per_decode=lambda: 4
        ),
        "sglang.srt.runtime_context": _module(
            "sglang.srt.runtime_context",
            get_parallel=lambda: types.SimpleNamespace(pp_size=1),
            get_spec=lambda: types.SimpleNamespace(speculative_adaptive_config=None),
        ),
    }
    sys.modules.update(stubs)
    loaded = []
    for name in ("k25_zero_step_policy", "k25_zero_step_runtime"):
        path = site / "sglang" / "srt" / "speculative" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"sglang.srt.speculative.{name}", path)
        assert spec is not None and spec.loader is not None, path
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        setattr(stubs["sglang.srt.speculative"], name, module)
        spec.loader.exec_module(module)
        loaded.append(module)
    return loaded[0], loaded[1]


class Live:
    def __init__(self, threshold: int) -> None:
        self.threshold = threshold


class World:
    """One scheduler's worth of state: 8 slots, a KV map, the target's 'true' tokens and hiddens."""

    HIDDEN = 12

    def __init__(self, runtime: Any, device: str, cpu_lens: bool) -> None:
        self.device = device
        self.cpu_lens = cpu_lens
        self.runtime = runtime
        self.req_to_token = torch.arange(8 * 64, device=device, dtype=torch.int64).reshape(8, 64)
        self.extends: list[tuple[Any, Any]] = []
        worker = types.SimpleNamespace(
            adaptive_controller=types.SimpleNamespace(
                _states={0: None, 1: None, 2: None, 3: None},
                params=types.SimpleNamespace(
                    live=Live(4), get_steps_for_batch=lambda bs: 0 if bs >= 4 else 3
                ),
                _activate=self._activate,
            ),
            speculative_num_steps=3,
            speculative_num_draft_tokens=4,
            req_to_token_pool=types.SimpleNamespace(req_to_token=self.req_to_token),
            topk=1,
            draft_worker=types.SimpleNamespace(_draft_extend_for_decode=self._draft_extend),
            activate_step_by_batch=lambda bs: None,
            _stub_skipped_draft_extend=self._stub,
        )
        model_runner = types.SimpleNamespace(
            model_config=types.SimpleNamespace(model_is_mrope=False),
            attn_backend="verify backend",
            decode_cuda_graph_runner=None,
            sample=self._sample,
        )
        worker.target_worker = worker._target_worker = types.SimpleNamespace(
            model_runner=model_runner, forward_batch_generation=self._target_forward
        )
        self.worker = worker
        self.forwards: list[Any] = []
        self.ctl = runtime.ZeroStepController(worker, {})
        self.ctl.config.mark_built(None)
        self.ctl.plain = runtime.PlainDecodeTarget(model_runner, "plain decode backend", None)

    def _target_forward(self, batch: Any, forward_batch: Any, is_verify: bool) -> Any:
        """The target's decode: the hidden state of the position each request decodes."""
        mr = self.worker.target_worker.model_runner
        self.forwards.append((forward_batch, mr.attn_backend, is_verify))
        slots = forward_batch.req_pool_indices.tolist()
        positions = (forward_batch.seq_lens - 1).tolist()  # decode lengths count the new token
        hidden = torch.stack([self.hidden_at(s, p) for s, p in zip(slots, positions, strict=True)])
        return types.SimpleNamespace(
            logits_output=types.SimpleNamespace(hidden_states=hidden, positions=positions),
            routed_experts_output=None,
            indexer_topk_output=None,
        )

    def _stub(self, batch: Any, result: Any) -> None:
        """SGLang's zero stubs of the skipped draft extend (what the synchronous scheduler needs)."""
        result.next_draft_input.topk_p = torch.zeros((batch.seq_lens.shape[0], 1), device=self.device)
        result.next_draft_input.hidden_states = torch.zeros((batch.seq_lens.shape[0], 5), device=self.device)

    def _sample(self, logits_output: Any, forward_batch: Any) -> Any:
        slots = forward_batch.req_pool_indices.tolist()
        tokens = [self.token_at(s, p) for s, p in zip(slots, logits_output.positions, strict=True)]
        return torch.tensor(tokens, device=self.device, dtype=torch.int32)

    def _activate(self, steps: int) -> None:
        self.worker.speculative_num_steps = steps

    def _draft_extend(self, view: Any, result: Any) -> None:
        self.extends.append((view, result))
        bs = view.seq_lens.shape[0]
        result.next_draft_input.topk_p = torch.ones((bs, 1), device=self.device)
        result.next_draft_input.topk_index = torch.full((bs, 1), 7, device=self.device)
        result.next_draft_input.hidden_states = torch.zeros((bs, 5), device=self.device)

    @staticmethod
    def token_at(slot: int, pos: int) -> int:
        """The token the target produces after position ``pos`` of the request in ``slot``."""
        return 1000 * (slot + 1) + pos + 1

    def hidden_at(self, slot: int, pos: int) -> torch.Tensor:
        return torch.full((self.HIDDEN,), float(slot * 100 + pos), device=self.device)

    def batch(self, slots: list[int], lens: list[int], mode: Any) -> Any:
        dev = self.device
        return types.SimpleNamespace(
            reqs=[types.SimpleNamespace(kv=types.SimpleNamespace(req_pool_idx=s)) for s in slots],
            device=dev,
            input_ids=None,
            out_cache_loc=None,
            orig_seq_lens=None,
            spec_algorithm="EAGLE3",
            req_pool_indices=torch.tensor(slots, device=dev, dtype=torch.int64),
            req_pool_indices_cpu=torch.tensor(slots, dtype=torch.int64),
            seq_lens=torch.tensor(lens, device=dev, dtype=torch.int64),
            seq_lens_cpu=torch.tensor(lens, dtype=torch.int64) if self.cpu_lens else None,
            forward_mode=mode,
            is_extend_in_batch=False,
            extend_lens=None,
            spec_info=EagleDraftInput(
                bonus_tokens=torch.tensor(
                    [self.token_at(s, n - 1) for s, n in zip(slots, lens, strict=True)],
                    device=dev,
                    dtype=torch.int32,
                )
            ),
            return_logprob=False,
            has_grammar=False,
            hisparse_coordinator=None,
            mamba_track_indices=None,
            sampling_info=types.SimpleNamespace(has_watermark_candidates=False),
            input_embeds=None,
            replace_embeds=None,
        )

    def prefill(self, slots: list[int], lens: list[int], extend: list[int]) -> None:
        batch = self.batch(slots, lens, ForwardMode.EXTEND)
        batch.extend_lens = extend
        rows, tokens = [], []
        for slot, length, n in zip(slots, lens, extend, strict=True):
            rows += [self.hidden_at(slot, p) for p in range(length - n, length)]
            tokens.append(self.token_at(slot, length - 1))
        out = types.SimpleNamespace(
            logits_output=types.SimpleNamespace(hidden_states=torch.stack(rows)),
            next_token_ids=torch.tensor(tokens, device=self.device, dtype=torch.int32),
        )
        self.ctl.planner.launched(False, False)
        self.ctl.after_extend(batch, out)

    def zero_round(self, slots: list[int], lens: list[int], overlap: bool = True) -> Any:
        batch = self.batch(slots, lens, ForwardMode.DECODE)
        if overlap:
            batch.spec_info.future_indices = batch.req_pool_indices
        reserve = self.runtime.decode_reserve(batch, 8)
        assert self.runtime.reads_bonus_only(batch), "the future map gathers only the bonus token"
        self.ctl.activate(batch)
        assert self.worker.speculative_num_steps == 0, "a planned 0-step batch runs at 0 steps"
        published: list[Any] = []
        self.last_round = (batch, self.ctl.plain_round(batch, published.append), published)
        assert self.last_round[1] is not None, "plain path taken"
        return reserve


def plain_round_checks(w: World, lens: list[int]) -> list[bool]:
    """The last 0-step round went through the target's own decode and returned what the scheduler
    reads: one token per request, accept lengths of 1, lengths + 1, the bonus token as the next
    draft input and no top-k or hidden stubs (the future map keeps the last drafted-from state)."""
    batch, out, published = w.last_round
    forward_batch, backend, is_verify = w.forwards[-1]
    slots = batch.req_pool_indices.tolist()
    results = [
        check(
            "a plain round forwards in DECODE mode with the plain decode state bound",
            forward_batch.forward_mode is ForwardMode.DECODE
            and backend == "plain decode backend"
            and w.worker.target_worker.model_runner.attn_backend == "verify backend"
            and is_verify,
        ),
        check(
            "one token per request: its bonus token, at the committed length, into that KV slot",
            forward_batch.input_ids.tolist()
            == [w.token_at(s, n - 1) for s, n in zip(slots, lens, strict=True)]
            and forward_batch.seq_lens.tolist() == [n + 1 for n in lens]
            and forward_batch.out_cache_loc.tolist()
            == [int(w.req_to_token[s, n]) for s, n in zip(slots, lens, strict=True)],
            f"{forward_batch.input_ids.tolist()} {forward_batch.seq_lens.tolist()}",
        ),
        check(
            "the result: sampled tokens, accept lengths 1, lengths + 1, published",
            out.next_token_ids.tolist() == [w.token_at(s, n) for s, n in zip(slots, lens, strict=True)]
            and out.accept_lens.tolist() == [1] * len(slots)
            and out.new_seq_lens.tolist() == [n + 1 for n in lens]
            and out.speculative_num_draft_tokens == 1
            and len(published) == 1
            and published[0] is out.new_seq_lens,
            f"{out.accept_lens.tolist()} {out.new_seq_lens.tolist()}",
        ),
        check(
            "the next draft input is the sampled token, with no top-k or hidden stubs",
            out.next_draft_input.bonus_tokens is out.next_token_ids
            and out.next_draft_input.topk_p is None
            and out.next_draft_input.hidden_states is None,
        ),
    ]
    unplanned = w.batch(slots[:2], lens[:2], ForwardMode.DECODE)
    grammar = w.batch(slots, lens, ForwardMode.DECODE)
    grammar._k25_zero_planned, grammar.has_grammar = True, True
    results.append(
        check(
            "the future map reads all of a draft input unless the plain round will take the batch",
            not w.runtime.reads_bonus_only(unplanned) and not w.runtime.reads_bonus_only(grammar),
        )
    )
    return results


def check(name: str, ok: bool, detail: str = "") -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {name}{('  ' + detail) if detail else ''}")
    return ok


def run(site: Path, device: str) -> int:
    policy, runtime = load(site)
    results = [
        *scenario(policy, runtime, device, cpu_lens=True),
        *scenario(policy, runtime, device, cpu_lens=False),
        *faults(policy, runtime, device),
    ]
    print(f"{sum(results)}/{len(results)} checks passed on {device} (torch {torch.__version__})")
    return 0 if all(results) else 1


def scenario(policy: Any, runtime: Any, device: str, cpu_lens: bool) -> list[bool]:
    print(f"-- with{'' if cpu_lens else 'out'} a CPU copy of the sequence lengths")
    w = World(runtime, device, cpu_lens)
    policy.register(w.ctl)
    results = []
    # Request in slot 2: 10-token prompt, then 6 plain 0-step rounds (positions 10..15).
    # Request in slot 5: 7-token prompt prefilled during the 0-step period, then 2 rounds (7, 8).
    w.prefill([2], [10], [10])
    lens = {2: 10}
    first_reserve = None
    for rnd in range(6):
        slots = [2] + ([5] if rnd >= 4 else [])
        if rnd == 4:
            w.prefill([5], [7], [7])
            lens[5] = 7
        batch_lens = [lens[s] for s in slots] + [0] * (4 - len(slots))
        slots_padded = slots + [0, 1, 3, 4][: 4 - len(slots)]  # four requests: at the threshold
        for s, n in zip(slots_padded, batch_lens, strict=True):
            lens.setdefault(s, n)
        reserve = w.zero_round(slots_padded, [lens[s] for s in slots_padded])
        first_reserve = reserve if first_reserve is None else first_reserve
        for s in slots_padded:
            lens[s] += 1
    last_batch = w.last_round[0]
    results += plain_round_checks(w, [lens[s] - 1 for s in last_batch.req_pool_indices.tolist()])
    results.append(
        check("reserve after an extend is 1 + a full step", first_reserve == 5, f"got {first_reserve}")
    )
    results.append(
        check(
            "steady 0-step reserve is 2 (a plain decode's)",
            w.ctl.counters.last_reserve == 2,
            f"got {w.ctl.counters.last_reserve}",
        )
    )
    results.append(
        check("plain rounds counted", w.ctl.counters.plain_rounds == 6, str(w.ctl.counters.plain_rounds))
    )

    # Resume: slots 2 and 5 (and the two padding requests) draft again.
    slots = [2, 5, 0, 1]
    batch = w.batch(slots, [lens[s] for s in slots], ForwardMode.DECODE)
    w.ctl.maybe_catch_up(batch)
    results.append(
        check(
            "one catch-up ran",
            w.ctl.counters.catchups == 1 and len(w.extends) == 1,
            json.dumps(w.ctl.counters.as_dict()),
        )
    )
    if w.extends:
        view, result = w.extends[0]
        widths = result.accept_lens.tolist()
        results.append(
            check(
                "widths: 4 for the long streak, 3 for the late prefill (prompt end + 2 rounds)",
                widths[:2] == [4, 3],
                str(widths),
            )
        )
        starts = view.seq_lens.tolist()
        results.append(
            check(
                "the extend starts W positions before the committed length",
                starts == [lens[s] - n for s, n in zip(slots, widths, strict=True)],
                f"{starts}",
            )
        )
        tokens = result.next_token_ids.reshape(len(slots), 4).tolist()
        hidden = result.logits_output.hidden_states.reshape(len(slots), 4, -1)[:, :, 0].tolist()
        ok = True
        for row, (slot, start, n) in enumerate(zip(slots, starts, widths, strict=True)):
            for col in range(4):
                pos = start + col
                want_tok = w.token_at(slot, pos) if col < n else 0
                want_hid = float(slot * 100 + pos) if col < n else 0.0
                ok &= tokens[row][col] == want_tok and hidden[row][col] == want_hid
        results.append(check("tokens and hiddens are those of the missed positions, zero-padded", ok))
        want_locs = [
            int(w.req_to_token[s, p]) for s, st in zip(slots, starts, strict=True) for p in range(st, st + 4)
        ]
        results.append(
            check(
                "the extend writes the draft KV of exactly those positions",
                view.out_cache_loc.tolist() == want_locs,
            )
        )
        results.append(
            check("the draft input took the catch-up's output", int(batch.spec_info.topk_index[0, 0]) == 7)
        )
    w.ctl.maybe_catch_up(batch)
    results.append(check("a second drafting round does not catch up again", w.ctl.counters.catchups == 1))

    # A request whose draft state is current (prefilled after the last 0-step round) keeps it.
    w.prefill([6], [5], [5])
    for s in (2, 5, 0, 1):
        lens[s] += 1
    w.zero_round([2, 5, 0, 1], [lens[s] for s in (2, 5, 0, 1)])
    for s in (2, 5, 0, 1):
        lens[s] += 1
    batch = w.batch([2, 5, 0, 1, 6], [lens[s] for s in (2, 5, 0, 1)] + [5], ForwardMode.DECODE)
    batch.spec_info.topk_index = torch.full((5, 1), 3, device=device)
    w.ctl.maybe_catch_up(batch)
    kept = [int(x) for x in batch.spec_info.topk_index[:, 0].tolist()]
    results.append(
        check(
            "a resume batch with a request prefilled after the 0-step rounds: all caught up",
            kept == [7] * 5,
            f"{kept}",
        )
    )
    held = [int(x) for x in w.ctl.last_caught.tolist()]
    results.append(
        check("a request prefilled last catches up over its prompt's end only", held[4] == 1, f"{held}")
    )
    w.ctl.streak.missed([2, 7])
    lens[2] += 3  # a gap: the positions before s are not the ones the ring holds
    batch = w.batch([2, 7], [lens[2], 9], ForwardMode.DECODE)
    batch.spec_info.topk_index = torch.full((2, 1), 3, device=device)
    w.ctl.maybe_catch_up(batch)
    kept = [int(x) for x in batch.spec_info.topk_index[:, 0].tolist()]
    results.append(
        check(
            "rows with nothing held before s keep their draft input",
            kept == [3, 3] and w.ctl.counters.catchups_skipped >= 2,
            f"{kept}",
        )
    )

    results.append(
        check(
            "no ring hook failed",
            w.ctl.counters.errors == 0 and not w.ctl.ring_off,
            str(w.ctl.counters.last_error),
        )
    )

    # The path switch and its validation.
    results.append(check("plain needs the built state", policy.check_path(1, False) is not None))
    results.append(
        check(
            "a bad path is refused",
            policy.check_path("plain", True) is not None and policy.check_path(0, True) is None,
        )
    )
    w.zero_round([2, 5, 0, 1], [lens[s] for s in (2, 5, 0, 1)], overlap=False)
    stubbed = w.last_round[1].next_draft_input
    results.append(
        check(
            "without the overlap scheduler's future map, the draft input gets SGLang's zero stubs",
            stubbed.topk_p is not None and stubbed.hidden_states is not None,
        )
    )
    return results


def faults(policy: Any, runtime: Any, device: str) -> list[bool]:
    """A ring hook that raises must not reach the scheduler: it is counted, the ring goes off for
    the run, 0-step rounds still decode plainly and a resume drafts cold (no catch-up)."""
    print("-- a ring hook that fails")
    w = World(runtime, device, cpu_lens=False)
    policy.register(w.ctl)
    results = []
    batch = w.batch([2], [10], ForwardMode.EXTEND)
    batch.reqs = [types.SimpleNamespace(req_pool_idx=2)]  # 0.5.22's shape: no req.kv
    batch.extend_lens = [10]
    out = types.SimpleNamespace(
        logits_output=types.SimpleNamespace(hidden_states=torch.zeros((10, w.HIDDEN), device=device)),
        next_token_ids=torch.zeros(1, device=device, dtype=torch.int32),
    )
    raised = None
    try:
        w.ctl.after_extend(batch, out)
    except Exception as exc:
        raised = exc
    results.append(check("an extend hook that fails raises nothing", raised is None, repr(raised)))
    counters = w.ctl.counters
    results.append(
        check(
            "the failure is counted and named, and the ring is off",
            counters.errors == 1 and "AttributeError" in str(counters.last_error) and w.ctl.ring_off,
            str(counters.last_error),
        )
    )
    for rnd in range(3):
        w.zero_round([2, 0, 1, 3], [10 + rnd, 4, 4, 4])
    results.append(
        check(
            "0-step rounds still decode plainly, and nothing more is counted",
            counters.plain_rounds == 3 and counters.errors == 1,
            json.dumps(counters.as_dict()),
        )
    )
    w.ctl.maybe_catch_up(w.batch([2, 0, 1, 3], [13, 7, 7, 7], ForwardMode.DECODE))
    results.append(check("a resume drafts cold: no catch-up", counters.catchups == 0 and not w.extends))

    print("-- a plain round that fails")
    w = World(runtime, device, cpu_lens=False)
    policy.register(w.ctl)

    def broken_forward(**_: Any) -> Any:
        raise RuntimeError("a shape the plain decode did not expect")

    w.worker.target_worker.forward_batch_generation = broken_forward
    batch = w.batch([2, 0, 1, 3], [10, 4, 4, 4], ForwardMode.DECODE)
    batch.spec_info.future_indices = batch.req_pool_indices
    w.runtime.decode_reserve(batch, 8)
    w.ctl.activate(batch)
    raised = None
    try:
        out = w.ctl.plain_round(batch, lambda lens: None)
    except Exception as exc:
        raised, out = exc, None
    counters = w.ctl.counters
    results.append(
        check(
            "a plain round that raises returns None (the verify path runs) and raises nothing",
            raised is None and out is None,
            repr(raised),
        )
    )
    results.append(
        check(
            "the failure is counted and named, and later 0-step rounds take the verify path",
            counters.errors == 1
            and "RuntimeError" in str(counters.last_error)
            and not w.ctl.config.plain
            and w.ctl.plain_round(batch) is None
            and counters.verify_rounds == 1
            and not w.runtime.reads_bonus_only(batch),
            json.dumps(counters.as_dict()),
        )
    )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="site-packages (or a tree) with the patched sglang files")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory():
        return run(args.site, args.device)


if __name__ == "__main__":
    sys.exit(main())
