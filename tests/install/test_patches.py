"""The SGLang patch set (the overlay's modules and the hook series) against the pinned 0.5.23 wheel.

Part 1: the series applies and reverses cleanly with GNU patch, the installed result compiles, and
the installer's pristine/applied/modified detection is exact, for the hooked files and the overlay.

Part 2: the added logic, driven through SGLang's own classes imported from the patched wheel files
without torch: ``AdaptiveStepSlot`` and ``AdaptiveSpeculativeParams`` (real config loader, real EMA
policy), ``AdaptiveController`` with ``SpecRuntimeState`` (real state registry and switching), and the
real ``SchedulerInternalStateController.set_internal_state`` dispatcher and ``_add_speculative``
read-back. Stubbed: only the modules those files import that need torch or msgspec (config views,
runtime context, logging helper, io_struct request classes), and the EAGLE worker, which only records
which state it was switched to.
"""

from __future__ import annotations

import json
import py_compile
import shutil
import subprocess
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.install.patching import (
    ORIG_SUFFIX,
    PatchError,
    PatchState,
    apply_patch_set,
    detect_state,
    file_sha256,
    revert_patch_set,
)
from agent.install.patchset import PatchSetError, load_patch_set
from agent.sglang import live_control

INTERNAL_STATE = "sglang/srt/managers/scheduler_components/internal_state.py"
SPEC_PARAMS = "sglang/srt/speculative/adaptive_spec_params.py"
LIVE_MODULE = "sglang/srt/speculative/adaptive_live_control.py"
READBACK_MODULE = "sglang/srt/speculative/adaptive_live_readback.py"

ZERO_STEP_POLICY = "sglang/srt/speculative/k25_zero_step_policy.py"
ZERO_STEP_RUNTIME = tuple(
    f"sglang/srt/speculative/k25_zero_step_{part}.py"
    for part in ("runtime", "plain", "ring", "catchup", "timer", "host")
)
ZERO_STEP_TOUCHED = (
    "sglang/srt/speculative/eagle_worker_v2.py",
    "sglang/srt/speculative/eagle_worker_common.py",
    "sglang/srt/speculative/eagle_utils.py",
    "sglang/srt/managers/schedule_batch.py",
    "sglang/srt/managers/tp_worker.py",
    "sglang/srt/managers/overlap_utils.py",
)

# What agent/sglang/adaptive.py renders for threshold 4 and live steps 1..3.
REPO = Path(__file__).resolve().parents[2]

THRESHOLD_CONFIG = {"1": {"candidate_steps": [1, 2, 3]}, "4": {"candidate_steps": [0]}}


def _hashes(site: Path) -> dict[str, str]:
    """Source files and .orig copies (compiled caches are not the patch's business)."""
    return {
        str(p.relative_to(site)): file_sha256(p)
        for p in sorted(site.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and "dist-info" not in str(p)
    }


# ----------------------------------------------------------------------------------- part 1: diffs


def test_patch_set_touches_the_files_its_readmes_name() -> None:
    patch_set = load_patch_set()
    assert patch_set.names == [
        "01-live-adaptive-control",
        "02-live-adaptive-readback",
        "03-zero-step-plain-decode",
    ]
    assert set(patch_set.targets()) == {INTERNAL_STATE, SPEC_PARAMS, *ZERO_STEP_TOUCHED}
    assert {item.path for item in patch_set.overlay} == {
        LIVE_MODULE,
        READBACK_MODULE,
        ZERO_STEP_POLICY,
        *ZERO_STEP_RUNTIME,
    }
    for patch in patch_set.patches:
        assert (patch.path.with_suffix("") / "README.md").read_text().startswith(f"# {patch.name}")
        assert patch.subject and patch.reason and f"{patch.name}/README.md" in patch.reason


def test_gnu_patch_applies_and_reverses_each_diff_in_order(site_packages: Path) -> None:
    pristine = _hashes(site_packages)
    patch_set = load_patch_set()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = ["patch", "-p1", "--batch", *args]
        return subprocess.run(argv, cwd=site_packages, capture_output=True, text=True, check=False)

    for patch in patch_set.patches:
        assert run("--dry-run", "--forward", "-i", str(patch.path)).returncode == 0
        assert run("--forward", "-i", str(patch.path)).returncode == 0
    for patch in reversed(patch_set.patches):
        # Already applied: forward refuses, reverse dry-run succeeds (how the installer detects it).
        assert run("--dry-run", "--forward", "-i", str(patch.path)).returncode == 1
        assert run("--dry-run", "-R", "-i", str(patch.path)).returncode == 0
        assert run("-R", "-i", str(patch.path)).returncode == 0
    assert _hashes(site_packages) == pristine


def test_apply_is_idempotent_and_revert_restores_record_hashes(site_packages: Path) -> None:
    patch_set = load_patch_set()
    pristine = _hashes(site_packages)
    assert detect_state(site_packages, patch_set) is PatchState.PRISTINE

    assert apply_patch_set(site_packages, patch_set) is PatchState.PRISTINE
    assert detect_state(site_packages, patch_set) is PatchState.APPLIED
    patched = _hashes(site_packages)
    assert (site_packages / (INTERNAL_STATE + ORIG_SUFFIX)).is_file()
    assert "adaptive_live_control" in (site_packages / INTERNAL_STATE).read_text()
    for path in patch_set.installed_paths():
        py_compile.compile(str(site_packages / path), doraise=True)
    for item in patch_set.overlay:  # copied in as they are in the repository
        assert (site_packages / item.path).read_bytes() == item.source.read_bytes()

    assert apply_patch_set(site_packages, patch_set) is PatchState.APPLIED
    assert _hashes(site_packages) == patched

    assert revert_patch_set(site_packages, patch_set) is PatchState.APPLIED
    assert detect_state(site_packages, patch_set) is PatchState.PRISTINE
    assert _hashes(site_packages) == pristine
    assert not (site_packages / LIVE_MODULE).exists()
    assert not (site_packages / (INTERNAL_STATE + ORIG_SUFFIX)).exists()


def test_a_hand_edited_file_is_refused_and_nothing_changes(site_packages: Path) -> None:
    patch_set = load_patch_set()
    target = site_packages / SPEC_PARAMS
    target.write_text(target.read_text() + "\n# local edit\n")
    before = _hashes(site_packages)
    assert detect_state(site_packages, patch_set) is PatchState.MODIFIED
    with pytest.raises(PatchError, match="neither the wheel's RECORD nor the patched result"):
        apply_patch_set(site_packages, patch_set)
    assert _hashes(site_packages) == before


def test_a_hand_edited_overlay_module_is_refused_and_nothing_changes(site_packages: Path) -> None:
    patch_set = load_patch_set()
    apply_patch_set(site_packages, patch_set)
    module = site_packages / ZERO_STEP_POLICY
    module.write_text(module.read_text().replace("return min(default_reserve, 1 + inflight)", "return 1"))
    before = _hashes(site_packages)
    assert detect_state(site_packages, patch_set) is PatchState.MODIFIED
    with pytest.raises(PatchError, match="neither the wheel's RECORD nor the patched result"):
        apply_patch_set(site_packages, patch_set)
    assert _hashes(site_packages) == before
    assert revert_patch_set(site_packages, patch_set) is PatchState.MODIFIED  # still undone: .orig copies
    assert not module.exists() and detect_state(site_packages, patch_set) is PatchState.PRISTINE


def test_an_overlay_module_left_alone_is_not_pristine(site_packages: Path) -> None:
    """Hooks pristine but one overlay module there (a half-done install): neither state; revert
    clears it without needing .orig copies."""
    patch_set = load_patch_set()
    pristine = _hashes(site_packages)
    stray = site_packages / READBACK_MODULE
    stray.write_bytes(patch_set.overlay[1].source.read_bytes())
    assert detect_state(site_packages, patch_set) is PatchState.MODIFIED
    assert revert_patch_set(site_packages, patch_set) is PatchState.MODIFIED
    assert _hashes(site_packages) == pristine


def test_revert_removes_the_overlays_byte_compiled_caches(site_packages: Path) -> None:
    patch_set = load_patch_set()
    apply_patch_set(site_packages, patch_set)
    cache = site_packages / "sglang/srt/speculative/__pycache__"
    cache.mkdir(parents=True)
    ours = cache / "k25_zero_step_runtime.cpython-312.pyc"
    theirs = cache / "eagle_worker_v2.cpython-312.pyc"
    ours.write_bytes(b"x")
    theirs.write_bytes(b"x")
    revert_patch_set(site_packages, patch_set)
    assert not ours.exists() and theirs.exists()


def test_the_overlay_never_replaces_a_file_of_sglangs(site_packages: Path, tmp_path: Path) -> None:
    """A module of the overlay's that the wheel also ships: refused, nothing changes; one the series
    hooks: the set does not load."""
    overlay = tmp_path / "overlay"
    shutil.copytree(load_patch_set().overlay[0].source.parents[3], overlay)
    owned = "sglang/srt/speculative/adaptive_runtime_state.py"  # the wheel's, not hooked
    (overlay / owned).write_text("# ours\n")
    before = _hashes(site_packages)
    with pytest.raises(PatchError, match=f"the wheel has its own {owned}"):
        apply_patch_set(site_packages, load_patch_set(overlay=overlay))
    assert _hashes(site_packages) == before
    (overlay / SPEC_PARAMS).write_text("# ours\n")
    with pytest.raises(PatchSetError, match=f"changes {SPEC_PARAMS}, which the overlay adds whole"):
        load_patch_set(overlay=overlay)


def test_revert_of_a_modified_tree_falls_back_to_the_orig_copies(site_packages: Path) -> None:
    patch_set = load_patch_set()
    pristine = _hashes(site_packages)
    apply_patch_set(site_packages, patch_set)
    spec = site_packages / SPEC_PARAMS
    spec.write_text(spec.read_text().replace("self.live = LiveAdaptiveState(self)", "self.live = None"))
    assert detect_state(site_packages, patch_set) is PatchState.MODIFIED
    assert revert_patch_set(site_packages, patch_set) is PatchState.MODIFIED
    assert _hashes(site_packages) == pristine


def test_a_patch_that_does_not_apply_leaves_site_packages_untouched(
    site_packages: Path, tmp_path: Path
) -> None:
    patch_set = load_patch_set()
    broken = tmp_path / "patches"
    shutil.copytree(patch_set.patches[0].path.parent, broken)
    diff = broken / "02-live-adaptive-readback.patch"
    diff.write_text(diff.read_text().replace('             state["avg_spec_accept_length"]', "    nope"))
    before = _hashes(site_packages)
    with pytest.raises(PatchError, match="02-live-adaptive-readback does not apply"):
        apply_patch_set(site_packages, load_patch_set(broken))
    assert _hashes(site_packages) == before


# ------------------------------------------------------------------ part 2: the logic, SGLang classes


class FakeEagleWorker:
    """The EAGLE worker's adaptive surface: builds states, records which one it runs."""

    def __init__(self, initial_steps: int, runtime_state: types.ModuleType) -> None:
        self.speculative_num_steps = initial_steps
        self.switches: list[int] = []
        self._state_cls = runtime_state.SpecRuntimeState
        self.adaptive_controller: Any = None

    def state(self, steps: int) -> Any:
        return self._state_cls(steps, steps + 1, None, None, None, None, None, None)

    def build_adaptive_runtime_state(
        self, speculative_num_steps: int, speculative_num_draft_tokens: int, cuda_graph_bs: Any = None
    ) -> Any:
        return self.state(speculative_num_steps)

    def apply_runtime_state(self, state: Any) -> None:
        self.speculative_num_steps = state.speculative_num_steps
        self.switches.append(state.speculative_num_steps)


class Rank:
    """One TP rank's scheduler side: params, controller, worker, internal-state controller."""

    def __init__(self, sgl: Any, config: dict[str, Any], tmp: Path, initial_steps: int = 3) -> None:
        path = tmp / "adaptive.json"
        path.write_text(json.dumps(config))
        self.sgl = sgl
        self.worker = FakeEagleWorker(initial_steps, sgl.runtime_state)
        self.params = sgl.params.AdaptiveSpeculativeParams(initial_steps=initial_steps, cfg_path=str(path))
        self.controller = sgl.runtime_state.AdaptiveController(self.worker, self.params)
        self.worker.adaptive_controller = self.controller
        self.controller.register(self.worker.state(initial_steps))
        self.controller.init_states(None)

        def no() -> bool:
            return False

        scheduler = types.SimpleNamespace(
            draft_worker=self.worker,
            spec_algorithm=types.SimpleNamespace(is_none=no, is_dspark=no, is_dflash=no),
            metrics_reporter=types.SimpleNamespace(
                spec_total_num_forward_ct=0, spec_total_num_accept_tokens=0
            ),
        )
        self.internal = sgl.internal_state.SchedulerInternalStateController(scheduler, record_step_time=False)

    def set(self, **server_args: Any) -> bool:
        out = self.internal.set_internal_state(self.sgl.io.SetInternalStateReq(server_args=server_args))
        return bool(out.updated)

    def steps_for(self, batch_size: int) -> int:
        self.controller.activate_step_by_batch(batch_size)
        return int(self.worker.speculative_num_steps)

    def verify(self, batch_size: int, accepted: int, rounds: int) -> None:
        for _ in range(rounds):
            self.steps_for(batch_size)
            self.controller.on_verify_complete([accepted] * batch_size, batch_size)

    def readback(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        self.internal._add_speculative(state)
        return state


@pytest.fixture
def rank(patched_sglang: Any, tmp_path: Path) -> Rank:
    return Rank(patched_sglang, THRESHOLD_CONFIG, tmp_path)


def test_patch_uses_the_names_live_control_defines(patched_sglang: Any, rank: Rank) -> None:
    live = patched_sglang.live_control
    assert (live.LIVE_THRESHOLD_KEY, live.LIVE_STEPS_KEY) == live_control.LIVE_KEYS
    assert live.RELEASE_PINNED_STEPS == live_control.RELEASE_PINNED_STEPS
    assert live.NO_THRESHOLD == live_control.NO_THRESHOLD
    assert patched_sglang.live_readback.READBACK_FIELD == live_control.READBACK_FIELD
    readback = rank.readback()[live_control.READBACK_FIELD]
    assert tuple(readback) == live_control.READBACK_KEYS
    assert set(readback["slots"]["1"]) == {
        "current_steps",
        "candidate_steps",
        "ema_accept_len",
        "batch_count",
    }
    # SGLang's own five keys still work next to ours.
    assert set(rank.internal._update_handlers()) >= {"pp_max_micro_batch_size", *live_control.LIVE_KEYS}


def test_untouched_server_routes_exactly_as_unpatched_sglang(rank: Rank) -> None:
    params = rank.params
    assert params.live.threshold == 4  # the launch config's [0] slot
    for bs in range(1, 300):
        original = params._slots[params._find_closest_bs(params._pad_to_cuda_graph_bs(bs))]
        assert params.get_steps_for_batch(bs) == original.current_steps
    assert rank.controller._states.keys() == {0, 1, 2, 3}
    assert rank.readback()[live_control.READBACK_FIELD] == {
        "threshold": 4,
        "pinned_steps": -1,
        "active_steps": 3,
        "prebuilt_steps": [0, 1, 2, 3],
        "ema_accept_len": 2.0,
        "slots": {
            "1": {"current_steps": 3, "candidate_steps": [1, 2, 3], "ema_accept_len": 2.0, "batch_count": 0},
            "4": {"current_steps": 0, "candidate_steps": [0], "ema_accept_len": -1.0, "batch_count": 0},
        },
    }


def test_live_threshold_moves_the_switch_to_zero_steps(rank: Rank, patched_sglang: Any) -> None:
    assert rank.steps_for(7) == 0
    assert rank.set(adaptive_spec_threshold=8)
    assert rank.steps_for(7) == 3
    assert rank.steps_for(8) == 0
    assert rank.steps_for(250) == 0
    assert rank.set(adaptive_spec_threshold=0)  # no threshold: speculate at every size
    assert rank.steps_for(250) == 3
    assert rank.set(adaptive_spec_threshold=1)  # never speculate
    assert rank.steps_for(1) == 0
    # Zero-step batches never move the policy, however many verify rounds they feed.
    rank.verify(batch_size=16, accepted=3, rounds=50)
    assert rank.steps_for(16) == 0
    assert rank.readback()[live_control.READBACK_FIELD]["threshold"] == 1
    # The keys are worker commands, not ServerArgs fields: nothing went to get_context().override.
    assert patched_sglang.context.calls == []


def test_pinned_steps_hold_against_the_ema_and_release_restores_it(rank: Rank) -> None:
    assert rank.set(adaptive_spec_steps=1)
    assert rank.params.candidate_steps == [0, 1]  # the cached union was dropped
    assert rank.steps_for(2) == 1
    rank.verify(batch_size=2, accepted=3, rounds=60)  # acceptance that would push the EMA policy up
    assert rank.steps_for(2) == 1
    readback = rank.readback()[live_control.READBACK_FIELD]
    assert readback["pinned_steps"] == 1
    assert readback["slots"]["1"]["candidate_steps"] == [1]
    assert readback["ema_accept_len"] > 0.9  # accepted drafts are still observed

    assert rank.set(adaptive_spec_steps=-1)
    assert rank.params.candidate_steps == [0, 1, 2, 3]
    rank.verify(batch_size=2, accepted=3, rounds=60)
    assert rank.steps_for(2) == 3  # the EMA policy chooses again
    assert rank.readback()[live_control.READBACK_FIELD]["slots"]["1"]["candidate_steps"] == [1, 2, 3]


def _drafter(rank: Rank, batch_size: int, rounds: int, accepted_of: Any) -> None:
    """Decode rounds whose verify accepts ``accepted_of(steps)`` drafts per request, at the step the
    worker actually runs: a verify at k steps can accept at most k (the EMA of a pinned slot is censored)."""
    for _ in range(rounds):
        steps = rank.steps_for(batch_size)
        rank.controller.on_verify_complete([accepted_of(steps)] * batch_size, batch_size)


def test_releasing_a_pin_relearns_from_the_launch_state(rank: Rank) -> None:
    """The real engine's case: pinned to 1 with every draft accepted, then released."""
    oracle = lambda steps: steps  # noqa: E731  every draft accepted
    _drafter(rank, 2, 30, oracle)
    assert rank.steps_for(2) == 3
    assert rank.set(adaptive_spec_steps=1)
    _drafter(rank, 2, 60, oracle)
    pinned = rank.readback()[live_control.READBACK_FIELD]["slots"]["1"]
    assert pinned["current_steps"] == 1 and pinned["ema_accept_len"] == pytest.approx(1.0, abs=0.01)

    assert rank.set(adaptive_spec_steps=-1)
    released = rank.readback()[live_control.READBACK_FIELD]
    assert released["pinned_steps"] == -1
    assert released["slots"]["1"] == {
        "current_steps": 3,  # the launch step, not the censored EMA's 1
        "candidate_steps": [1, 2, 3],
        "ema_accept_len": 2.0,  # SGLang's neutral start: steps - 1
        "batch_count": 0,  # a new warm-up
    }
    assert rank.steps_for(2) == 3  # the very next batch runs at 3 steps
    slot = rank.params._slots[1]
    warmup_and_one_update = slot.warmup_batches + slot.update_interval
    _drafter(rank, 2, warmup_and_one_update, oracle)
    assert rank.steps_for(2) == 3
    assert slot.ema_accept_len > 2.9


def test_after_a_release_a_bad_drafter_is_dropped_within_the_warmup(rank: Rank) -> None:
    assert rank.set(adaptive_spec_steps=2)
    _drafter(rank, 2, 40, lambda steps: steps)
    assert rank.set(adaptive_spec_steps=-1)
    slot = rank.params._slots[1]
    _drafter(rank, 2, slot.warmup_batches + slot.update_interval, lambda steps: 0)  # nothing accepted
    assert rank.steps_for(2) == 1  # the smallest live step: the policy adapted after its warm-up


def test_a_release_without_a_pin_changes_nothing(rank: Rank) -> None:
    _drafter(rank, 2, 23, lambda steps: 1)
    before = rank.readback()[live_control.READBACK_FIELD]
    assert rank.set(adaptive_spec_steps=-1)
    assert rank.readback()[live_control.READBACK_FIELD] == before


def test_release_moves_a_slot_whose_step_left_its_candidates(patched_sglang: Any, tmp_path: Path) -> None:
    config = {"1": {"candidate_steps": [1, 3]}, "8": {"candidate_steps": [2]}, "32": {"candidate_steps": [0]}}
    rank = Rank(patched_sglang, config, tmp_path, initial_steps=3)
    assert rank.set(adaptive_spec_steps=3)
    assert rank.steps_for(10) == 3
    assert rank.set(adaptive_spec_steps=-1)
    assert rank.params._slots[8].current_steps == 2
    assert rank.steps_for(10) == 2
    rank.verify(batch_size=10, accepted=0, rounds=40)  # _recompute_params must not raise on .index()
    rank.verify(batch_size=1, accepted=0, rounds=40)
    assert rank.steps_for(1) == 1


@pytest.mark.parametrize(
    ("server_args", "why"),
    [
        ({"adaptive_spec_steps": 5}, "not a pre-built"),
        ({"adaptive_spec_steps": 0}, "not a pre-built"),
        ({"adaptive_spec_steps": True}, "must be an integer"),
        ({"adaptive_spec_steps": 2.0}, "must be an integer"),
        ({"adaptive_spec_threshold": -1}, "must be >= 0"),
        ({"adaptive_spec_threshold": 1.5}, "must be an integer"),
        # SGLang validates every key before applying any: one bad key rejects the valid one too.
        ({"adaptive_spec_threshold": 16, "adaptive_spec_steps": 9}, "not a pre-built"),
    ],
)
def test_invalid_values_are_rejected_and_change_nothing(
    rank: Rank, server_args: dict[str, Any], why: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = rank.readback()
    assert not rank.set(**server_args)
    assert why in caplog.text
    assert rank.readback() == before


def test_threshold_needs_a_prebuilt_zero_state(patched_sglang: Any, tmp_path: Path) -> None:
    rank = Rank(patched_sglang, {"1": {"candidate_steps": [1, 3]}}, tmp_path)
    assert rank.params.live.threshold == 0
    assert not rank.set(adaptive_spec_threshold=8)
    assert rank.set(adaptive_spec_threshold=0)
    assert rank.set(adaptive_spec_steps=1)


def test_without_adaptive_the_keys_are_rejected_and_nothing_is_read_back(rank: Rank) -> None:
    rank.worker.adaptive_controller = None
    assert not rank.set(adaptive_spec_threshold=8)
    assert live_control.READBACK_FIELD not in rank.readback()


_requests = st.lists(
    st.one_of(
        st.fixed_dictionaries({"adaptive_spec_threshold": st.integers(-2, 40)}),
        st.fixed_dictionaries({"adaptive_spec_steps": st.integers(-2, 5)}),
        st.fixed_dictionaries({"verify_bs": st.integers(1, 40), "accepted": st.integers(0, 3)}),
    ),
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=_requests)
def test_every_rank_decides_the_same(patched_sglang: Any, tmp_path: Path, requests: list[Any]) -> None:
    """The request reaches every TP rank; a rank that decided differently would hang the next collective.

    Two ranks with different rank-local facts (memory, rank id) must give the same answers and the
    same step for every batch.
    """
    ranks = [Rank(patched_sglang, THRESHOLD_CONFIG, tmp_path) for _ in range(2)]
    for i, r in enumerate(ranks):
        r.internal.scheduler.tp_rank = i
        r.internal.scheduler.free_gpu_memory_gb = 10.0 * (i + 1)
    for request in requests:
        if "verify_bs" in request:
            steps = {r.steps_for(request["verify_bs"]) for r in ranks}
            for r in ranks:
                r.controller.on_verify_complete(
                    [request["accepted"]] * request["verify_bs"], request["verify_bs"]
                )
            assert len(steps) == 1
        else:
            assert len({r.set(**request) for r in ranks}) == 1
    assert ranks[0].readback() == ranks[1].readback()
    json.dumps(ranks[0].readback())  # plain JSON types: it crosses msgpack IPC and HTTP


# ------------------------------------------------------------- the simulated engine speaks the same


async def test_the_simulated_engine_speaks_the_patch_keys_and_read_back(
    patched_sglang: Any, tmp_path: Path
) -> None:
    """Same requests to the patched SGLang classes and to the sim's HTTP surface: same keys, same
    verdicts, same read-back field and keys, same live values."""
    import httpx

    from agent.profile.store import load_profile
    from agent.sglang.adaptive import adaptive_config
    from agent.sim.server import run_sim

    profile = load_profile(REPO / "profiles" / "kimi-k25-eagle3.toml")
    config = adaptive_config(profile)
    assert config is not None
    rank = Rank(patched_sglang, config, tmp_path, initial_steps=profile.speculation.num_steps or 3)
    live = patched_sglang.live_control
    field = patched_sglang.live_readback.READBACK_FIELD
    requests: list[dict[str, Any]] = [
        {live.LIVE_THRESHOLD_KEY: 8},
        {live.LIVE_STEPS_KEY: 2},
        {live.LIVE_STEPS_KEY: 5},  # not built
        {live.LIVE_STEPS_KEY: 0},  # 0 is the threshold's job
        {live.LIVE_THRESHOLD_KEY: -1},
        {"adaptive_spec_bogus": 1},  # a key the patch does not add
        {live.LIVE_THRESHOLD_KEY: 16, live.LIVE_STEPS_KEY: 1},
        {live_control.ZERO_STEP_KEY: 0},  # patch 03: SGLang's verify path
        {live_control.ZERO_STEP_KEY: 3},
        {live_control.ROUND_TIMING_KEY: -1},
        {live_control.ROUND_TIMING_KEY: 0},
    ]
    policy = patched_sglang.internal_state.k25_zero_step_policy
    zero = types.SimpleNamespace(
        config=policy.ZeroStepConfig(policy.PLAIN), counters=policy.ZeroStepCounters()
    )
    zero.config.mark_built(None)
    rank.worker.k25_zero_step = zero
    policy.register(zero)
    async with run_sim(profile, port=0, speedup=50.0) as sim, httpx.AsyncClient(base_url=sim.url) as http:
        for body in requests:
            answer = await http.post("/set_internal_state", json={"server_args": body})
            assert answer.status_code == 200
            assert answer.json() == [rank.set(**body)], body
        info = (await http.get("/server_info")).json()
    policy.register(None)
    sim_view = info["internal_states"][0][field]
    patch_state = rank.readback()
    rank.internal._add_k25_zero_step(patch_state)
    patch_view = patch_state[field]
    zero_field = live_control.ZERO_STEP_READBACK_FIELD
    assert list(sim_view) == list(patch_view) == [*live_control.READBACK_KEYS, zero_field]
    assert (
        list(sim_view[zero_field])
        == list(patch_view[zero_field])
        == list(live_control.ZERO_STEP_READBACK_KEYS)
    )
    assert sim_view[zero_field]["path"] == patch_view[zero_field]["path"] == live_control.ZERO_STEP_VERIFY
    assert set(sim_view["slots"]) == set(patch_view["slots"])
    for key in sim_view["slots"]:
        assert set(sim_view["slots"][key]) == set(patch_view["slots"][key])
    for key in ("threshold", "pinned_steps", "prebuilt_steps"):
        assert sim_view[key] == patch_view[key], key
    assert (sim_view["threshold"], sim_view["pinned_steps"]) == (16, 1)
