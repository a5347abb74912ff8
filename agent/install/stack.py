"""The commands that build and check a stack venv, as argv lists (never a shell string).

uv when it is on PATH (faster, and its first-index strategy blocks dependency confusion), else the
standard library's ``venv`` and pip. The packages come from the registry as a user would get them,
from ``--index-url`` / ``--find-links``, or, offline, from a wheelhouse (``agent.install.wheelhouse``)
with ``--no-index``.

pip for the new venv, in this order: the venv's own (``ensurepip``); where the interpreter has no
``ensurepip`` (Debian/Ubuntu without ``python3-venv``) the venv is made ``--without-pip`` and pip runs
from the agent's own interpreter (``pip --python <venv python>``, pip >= 22.3) or from a pip wheel in
the wheelhouse (``python pip-*.whl/pip``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from agent.sglang.launch import stack_environ
from agent.sglang.startup import LAUNCHER_MODULE

Installer = Literal["uv", "pip"]
PipRunner = Literal["venv", "agent", "wheel"]
MIN_PIP_FOR_PYTHON_OPTION = (22, 3)
"""``pip --python`` (installing into another interpreter's environment) appeared in pip 22.3."""

PATCHED_MODULES = (
    "sglang.srt.speculative.adaptive_live_control",
    "sglang.srt.speculative.adaptive_live_readback",
)
"""Imported by the verify step; they are the patch's own modules (no torch at import time)."""

LAUNCHER_HELP = ("-m", LAUNCHER_MODULE, "--help")


class CommandFailed(Exception):
    def __init__(self, argv: Sequence[str], returncode: int, output: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        tail = "\n".join(output.strip().splitlines()[-15:])
        super().__init__(f"`{' '.join(self.argv)}` exited with {returncode}:\n{tail}")


def run(argv: Sequence[str], timeout: float | None = None, env: dict[str, str] | None = None) -> str:
    """Run one command (in ``stack_environ``); its combined output, or CommandFailed."""
    merged = {
        **stack_environ(),
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


@dataclass(frozen=True)
class PythonFacts:
    """What the interpreter that builds the stack says about itself (one run of it)."""

    executable: str
    prefix: str
    base_prefix: str
    site_packages: tuple[str, ...]
    """Its own site-packages folders (under ``prefix``), in its ``sys.path`` order."""
    has_ensurepip: bool

    @property
    def is_venv(self) -> bool:
        return self.prefix != self.base_prefix


_FACTS_CODE = (
    "import json, site, sys, os\n"
    "try:\n import ensurepip\n ok = True\nexcept Exception:\n ok = False\n"
    "own = [d for d in site.getsitepackages() if os.path.realpath(d).startswith(os.path.realpath(sys.prefix))]\n"
    "print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix, 'base_prefix': sys.base_prefix,"
    " 'site': [d for d in own if os.path.isdir(d)], 'ensurepip': ok}))"
)


def python_facts(python: str) -> PythonFacts | None:
    try:
        out = run([python, "-c", _FACTS_CODE], timeout=60)
        data = json.loads(out.strip().splitlines()[-1])
    except (CommandFailed, ValueError, IndexError):
        return None
    return PythonFacts(
        executable=str(data["executable"]),
        prefix=str(data["prefix"]),
        base_prefix=str(data["base_prefix"]),
        site_packages=tuple(str(d) for d in data["site"]),
        has_ensurepip=bool(data["ensurepip"]),
    )


def agent_pip_version() -> tuple[int, ...] | None:
    """The pip of the interpreter the agent runs on (``python -m pip`` sees the same path), or None."""
    try:
        text = metadata.version("pip")
    except metadata.PackageNotFoundError:
        return None
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def create_venv_argv(
    installer: Installer,
    python: str,
    venv: Path,
    uv: str | None = None,
    *,
    system_site: bool = False,
    with_pip: bool = True,
    offline: bool = False,
) -> list[str]:
    """``--system-site-packages`` makes the base interpreter's packages visible (a parent venv's are
    added by a .pth file, see ``write_parent_site_pth``)."""
    flags = ["--system-site-packages"] if system_site else []
    if installer == "uv":
        seed = [] if offline else ["--seed"]  # --seed fetches pip: not offline
        return [
            uv or "uv",
            *(["--offline"] if offline else []),
            "venv",
            *seed,
            *flags,
            "--python",
            python,
            str(venv),
        ]
    return [python, "-m", "venv", *flags, *([] if with_pip else ["--without-pip"]), str(venv)]


def pip_prefix(runner: PipRunner, venv: Path, pip_wheel: Path | None = None) -> list[str]:
    """The argv that runs pip for the venv, before the pip command."""
    python = str(venv_python(venv))
    if runner == "agent":
        return [sys.executable, "-m", "pip", "--python", python]
    if runner == "wheel":
        if pip_wheel is None:
            raise ValueError("pip runner 'wheel' needs a pip wheel")
        return [python, str(pip_wheel / "pip")]
    return [python, "-m", "pip"]


def install_argv(
    installer: Installer,
    venv: Path,
    requirements: Sequence[str],
    sources: Sources,
    uv: str | None = None,
    *,
    runner: PipRunner = "venv",
    pip_wheel: Path | None = None,
    source_args: Sequence[str] | None = None,
    offline: bool = False,
) -> list[str]:
    """Install without byte-compiling (the build compiles site-packages in parallel afterwards)."""
    where = list(source_args) if source_args is not None else sources.args()
    if installer == "uv":
        return [
            uv or "uv",
            *(["--offline"] if offline else []),
            "pip",
            "install",
            "--python",
            str(venv_python(venv)),
            *where,
            *requirements,
        ]
    return [
        *pip_prefix(runner, venv, pip_wheel),
        "install",
        "--no-input",
        "--no-compile",
        *where,
        *requirements,
    ]


PARENT_SITE_PTH = "zz-k25-parent-site.pth"
"""Processed after the venv's own .pth files (alphabetical), so its folders come after them too."""


def write_parent_site_pth(site: Path, folders: Sequence[str]) -> Path:
    """Make a parent venv's site-packages visible after the venv's own (``site.addsitedir`` so the
    .pth files there run too: nvidia-cutlass-dsl's adds the folder that ``import cutlass`` needs)."""
    lines = [f"import site; site.addsitedir({folder!r})" for folder in folders]
    path = site / PARENT_SITE_PTH
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def byte_compile(venv: Path, site: Path) -> int:
    """Compile every module of ``site`` on all cores; the number of files that failed (tolerated:
    test data and other-version sources that never import). SGLang's first start spent ~80 s on it."""
    argv = [str(venv_python(venv)), "-m", "compileall", "-j", "0", "-q", str(site)]
    try:
        out = run(argv, timeout=1800)
    except CommandFailed as exc:
        if exc.returncode != 1:
            raise
        out = exc.output
    return sum(1 for line in out.splitlines() if line.startswith("*** Error compiling"))


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


_IMPORT_CODE = (
    "import importlib, json, sys, time, traceback\n"
    "for name in sys.argv[1:]:\n"
    "    t = time.monotonic()\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except BaseException as exc:\n"
    "        tb = traceback.format_exc().strip().splitlines()\n"
    "        print(json.dumps({'module': name, 'ok': False, 's': time.monotonic() - t,"
    " 'error': f'{type(exc).__name__}: {exc}', 'where': tb[-3:-1]}), flush=True)\n"
    "        sys.exit(3)\n"
    "    print(json.dumps({'module': name, 'ok': True, 's': time.monotonic() - t}), flush=True)\n"
    "from importlib import metadata\n"
    "print(json.dumps({'module': None, 'version': metadata.version('sglang')}), flush=True)\n"
)


def _import_lines(out: str) -> list[dict[str, Any]]:
    found = []
    for line in out.splitlines():
        if line.startswith('{"module":'):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def check_imports(venv: Path, version: str, modules: Sequence[str] = ()) -> list[tuple[str, float]]:
    """Import ``modules`` in order in the stack (each timed); the installed sglang must be the pin.

    Raises CommandFailed naming the module that failed, its exception and the frame that raised.
    """
    argv = [str(venv_python(venv)), "-c", _IMPORT_CODE, "sglang", *PATCHED_MODULES, *modules]
    try:
        out = run(argv, timeout=900)
    except CommandFailed as exc:
        lines = _import_lines(exc.output)
        failed = next((x for x in lines if x.get("ok") is False), None)
        if failed is None:
            raise
        where = "; ".join(str(w).strip() for w in failed.get("where") or [])
        raise CommandFailed(
            [*argv[:2], "<import check>"],
            exc.returncode,
            f"import {failed['module']} failed: {failed['error']}" + (f" (at {where})" if where else ""),
        ) from None
    lines = _import_lines(out)
    found = next((str(x["version"]) for x in lines if x.get("module") is None), None)
    if found != version:
        raise CommandFailed([*argv[:2], "<import check>"], 0, f"sglang {found} is installed, not {version}")
    return [(str(x["module"]), float(x["s"])) for x in lines if x.get("module")]


def check_launcher(venv: Path) -> float:
    """``python -m sglang.launch_server --help``; its duration in seconds."""
    started = time.monotonic()
    run([str(venv_python(venv)), *LAUNCHER_HELP], timeout=600)
    return time.monotonic() - started
