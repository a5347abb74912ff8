"""Moving the new modules out of the diffs changed no behaviour (issue 37).

``tests/fixtures/patch-set-before-overlay`` holds the three diffs as they were committed before the
move, new modules inside; ``tests/fixtures/patch-set-at-overlay-move`` the series and overlay the
move committed (the live set has moved on since: issue 36 changed the prefill hook and the runtime).
Both the old diffs (GNU patch) and the move's set (``agent install``'s own ``apply_patch_set``: the
overlay copied in, the series applied) go onto the pinned wheel's files:

* every SGLang file they touch comes out byte for byte the same (the hooks did not move);
* ``adaptive_live_control``, ``adaptive_live_readback`` and ``k25_zero_step_policy`` are the same
  programs: the same syntax tree once type annotations and the typing imports they need are set
  aside (ruff formatted them and mypy asked for annotations, nothing else);
* the runtime was split into parts (plain round, ring, catch-up, timer): every function and method
  of the old runtime is found, with the same syntax tree, in one of the parts, except the few named
  in ``CHANGED`` with what changed; those are held to the same behaviour by the overlay's torch tests
  (``agent/install/overlay/checks``, the former preflight's checks, run by ``test_zero_step_runtime.py``).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agent.install.patching import apply_patch_set
from agent.install.patchset import PatchSet, load_patch_set

REPO = Path(__file__).resolve().parents[2]
BEFORE = REPO / "tests" / "fixtures" / "patch-set-before-overlay"
MOVE = REPO / "tests" / "fixtures" / "patch-set-at-overlay-move"
SPECULATIVE = "sglang/srt/speculative"
SAME_MODULES = ("adaptive_live_control.py", "adaptive_live_readback.py", "k25_zero_step_policy.py")
OLD_RUNTIME = f"{SPECULATIVE}/k25_zero_step_runtime.py"
RENAMED = {"_slots_of": "slots_of"}
"""Old runtime names that the split made public (a part's function another part calls)."""
CHANGED = {
    "ZeroStepController._catch_up": "now k25_zero_step_catchup.catch_up(worker, ring, ...), returning what it held",
    "ZeroStepController.maybe_catch_up": "calls catch_up and keeps its result in last_caught",
    "ZeroStepController.plain_round": "asserts the plain state use_plain just found built (for mypy)",
    "ZeroStepController.routes_zero": "reads the threshold into an int local (for mypy)",
    "RoundTimer._drain": "pairs the marks with itertools.pairwise (ruff) instead of zip(m, m[1:])",
    "_plain_graph_runner_cls": "its class's capture-mode getter gives its result a type (for mypy)",
}
"""Old runtime functions whose text changed in the split, and how (their behaviour: agent/install/overlay/checks)."""


def _old_diffs() -> list[Path]:
    return sorted(BEFORE.glob("*.diff"))


def _created_by(diff: Path) -> list[str]:
    text = diff.read_text()
    return re.findall(r"^--- /dev/null\n\+\+\+ b/(\S+)", text, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def before(pristine_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel's files with the old diffs applied, as GNU patch leaves them."""
    root = tmp_path_factory.mktemp("before")
    for target in _moved().targets():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine_tree / target, root / target)
    for diff in _old_diffs():
        done = subprocess.run(
            ["patch", "-p1", "--batch", "--fuzz=0", "--forward", "-i", str(diff)],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def _moved() -> PatchSet:
    """The series and overlay as the move committed them."""
    return load_patch_set(MOVE / "patches", MOVE / "overlay")


@pytest.fixture
def after(site_packages: Path) -> Path:
    apply_patch_set(site_packages, _moved())
    return site_packages


def _without_annotations(tree: ast.AST) -> str:
    """The tree's dump with annotations, ``typing``/``collections.abc`` imports and
    ``if TYPE_CHECKING:`` blocks removed, and ``RENAMED`` names mapped."""

    class Strip(ast.NodeTransformer):
        def visit_arg(self, node: ast.arg) -> ast.arg:
            node.annotation = None
            return node

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
            node.returns = None
            node.name = RENAMED.get(node.name, node.name)
            self.generic_visit(node)
            return node

        def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
            if node.value is None:
                return None
            return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
            return None if node.module in ("typing", "collections.abc") else node

        def visit_If(self, node: ast.If) -> ast.AST | None:
            return None if ast.unparse(node.test) == "TYPE_CHECKING" else self.generic_visit(node)

        def visit_Name(self, node: ast.Name) -> ast.Name:
            node.id = RENAMED.get(node.id, node.id)
            return node

    return ast.dump(Strip().visit(tree))


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Top-level functions and class methods by qualified name."""
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[RENAMED.get(node.name, node.name)] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def test_the_fixture_is_the_patch_set_before_the_move() -> None:
    assert [d.stem for d in _old_diffs()] == _moved().names == load_patch_set().names
    created = [path for diff in _old_diffs() for path in _created_by(diff)]
    assert created == [
        f"{SPECULATIVE}/adaptive_live_control.py",
        f"{SPECULATIVE}/adaptive_live_readback.py",
        f"{SPECULATIVE}/k25_zero_step_policy.py",
        OLD_RUNTIME,
    ]


def test_every_sglang_file_gets_the_same_hooks(before: Path, after: Path) -> None:
    old_targets = {
        line[6:]
        for diff in _old_diffs()
        for line in diff.read_text().splitlines()
        if line.startswith("+++ b/") and line[6:] not in _created_by(diff)
    }
    assert old_targets == set(_moved().targets())
    for target in sorted(old_targets):
        assert (after / target).read_bytes() == (before / target).read_bytes(), target


def test_the_modules_that_were_not_split_are_the_same_programs(before: Path, after: Path) -> None:
    for name in SAME_MODULES:
        old = ast.parse((before / SPECULATIVE / name).read_text())
        new = ast.parse((after / SPECULATIVE / name).read_text())
        assert _without_annotations(new) == _without_annotations(old), name


def test_the_comparison_sees_a_changed_statement(before: Path) -> None:
    source = (before / SPECULATIVE / "k25_zero_step_policy.py").read_text()
    changed = source.replace(
        "return min(default_reserve, 1 + inflight)", "return min(default_reserve, inflight)"
    )
    assert changed != source
    assert _without_annotations(ast.parse(changed)) != _without_annotations(ast.parse(source))


def test_every_function_of_the_old_runtime_is_in_a_part_unchanged(before: Path, after: Path) -> None:
    old = _functions(ast.parse((before / OLD_RUNTIME).read_text()))
    new: dict[str, ast.FunctionDef] = {}
    for part in sorted((after / SPECULATIVE).glob("k25_zero_step_*.py")):
        if part.name != "k25_zero_step_policy.py":
            new.update(_functions(ast.parse(part.read_text())))
    assert set(CHANGED) <= set(old)
    assert "catch_up" in new and "ZeroStepController._catch_up" not in new
    differ = sorted(
        name
        for name, node in old.items()
        if name not in CHANGED
        and (name not in new or _without_annotations(new[name]) != _without_annotations(node))
    )
    assert differ == []
