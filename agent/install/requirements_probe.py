"""Run by the stack's own python (its source passed as ``python -c``), never imported by the agent.

It checks the requirements of the distributions installed in the stack venv's own site-packages
against every distribution that python sees on its ``sys.path``: its own site-packages, a parent
venv's added by ``zz-k25-parent-site.pth``, the system site with ``--system-site-packages``. That is
what the server imports from. ``pip check`` and ``uv pip check`` look at the venv's own site-packages
only, so on the H200 image (whose python is itself a venv) everything the parent provides read as
"not installed": 125 warnings, nearly all false.

The rules are ``pip check``'s: a requirement counts when its marker is true for this interpreter with
``extra == ""`` (a requirement of an extra nobody asked for is not checked, nor are the extras a
requirement names); it is met when the first distribution of that name on ``sys.path`` (the one
``import`` and ``importlib.metadata`` find) has a version the specifier contains, pre-releases
included. The marker and specifier logic is ``packaging``'s: the stack's own copy (sglang and
transformers require it), else the agent's, whose folder is the first argument (added to
``sys.path`` only after the distributions were listed, so it is never one of them).

Prints one JSON object on its last line (read by ``agent.install.requirements``).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from typing import Any

Found = tuple[str, str, str, list[str]]
"""name, version, the folder it lives in, its Requires-Dist lines."""


def _listed() -> list[Found]:
    # Imports inside functions here are the order the module docstring needs: the distributions are
    # listed before the agent's packaging folder goes on sys.path.
    from importlib import metadata

    out = []
    for dist in metadata.distributions():
        try:
            name, version = (next(iter(dist.metadata.get_all(k) or []), None) for k in ("Name", "Version"))
            where = str(dist.locate_file(""))
            requires = list(dist.requires or [])
        except Exception:  # a broken .dist-info is not a requirement of anything: skip it
            continue
        if name and version:
            out.append((str(name), str(version), where, requires))
    return out


def _packaging(fallback: str | None) -> str:
    """Import packaging; say whose it is."""
    try:
        import packaging.requirements
    except ImportError:
        if not fallback:
            raise
        sys.path.append(fallback)
        import packaging.requirements  # noqa: F401

        return "the agent's, the stack has none"
    return "the stack's own"


def _spelled(req: Any) -> str:
    """The requirement as written, less its marker (true here, or it would not be checked)."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras} @ {req.url}" if req.url else f"{req.name}{extras}{req.specifier}"


def check(listed: list[Found], own: set[str]) -> dict[str, Any]:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    visible: dict[str, Found] = {}
    for found in listed:
        visible.setdefault(canonicalize_name(found[0]), found)
    checked = [f for f in visible.values() if os.path.realpath(f[2]) in own]
    unmet: list[dict[str, Any]] = []
    for name, version, _, requires in checked:
        for line in requires:
            item: dict[str, Any] = {"package": name, "package_version": version, "requirement": line}
            try:
                req = Requirement(line)
                if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                    continue
            except (InvalidRequirement, ValueError, TypeError) as exc:
                unmet.append({**item, "problem": f"cannot be read ({str(exc).splitlines()[0]})"})
                continue
            item["requirement"] = _spelled(req)
            dep = visible.get(canonicalize_name(req.name))
            if dep is None:
                unmet.append({**item, "problem": "missing"})
                continue
            item |= {"found": dep[0], "found_version": dep[1], "found_in": dep[2]}
            if not req.specifier:
                continue  # any version will do
            try:  # parsed first: some packaging versions raise on an invalid one, some say False
                found_version = Version(dep[1])
            except InvalidVersion:
                unmet.append({**item, "problem": "not a valid version"})
                continue
            if not req.specifier.contains(found_version, prereleases=True):
                unmet.append({**item, "problem": "wrong version"})
    return {"checked": len(checked), "visible": len(visible), "unmet": unmet}


def main(argv: list[str]) -> int:
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # python -c puts the caller's folder first; the server never sees it
    own = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    listed = _listed()
    try:
        whose = _packaging(argv[0] if argv else None)
    except ImportError as exc:
        print(json.dumps({"error": f"packaging is in neither the stack nor the agent ({exc})"}))
        return 0
    import packaging

    result = check(listed, own)
    result["packaging"] = f"packaging {packaging.__version__}, {whose}"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
