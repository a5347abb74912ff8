"""What patch 03's plain 0-step round relies on in the pinned wheel, read from its source.

The plain round returns a next draft input that carries only the bonus token (no top-k or hidden
stubs) when the overlap scheduler relays draft inputs through its future map. That is safe only
because of four things SGLang 0.5.23 does; each test here finds one in the syntax tree, so that a
wheel that changes it fails here, not on the real engine:

* the future map's ``stash`` writes top-k and hidden state only when the payload has them, so the
  request's last drafted-from state stays for the resume;
* a draft input that has ``future_indices`` is filtered and merged by those indices alone, so its
  missing top-k is never sliced;
* the overlap scheduler gives the next draft input ``future_indices`` after every forward (the
  plain round tells the two schedulers apart by it);
* the result processing reads the row stride from ``speculative_num_draft_tokens`` when the result
  has no ``speculative_output_stride`` (the plain round sets 1).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.contract

OVERLAP = "srt/managers/overlap_utils.py"
EAGLE_INFO = "srt/speculative/eagle_info.py"
SCHEDULER = "srt/managers/scheduler.py"
RESULTS = "srt/managers/scheduler_components/batch_result_processor.py"


def _function(src: Path, file: str, qualname: str) -> ast.FunctionDef:
    tree = ast.parse((src / file).read_text())
    *owners, name = qualname.split(".")
    body = tree.body
    for owner in owners:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner).body
    return next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)


def _guards_of_stores(fn: ast.FunctionDef, buffer: str) -> list[str]:
    """The test of the innermost ``if`` around each store into ``self.<buffer>[...]`` ("" if none)."""
    guards: list[str] = []

    def walk(statements: list[Any], guard: str) -> None:
        for stmt in statements:
            if isinstance(stmt, ast.If):
                walk(stmt.body, ast.unparse(stmt.test))
                walk(stmt.orelse, f"not ({ast.unparse(stmt.test)})")
            elif isinstance(stmt, ast.Assign):
                guards.extend(
                    guard
                    for target in stmt.targets
                    if isinstance(target, ast.Subscript) and ast.unparse(target.value) == f"self.{buffer}"
                )
            else:  # with, for, try (and its handlers): the same guard holds inside
                for field in ("body", "orelse", "handlers", "finalbody"):
                    walk(getattr(stmt, field, []), guard)

    walk(fn.body, "")
    return guards


@pytest.mark.parametrize(
    ("buffer", "field"),
    [
        ("topk_p_buf", "payload.topk_p is not None"),
        ("topk_index_buf", "payload.topk_p is not None"),
        ("hidden_states_buf", "payload.hidden_states is not None"),
    ],
)
def test_stash_keeps_what_a_payload_does_not_carry(sglang_src: Path, buffer: str, field: str) -> None:
    stash = _function(sglang_src, OVERLAP, "FutureMap.stash")
    guards = _guards_of_stores(stash, buffer)
    assert guards, f"FutureMap.stash no longer stores into {buffer}"
    assert all(field in guard for guard in guards), guards


def test_the_check_finds_an_unguarded_store(sglang_src: Path) -> None:
    """It can fail: a stash that writes the hidden state whatever the payload is named."""
    fn = _function(sglang_src, OVERLAP, "FutureMap.stash")
    unparsed = ast.unparse(fn)
    assert "and payload.hidden_states is not None" in unparsed
    broken = ast.parse(unparsed.replace("and payload.hidden_states is not None", "")).body[0]
    assert isinstance(broken, ast.FunctionDef)
    guards = _guards_of_stores(broken, "hidden_states_buf")
    assert guards and not all("payload.hidden_states is not None" in g for g in guards)


@pytest.mark.parametrize("method", ["filter_batch", "merge_batch"])
def test_a_relayed_draft_input_is_filtered_and_merged_by_its_indices_alone(
    sglang_src: Path, method: str
) -> None:
    fn = _function(sglang_src, EAGLE_INFO, f"EagleDraftInput.{method}")
    first = fn.body[0]
    assert isinstance(first, ast.If) and ast.unparse(first.test) == "self.future_indices is not None"
    assert isinstance(first.body[-1], ast.Return)
    read = {
        ast.unparse(n)
        for n in ast.walk(first)
        if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "self"
    }
    assert "self.topk_p" not in read and "self.hidden_states" not in read and "self.topk_index" not in read


def test_the_overlap_scheduler_gives_the_next_draft_input_its_indices(sglang_src: Path) -> None:
    run_batch = _function(sglang_src, SCHEDULER, "Scheduler.run_batch")
    stores = [
        ast.unparse(n)
        for n in ast.walk(run_batch)
        if isinstance(n, ast.Assign)
        and any(ast.unparse(t) == "batch.spec_info.future_indices" for t in n.targets)
    ]
    assert stores == ["batch.spec_info.future_indices = future_indices"]
    assigned = [
        ast.unparse(n.value)
        for n in ast.walk(run_batch)
        if isinstance(n, ast.Assign) and any(ast.unparse(t) == "batch.spec_info" for t in n.targets)
    ]
    assert "batch_result.next_draft_input" in assigned


def test_the_row_stride_falls_back_to_the_draft_token_count(sglang_src: Path) -> None:
    fn = _function(sglang_src, RESULTS, "_get_speculative_output_stride")
    text = ast.unparse(fn)
    assert "result.speculative_output_stride" in text and "result.speculative_num_draft_tokens" in text
