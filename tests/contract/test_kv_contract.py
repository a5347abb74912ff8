"""Our KV numbers equal SGLang 0.5.23's own ``allocation_sizing.py`` functions, run on a table of cases.

The table holds the reference's worked examples A–D (sglang-0.5.23.md §3.5) with their expected
numbers, so both our transcription and the wheel are pinned; ``agent kv --json`` is checked too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sglang_exec import Bags, allocation_sizing

from agent.profile import load_profile, parse_profile
from agent.sglang import kv
from agent.sglang.kv import SpecShape

pytestmark = pytest.mark.contract

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
AGENT = [sys.executable, "-m", "agent.cli.main"]

# (label, shape, page, expected alloc_len, expected row extra) — expectations from the reference
CASES = [
    ("no-spec", None, 1, 1, 4),
    ("no-spec-page16", None, 16, 1, 4),
    ("A 2/4/16 page1", SpecShape(2, 4, 16), 1, 16, 20),
    ("B 3/1/4 page16", SpecShape(3, 1, 4), 16, 4, 23),
    ("C 2/4/16 page16", SpecShape(2, 4, 16), 16, 128, 271),
    ("C 2/4/8 page16", SpecShape(2, 4, 8), 16, 128, 271),
    ("D adaptive default table", SpecShape(3, 1, 4, max_draft_tokens=8), 1, 8, 12),
    ("D tier 0", SpecShape(0, 1, 1, max_draft_tokens=8), 1, 8, 12),
    # "off" in the shipped 3/1/4 adaptive profile: 0 steps still reserves 2 x 4 (no drafter: 2 x 1)
    ("3/1/4 adaptive at 0 steps", SpecShape(0, 1, 1, max_draft_tokens=4), 1, 4, 8),
    ("3/1/4 adaptive at 0 steps page16", SpecShape(0, 1, 1, max_draft_tokens=4), 16, 4, 23),
    ("5/4/8 page1", SpecShape(5, 4, 8), 1, 20, 12),
    ("3/2/6 page4", SpecShape(3, 2, 6), 4, 16, 35),
    ("7/8/64 page64", SpecShape(7, 8, 64), 64, 1024, 2111),
]


@pytest.fixture(scope="module")
def sizing(sglang_src: Path) -> Iterator[tuple[types.ModuleType, Bags]]:
    with allocation_sizing(sglang_src) as pair:
        yield pair


def _configure(bags: Bags, shape: SpecShape | None, page: int) -> None:
    if shape is None:
        bags.set(
            algorithm=None, steps=None, topk=None, draft_tokens=None, max_draft_tokens=None, page_size=page
        )
    else:
        # SGLang publishes the launch-time widest draft; for a static config it is the draft count itself.
        widest = shape.max_draft_tokens if shape.max_draft_tokens is not None else shape.draft_tokens
        bags.set(
            algorithm="EAGLE3",
            steps=shape.steps,
            topk=shape.topk,
            draft_tokens=shape.draft_tokens,
            max_draft_tokens=widest,
            page_size=page,
        )


@pytest.mark.parametrize(("label", "shape", "page", "alloc", "extra"), CASES, ids=[c[0] for c in CASES])
def test_formulas_match_sglang(
    sizing: tuple[types.ModuleType, Bags],
    label: str,
    shape: SpecShape | None,
    page: int,
    alloc: int,
    extra: int,
) -> None:
    module, bags = sizing
    _configure(bags, shape, page)
    assert module.get_alloc_len_per_decode() == kv.alloc_len_per_decode(shape, page) == alloc
    assert module.get_alloc_reserve_per_decode() == kv.reserve_per_decode(shape, page) == 2 * alloc
    assert (
        module.get_req_to_token_extra_context_len() == kv.req_to_token_extra_context_len(shape, page) == extra
    )


@settings(max_examples=300, deadline=None)
@given(
    steps=st.integers(0, 16),
    topk=st.integers(1, 16),
    draft=st.integers(1, 256),
    widest_extra=st.one_of(st.none(), st.integers(0, 64)),
    page=st.sampled_from([1, 2, 4, 16, 32, 64, 128]),
)
def test_formulas_match_sglang_on_random_shapes(
    sizing: tuple[types.ModuleType, Bags],
    steps: int,
    topk: int,
    draft: int,
    widest_extra: int | None,
    page: int,
) -> None:
    module, bags = sizing
    shape = SpecShape(steps, topk, draft, None if widest_extra is None else draft + widest_extra)
    _configure(bags, shape, page)
    assert module.get_alloc_len_per_decode() == kv.alloc_len_per_decode(shape, page)
    assert module.get_alloc_reserve_per_decode() == kv.reserve_per_decode(shape, page)
    assert module.get_req_to_token_extra_context_len() == kv.req_to_token_extra_context_len(shape, page)


@pytest.mark.parametrize("page", [1, 16, 64])
def test_page_aligned_alloc_matches_sglang(sizing: tuple[types.ModuleType, Bags], page: int) -> None:
    module, _ = sizing
    reqs = []
    expected = []
    for committed in (0, 1, 15, 16, 17, 999, 1000, 1001):
        for extra_allocated in (0, 3, 300):
            allocated = committed + extra_allocated
            reqs.append(
                types.SimpleNamespace(
                    kv=types.SimpleNamespace(kv_committed_len=committed, kv_allocated_len=allocated)
                )
            )
            expected.append(kv.next_alloc_len(committed, allocated, 32, page))
    cur, nxt, needed = module.page_aligned_decode_alloc_lens(reqs, reserve=32, page_size=page)
    assert nxt == expected
    assert needed == sum(n - c for n, c in zip(nxt, cur, strict=True))


def _tree_page16(tmp_path: Path) -> Path:
    text = (PROFILES / "kimi-k25-eagle3-tree.toml").read_text().replace("page_size = 1", "page_size = 16")
    path = tmp_path / "tree-page16.toml"
    path.write_text(text)
    parse_profile(text)  # still a valid profile
    return path


def _profiles(tmp_path: Path) -> list[Path]:
    return [*sorted(PROFILES.glob("*.toml")), _tree_page16(tmp_path)]


def test_profiles_shapes_match_sglang(sizing: tuple[types.ModuleType, Bags], tmp_path: Path) -> None:
    module, bags = sizing
    for path in _profiles(tmp_path):
        profile = load_profile(path)
        shape = kv.spec_shape_for_profile(profile)
        page = profile.server.page_size
        _configure(bags, shape, page)
        assert module.get_alloc_len_per_decode() == kv.alloc_len_per_decode(shape, page), path.name


def test_agent_kv_json_agrees_with_sglang(sizing: tuple[types.ModuleType, Bags], tmp_path: Path) -> None:
    """The real ``agent kv --json`` command, on every shipped profile and the tree at page 16 (topk 4)."""
    module, bags = sizing
    for path in _profiles(tmp_path):
        done = subprocess.run(
            [*AGENT, "kv", str(path), "--running", "48", "--context", "1001", "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        profile = load_profile(path)
        page = profile.server.page_size
        _configure(bags, kv.spec_shape_for_profile(profile), page)
        req = types.SimpleNamespace(kv=types.SimpleNamespace(kv_committed_len=1001, kv_allocated_len=1001))
        states = [
            ("on", kv.spec_shape_for_profile(profile)),
            ("off", kv.zero_step_shape_for_profile(profile)),
        ]
        for side, shape in states:
            if shape is None:
                assert data[side] is None, (path.name, side)
                continue
            _configure(bags, shape, page)
            assert data[side]["alloc_len_per_decode"] == module.get_alloc_len_per_decode()
            reserve = module.get_alloc_reserve_per_decode()
            assert data[side]["reserve_per_decode"] == reserve
            _, nxt, _ = module.page_aligned_decode_alloc_lens([req], reserve=reserve, page_size=page)
            assert data[side]["tokens_held"] == 48 * nxt[0]
            assert data[side]["tokens_reserved"] == 48 * (nxt[0] - 1001)
            assert data[side]["requests_that_fit"] == data["pool"] // data[side]["tokens_per_request"]
        _configure(bags, None, page)
        assert data["baseline"]["alloc_len_per_decode"] == module.get_alloc_len_per_decode() == 1
        assert data["baseline"]["reserve_per_decode"] == module.get_alloc_reserve_per_decode() == 2
    # the page-16 tree case is the one the reference works out: 128 per step, 256 reserved
    tree = json.loads(
        subprocess.run(
            [*AGENT, "kv", str(_tree_page16(tmp_path)), "--running", "48", "--context", "1000", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert (tree["on"]["alloc_len_per_decode"], tree["on"]["reserve_per_decode"]) == (128, 256)
