"""The stubs mypy checks the overlay with (``agent/install/overlay/typings``) say what SGLang and torch have.

A stub that names something the pinned wheel lacks would let the overlay type-check and then fail on
the engine; so every stubbed SGLang module, class, member, function and parameter is looked up in the
wheel's own source (no torch needed), and every stubbed torch name in a real torch (the CPU venv).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agent.install.patchset import OVERLAY_DIR, load_overlay

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "smoke"))
from test_tiny_models import torch_python  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[2]
TYPINGS = OVERLAY_DIR / "typings"


def _stub_modules(top: str) -> list[tuple[str, Path]]:
    found = []
    for path in sorted((TYPINGS / top).rglob("*.pyi")):
        parts = path.relative_to(TYPINGS).with_suffix("").parts
        found.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return found


def _wheel_module(package: Path, module: str) -> ast.Module | None:
    base = package.parent / module.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return ast.parse(path.read_text())
    return None


def _definition(package: Path, module: str, name: str, hops: int = 3) -> tuple[str, ast.AST] | None:
    """Where ``module`` defines ``name`` (a def, a class, an assignment), following re-exports: the
    defining module and the node."""
    tree = _wheel_module(package, module)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            return module, node
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return module, node
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return module, node
        if isinstance(node, ast.ImportFrom) and node.module and hops:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _definition(package, node.module, alias.name, hops - 1)
    return None


def _members(package: Path, module: str, node: ast.ClassDef, depth: int = 6) -> set[str]:
    """Fields, class attributes, methods and ``self.X`` assignments of a class and its bases."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(item.name)
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and ast.unparse(sub.value) == "self"
        ):
            names.add(sub.attr)
    for base in node.bases:
        found = _definition(package, module, base.id) if isinstance(base, ast.Name) and depth else None
        if found is not None and isinstance(found[1], ast.ClassDef):
            names |= _members(package, found[0], found[1], depth - 1)
    return names


def _params(fn: ast.FunctionDef) -> dict[str, tuple[str, bool]]:
    """Parameter name -> (kind, has a default), ``self``/``cls`` left out."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    out = {a.arg: ("positional", d) for a, d in zip(positional, defaults, strict=True)}
    out |= {a.arg: ("keyword", d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)}
    out.pop("self", None)
    out.pop("cls", None)
    return out


def _is_dataclass(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list)


def _dataclass_init(node: ast.ClassDef) -> ast.FunctionDef:
    """The ``__init__`` ``@dataclass`` writes: one parameter per field, in order."""
    fields = [
        item for item in node.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]
    init = ast.parse("def __init__(self): pass").body[0]
    assert isinstance(init, ast.FunctionDef)
    init.args.args += [ast.arg(arg=f.target.id) for f in fields if isinstance(f.target, ast.Name)]
    init.args.defaults = [f.value for f in fields if f.value is not None]
    return init


def _function_problems(where: str, stub: ast.FunctionDef, real: ast.FunctionDef) -> list[str]:
    theirs, ours = _params(real), _params(stub)
    problems = [  # keyword-only in the stub is stricter than the wheel, never looser
        f"{where}({name}): the wheel has {theirs.get(name, ('no such', False))[0]} parameter"
        for name, (kind, _) in ours.items()
        if name not in theirs or (kind == "positional" and theirs[name][0] == "keyword")
    ]
    problems += [
        f"{where}: the wheel's required parameter {name} is not in the stub"
        for name, (_, default) in theirs.items()
        if not default and name not in ours and not (real.args.vararg or real.args.kwarg)
    ]
    return problems


def stub_problems(package: Path) -> list[str]:
    """Everything a SGLang stub names that the wheel does not have, as it does not have it."""
    problems = []
    for module, path in _stub_modules("sglang"):
        if _wheel_module(package, module) is None:
            problems.append(f"{module}: no such module in the wheel")
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom | ast.Import):
                continue
            name = (
                node.name
                if isinstance(node, ast.FunctionDef | ast.ClassDef)
                else ast.unparse(node).split(":")[0]
            )
            found = _definition(package, module, name)
            real = found[1] if found else None
            if found is None:
                problems.append(f"{module}.{name}: not in the wheel")
            elif isinstance(node, ast.FunctionDef):
                if not isinstance(real, ast.FunctionDef):
                    problems.append(f"{module}.{name}: not a function in the wheel")
                else:
                    problems += _function_problems(f"{module}.{name}", node, real)
            elif isinstance(node, ast.ClassDef):
                if not isinstance(real, ast.ClassDef):
                    problems.append(f"{module}.{name}: not a class in the wheel")
                    continue
                members = _members(package, found[0], real)
                methods = {n.name: n for n in ast.walk(real) if isinstance(n, ast.FunctionDef)}
                if _is_dataclass(real) and "__init__" not in methods:
                    methods["__init__"] = _dataclass_init(real)
                    members.add("__init__")
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        member = item.name
                        if member in methods:
                            problems += _function_problems(f"{module}.{name}.{member}", item, methods[member])
                    elif isinstance(item, ast.AnnAssign | ast.Assign):
                        member = ast.unparse(item).split(":")[0].split("=")[0].strip()
                    else:
                        continue
                    if member not in members:
                        problems.append(f"{module}.{name}.{member}: not in the wheel's class")
    return problems


def test_every_sglang_stub_names_what_the_wheel_has(sglang_src: Path) -> None:
    assert len(_stub_modules("sglang")) >= 8
    assert stub_problems(sglang_src) == []


def test_the_stub_check_names_what_the_wheel_lacks(
    sglang_src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It can fail: a renamed parameter, a missing member and a missing module are each named."""
    fake = tmp_path / "typings"
    (fake / "sglang/srt/speculative").mkdir(parents=True)
    (fake / "sglang/srt/speculative/eagle_info.pyi").write_text(
        "class EagleDraftInput:\n    top_p: int\n    def __init__(self, bonus_token: int = 0) -> None: ...\n"
    )
    (fake / "sglang/srt/k25_nothing.pyi").write_text("def f() -> None: ...\n")
    monkeypatch.setattr(sys.modules[__name__], "TYPINGS", fake)
    assert sorted(stub_problems(sglang_src)) == [
        "sglang.srt.k25_nothing: no such module in the wheel",
        "sglang.srt.speculative.eagle_info.EagleDraftInput.__init__(bonus_token): the wheel has no such parameter",
        "sglang.srt.speculative.eagle_info.EagleDraftInput.top_p: not in the wheel's class",
    ]


def _torch_names() -> dict[str, list[str]]:
    """``{"torch": [...], "torch.Tensor": [...], ...}``: every name the torch stubs define."""
    names: dict[str, list[str]] = {}
    for module, path in _stub_modules("torch"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                names.setdefault(module, []).append(node.name)
            elif isinstance(node, ast.ClassDef):
                names.setdefault(module, []).append(node.name)
                members = [
                    item.name if isinstance(item, ast.FunctionDef) else ast.unparse(item.target)
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AnnAssign)
                ]
                names[f"{module}.{node.name}"] = [m for m in members if m != "__init__"]
            elif (
                isinstance(node, ast.AnnAssign)
                and not ast.unparse(node.target).startswith("_")
                and ast.unparse(node.annotation) != "TypeAlias"
            ):
                names.setdefault(module, []).append(ast.unparse(node.target))
    return names


@pytest.mark.slow
def test_every_torch_stub_name_is_in_torch(torch_python: Path) -> None:  # noqa: F811
    names = _torch_names()
    assert {"zeros", "Tensor", "cuda"} <= set(names["torch"]) | {"cuda"} and "index_copy_" in names[
        "torch.Tensor"
    ]
    code = (
        "import importlib, json, sys\n"
        "names = json.loads(sys.argv[1])\n"
        "missing = []\n"
        "for owner, members in names.items():\n"
        "    try:\n"
        "        obj = importlib.import_module(owner)\n"
        "    except ImportError:\n"
        "        mod, _, attr = owner.rpartition('.')\n"
        "        obj = getattr(importlib.import_module(mod), attr)\n"
        "    missing += [f'{owner}.{m}' for m in members if not hasattr(obj, m)]\n"
        "print(json.dumps(missing))\n"
    )
    done = subprocess.run(
        [str(torch_python), "-c", code, json.dumps(names)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_mypy_checks_every_overlay_module() -> None:
    """pyproject's mypy ``modules`` list is the overlay, whole (a module left off is never checked)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    listed = set(config["modules"])
    overlay = {item.path.removesuffix(".py").replace("/", ".") for item in load_overlay()}
    assert listed == overlay
    assert config["mypy_path"] == ["agent/install/overlay", "agent/install/overlay/typings"]
