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
from agent.install.stack import Installer, Sources, find_python, find_uv
from agent.profile.schema import Profile

STEPS = ("create venv", "install packages", "apply patches", "verify", "write manifest", "switch stack")


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

    @property
    def builds(self) -> Path:
        return builds_dir(self.link)

    @property
    def requirement(self) -> str:
        return f"sglang=={self.sglang_version}"

    @property
    def packages_fingerprint(self) -> str:
        """What decides the installed packages: the pin and the interpreter (not where they came from)."""
        return hashlib.sha256(f"{self.requirement};python={self.python_version}".encode()).hexdigest()

    def render(self) -> list[str]:
        lines = [f"agent install: plan for profile {self.profile_name}"]

        def row(key: str, value: str) -> None:
            lines.append(f"  {key:<15} {value}")

        row("stack venv", f"{self.link} (a link to the build in use; builds live in {self.builds}/)")
        if self.installer == "uv":
            row("python", f"{self.python_version} (uv finds it, or fetches a standalone build)")
        else:
            row("python", f"{self.python_version} ({self.python or 'not found'})")
        if self.installer == "uv":
            row("installer", f"uv ({self.uv}): uv venv + uv pip install")
        else:
            row("installer", "python -m venv + pip (uv not on PATH)")
        row("packages", f"{self.requirement} and the versions it pins, from {self.sources.describe()}")
        for i, patch in enumerate(self.patch_set.patches):
            row("patches" if i == 0 else "", f"{patch.name}  sha256 {patch.sha256[:16]}")
            for target in patch.targets:
                row("", f"    {'adds   ' if target.created else 'changes'} {target.path}")
        row(
            "patch set",
            f"sha256 {self.patch_set.sha256[:16]}, applied with GNU patch -p1 after a RECORD check",
        )
        row(
            "verify",
            "import sglang and the patch's modules, the version is the pin, "
            "python -m sglang.launch_server --help, patched file hashes",
        )
        row("manifest", f"{self.link}/{MANIFEST_NAME}")
        row("on failure", f"the new build is deleted; {self.link} keeps pointing at the previous build")
        for problem in self.problems:
            lines.append(f"  problem: {problem}")
        return lines


def build_plan(
    profile: Profile,
    *,
    venv: str | None = None,
    sources: Sources | None = None,
    installer: str = "auto",
    patch_set: PatchSet | None = None,
) -> InstallPlan:
    """Decide everything; ``problems`` lists what stops the install (nothing has changed yet)."""
    link = Path(venv or profile.stack.venv).expanduser().absolute()
    version = profile.stack.python
    uv = find_uv() if installer in ("auto", "uv") else None
    problems: list[str] = []
    chosen: Installer = "uv" if uv else "pip"
    if installer == "uv" and uv is None:
        problems.append("--installer uv was asked for but uv is not on PATH")
    python = version if chosen == "uv" else find_python(version)
    if python is None:
        problems.append(
            f"no python{version} with the venv module on PATH (stack.python in the profile); "
            f"install it (apt-get install python{version} python{version}-venv) or install uv"
        )
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
    )
