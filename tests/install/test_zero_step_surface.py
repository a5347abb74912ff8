"""Patch 03's torch side reads only what the pinned wheel's objects have.

The preflight (``bench/real/zero_step_preflight.py``) drives the runtime with stand-ins for SGLang's
requests and batches, so a stand-in that disagrees with SGLang passes there and fails on the real
engine. That happened: the GPU-side catch-up read ``req.req_pool_idx``, which 0.5.23 keeps in the
request's ``ReqKvInfo`` (``req.kv.req_pool_idx``), and the real scheduler died on its first prefill
(``bench/results/real-h200-2026-12-03-crash/``). This check reads the runtime's source and SGLang's
classes from the wheel (no torch) and names every attribute the runtime reads off a request, its
KV record, a batch, a draft input, the speculative worker, the target worker or its model runner
that SGLang's class does not define, and every field of the plain round's result that SGLang's
``GenerationBatchResult`` does not have.
"""

from __future__ import annotations

import ast
import warnings
from functools import cache
from pathlib import Path

import pytest

from agent.install.patching import apply_patch_set
from agent.install.patchset import load_patch_set

RUNTIME = "sglang/srt/speculative/k25_zero_step_runtime.py"
RUNTIME_PARTS = "sglang/srt/speculative/k25_zero_step_*.py"
"""The runtime is its entry module (SGLang's hooks call it) and the parts beside it (the plain round,
the ring, the catch-up, the timer; the policy reads none of SGLang's objects)."""


SCHEDULE_BATCH = "srt/managers/schedule_batch.py"  # where Req, ReqKvInfo and ScheduleBatch live


@cache
def _classes(package: Path) -> dict[str, ast.ClassDef]:
    """Every top-level class of the package by name: schedule_batch.py's first (other modules have
    classes of the same names, a ``Req`` among them), then the first found for a base class."""
    found: dict[str, ast.ClassDef] = {}
    for path in [package / SCHEDULE_BATCH, *sorted(package.rglob("*.py"))]:
        text = path.read_text(errors="replace")
        if "class " not in text:
            continue
        with warnings.catch_warnings():  # SGLang's own files hold invalid escapes ("\(") in strings
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            tree = ast.parse(text)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, node)
    return found


def class_attributes(package: Path, name: str) -> set[str]:
    """Fields, class attributes, methods and ``self.X`` assignments of a class and its bases."""
    classes = _classes(package)
    seen: set[str] = set()
    names: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in classes:
            continue
        seen.add(current)
        node = classes[current]
        todo += [b.id for b in node.bases if isinstance(b, ast.Name)]
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
            elif isinstance(item, ast.Assign):
                names.update(t.id for t in item.targets if isinstance(t, ast.Name))
            elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(item.name)
        for sub in ast.walk(node):
            targets = sub.targets if isinstance(sub, ast.Assign) else [getattr(sub, "target", None)]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    names.add(target.attr)
    return names


def unknown_reads(runtime_source: str, package: Path) -> list[str]:
    """``req.X``, ``req.kv.X``, ``batch.X`` and draft-input reads that SGLang's ``Req``, ``ReqKvInfo``,
    ``ScheduleBatch`` and ``EagleDraftInput`` do not define (what the runtime sets on a batch or a draft
    input itself counts as defined)."""
    tree = ast.parse(runtime_source)
    known = {
        "req": class_attributes(package, "Req"),
        "req.kv": class_attributes(package, "ReqKvInfo"),
        "batch": class_attributes(package, "ScheduleBatch"),
        "draft_input": class_attributes(package, "EagleDraftInput"),  # the batch's spec_info
        "caught": class_attributes(package, "EagleDraftInput"),  # the catch-up's next draft input
        "worker": class_attributes(package, "EAGLEWorkerV2"),  # the speculative worker patch 03 rides on
        "target_worker": class_attributes(package, "TpModelWorker"),
        "model_runner": class_attributes(package, "ModelRunner"),
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("batch", "draft_input")
        ):
            known[node.value.id].add(node.attr)
    unknown = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in known:
            key = owner.id
        elif (
            isinstance(owner, ast.Attribute)
            and owner.attr == "kv"
            and isinstance(owner.value, ast.Name)
            and owner.value.id == "req"
        ):
            key = "req.kv"
        else:
            continue
        if node.attr not in known[key]:
            unknown.append(f"{key}.{node.attr} (line {node.lineno})")
    return unknown


def unknown_result_fields(runtime_source: str, package: Path) -> list[str]:
    """Keywords the runtime passes to ``GenerationBatchResult`` that SGLang's class does not have
    (the plain round builds the result the scheduler's result processing reads)."""
    fields = class_attributes(package, "GenerationBatchResult")
    return [
        f"{keyword.arg} (line {node.lineno})"
        for node in ast.walk(ast.parse(runtime_source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "GenerationBatchResult"
        for keyword in node.keywords
        if keyword.arg not in fields
    ]


@pytest.fixture
def runtime_source(site_packages: Path) -> str:
    """The runtime's modules' source, as ``agent install`` leaves them in site-packages, as one text
    (the entry module first): what the checks read is every module the runtime is made of."""
    apply_patch_set(site_packages, load_patch_set())
    parts = sorted(site_packages.glob(RUNTIME_PARTS), key=lambda p: (p.name != Path(RUNTIME).name, p.name))
    assert len(parts) > 1 and parts[0].name == Path(RUNTIME).name
    return "\n".join(p.read_text() for p in parts)


def test_the_plain_rounds_result_has_only_fields_sglangs_result_has(
    runtime_source: str, sglang_src: Path
) -> None:
    source = runtime_source
    assert "accept_lens=ones[:bs]" in source  # the result this check exists for is there to be checked
    assert unknown_result_fields(source, sglang_src) == []
    broken = source.replace("accept_lens=ones[:bs]", "accept_len=ones[:bs]")
    assert [u.split(" ")[0] for u in unknown_result_fields(broken, sglang_src)] == ["accept_len"]


def test_the_runtime_reads_only_what_sglangs_request_and_batch_have(
    runtime_source: str, sglang_src: Path
) -> None:
    source = runtime_source
    assert "req.kv.req_pool_idx" in source  # the read this check exists for is there to be checked
    assert unknown_reads(source, sglang_src) == []


def test_the_check_names_a_read_sglang_does_not_have(runtime_source: str, sglang_src: Path) -> None:
    """It can fail: the read that crashed the real engine is named, with its line."""
    source = runtime_source.replace("req.kv.req_pool_idx", "req.req_pool_idx")
    unknown = unknown_reads(source, sglang_src)
    assert len(unknown) == 1 and unknown[0].startswith("req.req_pool_idx (line ")
    broken_batch = source.replace("batch.req_pool_indices", "batch.req_pool_idxs", 1)
    assert any(u.startswith("batch.req_pool_idxs") for u in unknown_reads(broken_batch, sglang_src))
    broken_draft = source.replace("caught.topk_p", "caught.top_p", 1)
    assert any(u.startswith("caught.top_p") for u in unknown_reads(broken_draft, sglang_src))
    broken_worker = source.replace("worker.target_worker", "worker.target_runner", 1)
    assert any(u.startswith("worker.target_runner") for u in unknown_reads(broken_worker, sglang_src))
    broken_runner = source.replace("model_runner.sample(", "model_runner.sample_tokens(", 1)
    assert any(u.startswith("model_runner.sample_tokens") for u in unknown_reads(broken_runner, sglang_src))


def _bonus_only_branch(overlap_source: str) -> tuple[ast.If, int]:
    """The patched ``FutureMap._resolve_spec_extras``: its plain-round branch and the line of the gather."""
    tree = ast.parse(overlap_source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FutureMap")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_resolve_spec_extras")
    (branch,) = [
        n for n in ast.walk(fn) if isinstance(n, ast.If) and "reads_bonus_only(batch)" in ast.unparse(n.test)
    ]
    gather = min(
        n.lineno
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "gather_spec_extras"
    )
    return branch, gather


def test_the_future_map_reads_only_the_bonus_token_for_a_plain_round(site_packages: Path) -> None:
    """Before it gathers top-k and hidden state, the resolve asks the runtime and, for a plain round,
    reads the bonus token alone and returns (the buffers keep the rest for the resume)."""
    apply_patch_set(site_packages, load_patch_set())
    branch, gather = _bonus_only_branch((site_packages / "sglang/srt/managers/overlap_utils.py").read_text())
    assert branch.lineno < gather
    assert [ast.unparse(s) for s in branch.body] == [
        "draft_input.bonus_tokens = self.output_tokens_buf[indices]",
        "return",
    ]
    runtime = ast.parse((site_packages / RUNTIME).read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == "reads_bonus_only" for n in runtime.body)
