"""Which requirements of a ``--no-deps`` stack are really unmet, asked of the stack's own python.

``pip check`` / ``uv pip check`` look only at the new venv's own site-packages, so with
``--system-site-packages`` from a venv interpreter (the H200 image's ``/opt/torch/.venv``) every
dependency the parent venv provides reads as missing, though the stack imports it. The check here
runs ``requirements_probe.py`` with the stack's python: it sees the same ``sys.path`` the server
does (own site-packages, the parent's through the .pth, the system site) and reports only the
requirements nothing on that path meets, each with what was found instead.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agent.install.stack import CommandFailed, run, venv_python

PROBE = Path(__file__).with_name("requirements_probe.py")


class Unmet(BaseModel):
    """One requirement of an installed package that the stack's python cannot meet."""

    package: str
    package_version: str
    requirement: str
    """As written in the package's metadata, less its marker (which is true for this python)."""
    problem: str
    """``missing``, ``wrong version``, ``not a valid version`` or ``cannot be read (...)``."""
    found: str | None = None
    found_version: str | None = None
    found_in: str | None = None
    """The folder of the distribution that was found (the first on ``sys.path``, as import finds)."""

    def describe(self) -> str:
        head = f"{self.package} {self.package_version} requires {self.requirement}"
        if self.problem == "missing":
            return f"{head}, but it is not installed anywhere on the stack's sys.path"
        if self.found is None:
            return f"{head}, which {self.problem}"
        found = f"{self.found} {self.found_version} in {self.found_in}"
        if self.problem == "wrong version":
            return f"{head}, but found {found}"
        return f"{head}, but found {found}, {self.problem}"


class RequirementReport(BaseModel):
    checked: int = 0
    """Distributions installed in the stack's own site-packages, whose requirements were checked."""
    visible: int = 0
    """Distributions on the stack python's ``sys.path`` (by name, the first of each)."""
    packaging: str = ""
    """Which ``packaging`` evaluated the markers and specifiers (the stack's own, or the agent's)."""
    unmet: list[Unmet] = []
    error: str | None = None


def agent_packaging_folder() -> str | None:
    """The folder holding the agent's own ``packaging``, for a stack that has none (found, not imported)."""
    spec = importlib.util.find_spec("packaging")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def check_requirements(venv: Path) -> RequirementReport:
    """Run the probe with the stack's python. Raises CommandFailed when it could not say."""
    python = str(venv_python(venv))
    folder = agent_packaging_folder()
    argv = [python, "-c", PROBE.read_text(encoding="utf-8"), *([folder] if folder else [])]
    shown = [python, "-c", "<requirements check>"]
    try:
        out = run(argv, timeout=600)
    except CommandFailed as exc:
        raise CommandFailed(shown, exc.returncode, exc.output) from None
    lines = out.strip().splitlines()
    try:
        report = RequirementReport.model_validate_json(lines[-1] if lines else "")
    except ValidationError:
        raise CommandFailed(shown, 0, f"no report in its output:\n{out}") from None
    if report.error:
        raise CommandFailed(shown, 0, report.error)
    return report
