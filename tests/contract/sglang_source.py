"""Reading the pinned SGLang wheel's source without importing it (no torch): its CLI flags, and its functions.

Flags follow 0.5.23's own registration rules (``srt/arg_groups/arg_utils.py:
add_cli_args_from_dataclass``): every field of a namespace class in ``srt/arg_groups/fields/``
annotated ``A[T, "help"]`` or ``A[T, Arg(...)]`` becomes ``--field-name`` (or ``Arg(cli_name=)``),
plus ``Arg(aliases=)``; ``Arg(no_cli=True)`` has no flag; ``bool`` is a switch; ``Literal[...]``
gives the choices; ``List[X]`` takes one or more values. ``argparse.BooleanOptionalAction`` adds a
``--no-`` form. ``ServerArgs.add_cli_args`` in ``srt/server_args.py`` registers a few more by hand.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

FlagKind = Literal["switch", "value", "list"]


@dataclass(frozen=True)
class Flag:
    name: str
    field: str
    kind: FlagKind
    value_type: str | None = None  # "int" | "float" | "str" | None (custom parser)
    choices: tuple[str, ...] | None = None


def _literal_values(node: ast.expr) -> tuple[Any, ...] | None:
    """Values of ``Literal[...]`` inside ``node`` (also under Optional[...]), else None."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == "Literal":
            elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            return tuple(ast.literal_eval(e) for e in elts)
    return None


def _base_type(node: ast.expr) -> tuple[str | None, bool]:
    """(scalar type name, is_list) of an annotation like ``Optional[int]`` or ``List[str]``."""
    if isinstance(node, ast.Name):
        return node.id, False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _base_type(ast.parse(node.value, mode="eval").body)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        outer = node.value.id
        inner = node.slice
        if outer in ("Optional",):
            return _base_type(inner)
        if outer in ("List", "list"):
            return _base_type(inner)[0], True
        if outer == "Union" and isinstance(inner, ast.Tuple):
            names = [e for e in inner.elts if not (isinstance(e, ast.Constant) and e.value is None)]
            names = [e for e in names if not (isinstance(e, ast.Name) and e.id == "None")]
            return _base_type(names[0]) if len(names) == 1 else (None, False)
        if outer == "Literal":
            return "literal", False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side in (node.left, node.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return _base_type(side)
    return None, False


def module_constants(path: Path) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments (lists/sets/tuples of literals) of a source file."""
    out: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return out


def _resolve_choices(node: ast.expr, constants: dict[str, Any]) -> tuple[str, ...] | None:
    if isinstance(node, ast.Name):
        value = constants.get(node.id)
        return tuple(str(v) for v in value) if isinstance(value, list | tuple | set | frozenset) else None
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return tuple(str(v) for v in value)


def _annotated_fields(path: Path, constants: dict[str, Any]) -> list[Flag]:
    flags: list[Flag] = []
    for cls in ast.walk(ast.parse(path.read_text())):
        if not isinstance(cls, ast.ClassDef):
            continue
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            ann = stmt.annotation
            if not (
                isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"
            ):
                continue
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            type_node, meta = elts[0], elts[1] if len(elts) > 1 else None
            field = stmt.target.id
            kw: dict[str, ast.expr] = {}
            if isinstance(meta, ast.Call) and isinstance(meta.func, ast.Name) and meta.func.id == "Arg":
                kw = {k.arg: k.value for k in meta.keywords if k.arg}
            elif not (isinstance(meta, ast.Constant) and isinstance(meta.value, str)):
                continue  # not an Arg / help string: SGLang skips it too
            if "no_cli" in kw and ast.literal_eval(kw["no_cli"]) is True:
                continue
            cli = ast.literal_eval(kw["cli_name"]) if "cli_name" in kw else "--" + field.replace("_", "-")
            names = [cli] + (list(ast.literal_eval(kw["aliases"])) if "aliases" in kw else [])
            scalar, is_list = _base_type(type_node)
            literal = _literal_values(type_node)
            choices = _resolve_choices(kw["choices"], constants) if "choices" in kw else None
            if choices is None and literal is not None:
                choices = tuple(str(v) for v in literal)
            action = kw.get("action")
            kind: FlagKind
            if action is not None:
                text = ast.unparse(action)
                kind = "switch" if "BooleanOptionalAction" in text or "store_true" in text else "value"
                if "BooleanOptionalAction" in text:
                    names += ["--no-" + n[2:] for n in names]
            elif literal is not None:
                kind = "value"
            elif is_list and "type_parser" not in kw:
                kind = "list"
            elif scalar == "bool":
                kind = "switch"
            else:
                kind = "value"
            value_type = (
                None if "type_parser" in kw else (scalar if scalar in ("int", "float", "str") else None)
            )
            if literal is not None and literal:
                value_type = type(literal[0]).__name__
            for name in names:
                flags.append(Flag(name, field, kind, value_type, choices))
    return flags


def _hand_registered(server_args: Path, src: Path) -> list[Flag]:
    """``parser.add_argument(...)`` calls in ``ServerArgs.add_cli_args``."""
    tree = ast.parse(server_args.read_text())
    reasoning = module_constants(src / "srt/parser/reasoning_parser_names.py").get("REASONING_PARSER_NAMES")
    tools = module_constants(src / "srt/function_call/parser_names.py").get("TOOL_CALL_PARSER_NAMES")
    dynamic = {"--reasoning-parser": reasoning, "--tool-call-parser": tools}
    flags: list[Flag] = []
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "add_cli_args"):
            continue
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            if call.func.attr != "add_argument":
                continue
            names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            action = ast.unparse(kw["action"]) if "action" in kw else ""
            kind: FlagKind = "switch" if ("store_true" in action or "StoreTrue" in action) else "value"
            choices: tuple[str, ...] | None = None
            for name in names:
                extra = dynamic.get(name)
                if extra is not None:
                    choices = ("auto", *(str(x) for x in extra))
            value_type = ast.unparse(kw["type"]) if "type" in kw else None
            for name in names:
                flags.append(Flag(name, name[2:].replace("-", "_"), kind, value_type, choices))
    return flags


def cli_flags(src: Path) -> dict[str, Flag]:
    """Every flag 0.5.23's ``sglang serve`` / ``launch_server`` parser accepts, by name."""
    constants = module_constants(src / "srt/arg_groups/choices.py")
    flags: dict[str, Flag] = {}
    for path in sorted((src / "srt/arg_groups/fields").glob("*.py")):
        for flag in _annotated_fields(path, constants):
            flags[flag.name] = flag
    for flag in _hand_registered(src / "srt/server_args.py", src):
        flags[flag.name] = flag
    return flags


def field_names(src: Path) -> set[str]:
    """Every ``ServerArgs`` field declared in the namespaces (CLI or not)."""
    names: set[str] = set()
    for path in (src / "srt/arg_groups/fields").glob("*.py"):
        for cls in ast.walk(ast.parse(path.read_text())):
            if isinstance(cls, ast.ClassDef):
                for stmt in cls.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        names.add(stmt.target.id)
    return names


def function_source(path: Path, *names: str) -> str:
    """The source of the named top-level functions/classes/assignments of a file, in file order."""
    text = path.read_text()
    tree = ast.parse(text)
    parts: list[str] = []
    for node in tree.body:
        name = getattr(node, "name", None)
        if name is None and isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            name = target.id if isinstance(target, ast.Name) else None
        if name in names:
            segment = ast.get_source_segment(text, node)
            assert segment is not None
            parts.append(segment)
    missing = set(names) - {getattr(n, "name", None) for n in tree.body} - _assigned(tree)
    assert not missing, f"{path.name} no longer defines {sorted(missing)}"
    return "\n\n\n".join(parts)


def _assigned(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def exec_functions(path: Path, names: tuple[str, ...], namespace: dict[str, Any]) -> types.SimpleNamespace:
    """Compile the named definitions from ``path`` (with its real file name) into ``namespace``."""
    code = compile("from __future__ import annotations\n" + function_source(path, *names), str(path), "exec")
    exec(code, namespace)
    return types.SimpleNamespace(**{n: namespace[n] for n in names})


def dict_keys_returned(path: Path, function: str) -> set[str]:
    """String keys of the dict literal(s) a function returns."""
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, ast.FunctionDef) and fn.name == function:
            keys: set[str] = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
                    keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
            return keys
    raise AssertionError(f"{path.name} has no function {function}")


def subscript_keys_assigned(path: Path, target: str) -> set[str]:
    """Keys written as ``<target>["key"] = ...`` anywhere in a file."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if (
                    isinstance(t, ast.Subscript)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == target
                    and isinstance(t.slice, ast.Constant)
                ):
                    keys.add(t.slice.value)
    return keys


def flags_table(src: Path) -> dict[str, str]:
    """``{flag: kind}`` as shipped in ``agent/sglang/cli_flags.json``."""
    return {name: flag.kind for name, flag in sorted(cli_flags(src).items())}


if __name__ == "__main__":
    # Regenerate agent/sglang/cli_flags.json from an extracted wheel's sglang/ directory:
    #   python tests/contract/sglang_source.py /path/to/sglang > agent/sglang/cli_flags.json
    import json
    import sys

    print(
        json.dumps(
            {"sglang_version": "0.5.23", "flags": flags_table(Path(sys.argv[1]))}, indent=1, sort_keys=True
        )
    )


def declared_metric_names(src: Path) -> set[str]:
    """Every ``name="sglang:..."`` given to a Prometheus metric constructor in the observability package."""
    names: set[str] = set()
    for path in (src / "srt/observability").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if (
                        kw.arg == "name"
                        and isinstance(kw.value, ast.Constant)
                        and isinstance(kw.value.value, str)
                    ):
                        names.add(kw.value.value)
    return names
