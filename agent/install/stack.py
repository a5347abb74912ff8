"""The commands that build and check a stack venv, as argv lists (never a shell string).

uv when it is on PATH (faster, and its first-index strategy blocks dependency confusion), else the
standard library's ``venv`` and pip. Either way the packages come from the registry as a user would
get them (or from ``--index-url`` / ``--find-links`` for an offline host).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Installer = Literal["uv", "pip"]

PATCHED_MODULES = (
    "sglang.srt.speculative.adaptive_live_control",
    "sglang.srt.speculative.adaptive_live_readback",
)
"""Imported by the verify step; they are the patch's own modules (no torch at import time)."""

LAUNCHER_HELP = ("-m", "sglang.launch_server", "--help")


class CommandFailed(Exception):
    def __init__(self, argv: Sequence[str], returncode: int, output: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        tail = "\n".join(output.strip().splitlines()[-15:])
        super().__init__(f"`{' '.join(self.argv)}` exited with {returncode}:\n{tail}")


def run(argv: Sequence[str], timeout: float | None = None, env: dict[str, str] | None = None) -> str:
    """Run one command; its combined output, or CommandFailed."""
    merged = {
        **os.environ,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **(env or {}),
    }
    try:
        done = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            env=merged,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.output if isinstance(exc.output, str) else ""
        raise CommandFailed(argv, -1, f"{out}\n(timed out after {timeout} s)") from exc
    except OSError as exc:
        raise CommandFailed(argv, -1, str(exc)) from exc
    if done.returncode != 0:
        raise CommandFailed(argv, done.returncode, done.stdout)
    return done.stdout


def find_uv() -> str | None:
    """uv on PATH, else the one installed with the agent (a k25console dependency) beside its Python."""
    beside = Path(sys.executable).parent / "uv"
    return shutil.which("uv") or (str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None)


def find_python(version: str) -> str | None:
    """An interpreter of ``major.minor`` that can make a venv, or None. Checked by running it."""
    for name in (f"python{version}", "python3"):
        path = shutil.which(name)
        if path is None:
            continue
        try:
            out = run([path, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"], timeout=30)
        except CommandFailed:
            continue
        if out.strip() == version:
            return path
    return None


@dataclass(frozen=True)
class Sources:
    """Where packages come from: the default registry, or an index URL and/or local wheel folders."""

    index_url: str | None = None
    find_links: tuple[str, ...] = ()

    def args(self) -> list[str]:
        out: list[str] = []
        if self.index_url:
            out += ["--index-url", self.index_url]
        for link in self.find_links:
            out += ["--find-links", link]
        return out

    def describe(self) -> str:
        parts = [self.index_url or "the default registry (PyPI)"]
        parts += [f"wheels in {link}" for link in self.find_links]
        return ", ".join(parts)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def create_venv_argv(installer: Installer, python: str, venv: Path, uv: str | None = None) -> list[str]:
    if installer == "uv":
        return [uv or "uv", "venv", "--seed", "--python", python, str(venv)]
    return [python, "-m", "venv", str(venv)]


def install_argv(
    installer: Installer, venv: Path, requirements: Sequence[str], sources: Sources, uv: str | None = None
) -> list[str]:
    if installer == "uv":
        return [
            uv or "uv",
            "pip",
            "install",
            "--python",
            str(venv_python(venv)),
            *sources.args(),
            *requirements,
        ]
    return [str(venv_python(venv)), "-m", "pip", "install", "--no-input", *sources.args(), *requirements]


def site_packages(venv: Path) -> Path:
    out = run([str(venv_python(venv)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    return Path(out.strip())


def installed_packages(venv: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
    )
    data: dict[str, str] = json.loads(run([str(venv_python(venv)), "-c", code]).strip().splitlines()[-1])
    return dict(sorted(data.items()))


def check_imports(venv: Path, version: str) -> None:
    """``import sglang`` and the patch's modules; the installed version must be the pin."""
    modules = ", ".join(("sglang", *PATCHED_MODULES))
    code = f"import importlib.metadata as m, {modules}; print(m.version('sglang'))"
    found = run([str(venv_python(venv)), "-c", code], timeout=600).strip().splitlines()[-1]
    if found != version:
        raise CommandFailed(
            [str(venv_python(venv)), "-c", code], 0, f"sglang {found} is installed, not {version}"
        )


def check_launcher(venv: Path) -> None:
    run([str(venv_python(venv)), *LAUNCHER_HELP], timeout=600)
