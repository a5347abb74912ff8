"""The environment switch ``speculation.skip_zero_step_draft_extend`` renders exists in 0.5.23, is read where
``agent.sglang.spec_env`` says, and does there what its docstring and the README say.

All from the wheel's source (``sglang_source``): SGLang's own ``EnvField``/``EnvBool`` classes are compiled
and read the values we render; the reads and the branch they switch are found in the syntax tree.
"""

from __future__ import annotations

import ast
import contextlib
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from sglang_source import exec_functions

from agent.profile import load_profile, parse_profile
from agent.sglang import launch, spec_env

pytestmark = pytest.mark.contract

VAR = spec_env.SKIP_ZERO_STEP_DRAFT_EXTEND
PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def _declaration(src: Path) -> ast.Assign:
    tree = ast.parse((src / spec_env.DECLARED_IN).read_text())
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == VAR for t in node.targets)
    ]
    assert len(found) == 1, f"{VAR} is declared {len(found)} times in {spec_env.DECLARED_IN}"
    return found[0]


def test_declared_as_a_boolean_that_defaults_to_off(sglang_src: Path) -> None:
    value = _declaration(sglang_src).value
    assert isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
    assert value.func.id == "EnvBool"
    assert [ast.literal_eval(a) for a in value.args] == [False]


def test_sglangs_own_env_reader_takes_the_values_we_render(
    sglang_src: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ns: dict[str, Any] = {
        "os": os,
        "warnings": warnings,
        "contextmanager": contextlib.contextmanager,
        "Any": Any,
    }
    classes = exec_functions(sglang_src / spec_env.DECLARED_IN, ("EnvField", "EnvBool"), ns)
    holder = type("Envs", (), {VAR: classes.EnvBool(False)})  # __set_name__ gives the field its name
    field = getattr(holder, VAR)
    monkeypatch.delenv(VAR, raising=False)
    assert field.get() is False
    rendered = {
        skip: launch.render_launch(profile, run_dir=tmp_path).env[VAR]
        for skip, profile in (
            (
                True,
                parse_profile(
                    (PROFILES / "kimi-k25-eagle3.toml")
                    .read_text()
                    .replace("[speculation]\n", "[speculation]\nskip_zero_step_draft_extend = true\n")
                ),
            ),
            (False, load_profile(PROFILES / "kimi-k25-eagle3.toml")),
        )
    }
    for skip, value in rendered.items():
        monkeypatch.setenv(VAR, value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an unparsable value would only warn and fall back
            assert field.get() is skip


def _reads(src: Path) -> set[tuple[str, str]]:
    """(file, Class.method) of every expression in a function that names the variable."""
    found: set[tuple[str, str]] = set()
    mentioned: set[str] = set()
    for path in sorted(src.rglob("*.py")):
        text = path.read_text(errors="replace")
        if VAR not in text:
            continue
        rel = str(path.relative_to(src))
        mentioned.add(rel)
        tree = ast.parse(text)
        for top in tree.body:
            owner = top.name if isinstance(top, ast.ClassDef) else ""
            for fn in ast.walk(top):
                if not isinstance(fn, ast.FunctionDef):
                    continue
                for node in ast.walk(fn):
                    if (isinstance(node, ast.Attribute) and node.attr == VAR) or (
                        isinstance(node, ast.Constant) and node.value == VAR
                    ):
                        found.add((rel, f"{owner}.{fn.name}"))
    # every other file that names it does so inside a function we found (no module-level read)
    assert mentioned - {spec_env.DECLARED_IN} == {f for f, _ in found}
    return found


def test_read_only_where_we_say(sglang_src: Path) -> None:
    assert _reads(sglang_src) == set(spec_env.READ_IN)


def test_eagle3_runs_on_the_worker_that_reads_it(sglang_src: Path) -> None:
    text = (sglang_src / "srt/speculative/spec_info.py").read_text()
    assert "from sglang.srt.speculative.eagle_worker_v2 import EAGLEWorkerV2" in text


def _method(src: Path, file: str, qualname: str) -> ast.FunctionDef:
    cls_name, fn_name = qualname.split(".")
    tree = ast.parse((src / file).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == fn_name)


def _calls(node: ast.AST) -> set[str]:
    return {ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}


def test_at_zero_steps_it_swaps_the_draft_extend_pass_for_zeroed_stubs(sglang_src: Path) -> None:
    ((file, qualname),) = spec_env.READ_IN
    forward = _method(sglang_src, file, qualname)
    branches = [
        node for node in ast.walk(forward) if isinstance(node, ast.If) and VAR in ast.unparse(node.test)
    ]
    assert len(branches) == 1
    branch = branches[0]
    # only at 0 steps, and only when the variable reads true
    assert isinstance(branch.test, ast.BoolOp) and isinstance(branch.test.op, ast.And)
    assert {ast.unparse(v) for v in branch.test.values} == {
        "self.speculative_num_steps == 0",
        f"envs.{VAR}.get()",
    }
    assert _calls(ast.Module(body=branch.body, type_ignores=[])) == {"self._stub_skipped_draft_extend"}
    assert "self.draft_worker._draft_extend_for_decode" in _calls(
        ast.Module(body=branch.orelse, type_ignores=[])
    )
    # the stub: the next draft input is zeros, which an upshift drafts from ("cold recovery")
    stub = _method(sglang_src, file, "EAGLEWorkerV2._stub_skipped_draft_extend")
    zeroed = {
        ast.unparse(t)
        for node in ast.walk(stub)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "torch.zeros"
        for t in node.targets
    }
    assert zeroed == {
        "next_draft_input.topk_p",
        "next_draft_input.topk_index",
        "next_draft_input.hidden_states",
    }
    assert "draft_extend" not in " ".join(_calls(stub))


def test_the_zero_step_verify_is_one_token_through_the_verify_path(sglang_src: Path) -> None:
    """What stays at 0 steps even with the skip (README: what "off" still costs)."""
    file = "srt/speculative/eagle_worker_v2.py"
    build = _method(sglang_src, file, "EAGLEWorkerV2._build_trivial_verify_input")
    ret = next(
        n
        for n in ast.walk(build)
        if isinstance(n, ast.Return)
        and isinstance(n.value, ast.Call)
        and ast.unparse(n.value.func) == "EagleVerifyInput"
    )
    assert isinstance(ret.value, ast.Call)
    kwargs = {k.arg: ast.unparse(k.value) for k in ret.value.keywords}
    assert kwargs["draft_token_num"] == "1" and kwargs["spec_steps"] == "0"
    # the target still returns the hidden states the draft would extend from
    assert kwargs["capture_hidden_mode"] == "CaptureHiddenMode.FULL"
