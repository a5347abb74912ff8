"""What ``agent install`` will do for a profile, decided before anything changes and shown first.

Layout (why: a failed install must leave the previous stack usable, and a venv cannot be moved once
built, because its scripts and ``pyvenv.cfg`` name their own path): every build goes into its own
folder ``<venv>.d/<time>-<fingerprint>``, and ``<venv>`` is a symbolic link to the build in use. A new
build is made, patched and verified beside the old one, and only then does the link switch, by one
atomic rename. The launcher always runs ``<venv>/bin/python``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from agent.install.manifest import MANIFEST_NAME
from agent.install.patchset import PATCHED_SGLANG_VERSION, PatchSet, load_patch_set
from agent.install.stack import (
    MIN_PIP_FOR_PYTHON_OPTION,
    Installer,
    PipRunner,
    PythonFacts,
    Sources,
    agent_pip_version,
    find_python,
    find_uv,
    python_facts,
)
from agent.install.wheelhouse import Wheelhouse, scan_wheelhouse
from agent.profile.schema import Profile
from agent.sglang.startup import START_UP_IMPORTS

STEPS = (
    "create venv",
    "install packages",
    "check requirements",
    "apply patches",
    "byte-compile",
    "verify",
    "write manifest",
    "switch stack",
)


def builds_dir(link: Path) -> Path:
    return link.with_name(link.name + ".d")


@dataclass(frozen=True)
class InstallPlan:
    profile_name: str
    sglang_version: str
    python_version: str
    python: str | None
    installer: Installer
    uv: str | None
    link: Path
    sources: Sources
    patch_set: PatchSet
    problems: tuple[str, ...] = field(default=())
    wheelhouse: Wheelhouse | None = None
    system_site: bool = False
    """The venv sees the packages of the interpreter that builds it (``--system-site-packages``)."""
    parent_site: tuple[str, ...] = ()
    """That interpreter's own site-packages when it is itself a venv (added by a .pth file)."""
    with_pip: bool = True
    """False: the interpreter has no ensurepip; the venv is made --without-pip and ``pip_runner`` runs pip."""
    pip_runner: PipRunner = "venv"

    @property
    def offline(self) -> bool:
        return self.wheelhouse is not None

    @property
    def no_deps(self) -> bool:
        """Every wheel of the wheelhouse, unresolved: the wheelhouse plus the image's packages is the stack."""
        return self.wheelhouse is not None and self.system_site

    def source_args(self) -> list[str] | None:
        """Where pip/uv take packages from; None: the ``sources`` (index, find-links)."""
        if self.wheelhouse is None:
            return None
        if self.no_deps:
            return ["--no-index", "--no-deps"]
        return ["--no-index", "--find-links", str(self.wheelhouse.directory)]

    def install_requirements(self) -> list[str]:
        if self.no_deps and self.wheelhouse is not None:
            return [str(w.path) for w in self.wheelhouse.wheels]
        return [self.requirement]

    @property
    def builds(self) -> Path:
        return builds_dir(self.link)

    @property
    def requirement(self) -> str:
        return f"sglang=={self.sglang_version}"

    @property
    def packages_fingerprint(self) -> str:
        """What decides the installed packages: the pin and the interpreter (not where they came from)."""
        key = f"{self.requirement};python={self.python_version}"
        if self.wheelhouse is not None:
            key += f";wheelhouse={self.wheelhouse.fingerprint};no-deps={self.no_deps}"
        if self.system_site:
            key += f";system-site={self.python};parent={','.join(self.parent_site)}"
        return hashlib.sha256(key.encode()).hexdigest()

    def render(self) -> list[str]:
        lines = [f"agent install: plan for profile {self.profile_name}"]

        def row(key: str, value: str) -> None:
            lines.append(f"  {key:<15} {value}")

        row("stack venv", f"{self.link} (a link to the build in use; builds live in {self.builds}/)")
        if self.installer == "uv" and self.python == self.python_version:
            row("python", f"{self.python_version} (uv finds it, or fetches a standalone build)")
        else:
            row("python", f"{self.python_version} ({self.python or 'not found'})")
        if self.installer == "uv":
            row("installer", f"uv ({self.uv}): uv venv + uv pip install")
        else:
            row("installer", "python -m venv + pip (uv not on PATH)")
        if self.no_deps and self.wheelhouse is not None:
            row(
                "packages",
                f"every wheel of {self.wheelhouse.describe()}, --no-deps: the wheelhouse plus the "
                "interpreter's own packages is the stack; requirements unmet on the stack's sys.path are "
                "listed as warnings",
            )
        elif self.wheelhouse is not None:
            row(
                "packages",
                f"{self.requirement} and the versions it pins, resolved from {self.wheelhouse.describe()}",
            )
        else:
            row("packages", f"{self.requirement} and the versions it pins, from {self.sources.describe()}")
        if self.system_site:
            row("system site", f"the venv also sees the packages of {self.python} (--system-site-packages)")
            for folder in self.parent_site:
                row("", f"    {folder} (that interpreter is a venv: added by a .pth after the venv's own)")
        if not self.with_pip:
            how = {
                "agent": "the agent's own pip (pip --python <venv python>)",
                "wheel": f"the pip wheel in the wheelhouse ({self.wheelhouse.pip_wheel.path.name if self.wheelhouse and self.wheelhouse.pip_wheel else '?'})",
                "venv": "the venv's pip",
            }[self.pip_runner]
            row("pip", f"{self.python} has no ensurepip: venv --without-pip, pip from {how}")
        row("byte-compile", "site-packages with compileall -j 0 (all cores) after a --no-compile install")
        for i, item in enumerate(self.patch_set.overlay):
            row("overlay" if i == 0 else "", f"adds    {item.path}  sha256 {item.sha256[:16]}")
        for i, patch in enumerate(self.patch_set.patches):
            row("patches" if i == 0 else "", f"{patch.name}  sha256 {patch.sha256[:16]}  {patch.subject}")
            for target in patch.targets:
                row("", f"    changes {target}")
        row(
            "patch set",
            f"sha256 {self.patch_set.sha256[:16]}: the overlay copied in and the series applied with "
            "GNU patch -p1, after a RECORD check",
        )
        row(
            "verify",
            "import sglang, the patch's modules and what the server imports at start-up "
            f"({', '.join(START_UP_IMPORTS)}), the version is the pin, "
            "python -m sglang.launch_server --help, installed file hashes",
        )
        row("manifest", f"{self.link}/{MANIFEST_NAME}")
        row("on failure", f"the new build is deleted; {self.link} keeps pointing at the previous build")
        for problem in self.problems:
            lines.append(f"  problem: {problem}")
        return lines


def _pip_runner(
    facts: PythonFacts | None, wheelhouse: Wheelhouse | None
) -> tuple[bool, PipRunner, str | None]:
    """(venv gets its own pip, who runs pip, the problem when nobody can)."""
    if facts is None or facts.has_ensurepip:
        return True, "venv", None
    pip = agent_pip_version()
    if pip is not None and pip >= MIN_PIP_FOR_PYTHON_OPTION:
        return False, "agent", None
    if wheelhouse is not None and wheelhouse.pip_wheel is not None:
        return False, "wheel", None
    return (
        False,
        "venv",
        f"{facts.executable} has no ensurepip (apt-get install python3-venv), the agent's own pip is "
        f"{'missing' if pip is None else 'older than 22.3'}, and no pip wheel is in the wheelhouse; "
        "add one of them",
    )


def build_plan(
    profile: Profile,
    *,
    venv: str | None = None,
    sources: Sources | None = None,
    installer: str = "auto",
    patch_set: PatchSet | None = None,
    wheelhouse: Path | None = None,
    system_site_packages: bool = False,
) -> InstallPlan:
    """Decide everything; ``problems`` lists what stops the install (nothing has changed yet)."""
    link = Path(venv or profile.stack.venv).expanduser().absolute()
    version = profile.stack.python
    uv = find_uv() if installer in ("auto", "uv") else None
    problems: list[str] = []
    chosen: Installer = "uv" if uv else "pip"
    if installer == "uv" and uv is None:
        problems.append("--installer uv was asked for but uv is not on PATH")
    # With system site packages the venv must come from the very interpreter whose packages it reuses.
    python = version if chosen == "uv" and not system_site_packages else find_python(version)
    if python is None:
        problems.append(
            f"no python{version} with the venv module on PATH (stack.python in the profile); "
            f"install it (apt-get install python{version} python{version}-venv) or install uv"
        )
    house: Wheelhouse | None = None
    if wheelhouse is not None:
        house = scan_wheelhouse(wheelhouse.expanduser().absolute(), profile.stack.sglang_version)
        problems.extend(house.problems)
        if sources is not None and (sources.index_url or sources.find_links):
            problems.append(
                "--wheelhouse installs offline from that directory only; drop --index-url/--find-links"
            )
    facts = python_facts(python) if python is not None and python != version else None
    if python is not None and python != version and facts is None:
        problems.append(f"{python} could not be asked for its site-packages and ensurepip")
    with_pip, runner, pip_problem = (True, "venv", None) if chosen == "uv" else _pip_runner(facts, house)
    if pip_problem:
        problems.append(pip_problem)
    parent = facts.site_packages if system_site_packages and facts is not None and facts.is_venv else ()
    if profile.stack.sglang_version != PATCHED_SGLANG_VERSION:
        problems.append(
            f"stack.sglang_version is {profile.stack.sglang_version}, but the patch set is written "
            f"against sglang {PATCHED_SGLANG_VERSION}; use {PATCHED_SGLANG_VERSION}"
        )
    if link.exists() and not link.is_symlink():
        problems.append(
            f"{link} exists and is not a link made by agent install; move it away or choose another --venv"
        )
    return InstallPlan(
        profile_name=profile.identity.name,
        sglang_version=profile.stack.sglang_version,
        python_version=version,
        python=python,
        installer=chosen,
        uv=uv,
        link=link,
        sources=sources or Sources(),
        patch_set=patch_set or load_patch_set(),
        problems=tuple(problems),
        wheelhouse=house,
        system_site=system_site_packages,
        parent_site=parent,
        with_pip=with_pip,
        pip_runner=runner,
    )
