"""A directory of wheels that ``agent install --wheelhouse DIR`` builds the stack from, offline.

GPU hosts are often air-gapped: the wheels travel to the host (see ``shared/tools/real-sglang``) and
the stack is installed from them with ``--no-index``, never contacting an index. What is checked here
runs when the plan is made, before anything changes, so a wrong directory is a clear error that names
it: the directory exists, holds exactly one ``sglang-<pin>`` wheel and never two versions of one
package (pip would pick one silently; with ``--no-deps`` it would install both and the last wins).

Wheel file names are read by the rule of the binary distribution format: ``{name}-{version}(-{build})?
-{python}-{abi}-{platform}.whl``, the name normalized as PEP 503 does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path


def normalize(name: str) -> str:
    """PEP 503: runs of ``-``, ``_`` and ``.`` become one ``-``, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class WheelFile:
    path: Path
    name: str
    """Normalized project name."""
    version: str


def parse_wheel_name(path: Path) -> WheelFile | None:
    """The project and version a wheel file name declares; None when it is not a wheel name."""
    if path.suffix != ".whl":
        return None
    parts = path.name[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        return None
    return WheelFile(path=path, name=normalize(parts[0]), version=parts[1])


@dataclass(frozen=True)
class Wheelhouse:
    directory: Path
    wheels: tuple[WheelFile, ...]
    problems: tuple[str, ...]

    def find(self, name: str) -> list[WheelFile]:
        wanted = normalize(name)
        return [w for w in self.wheels if w.name == wanted]

    @property
    def pip_wheel(self) -> WheelFile | None:
        """A pip wheel in the wheelhouse: pip runs from it when neither the venv nor the agent has pip."""
        found = self.find("pip")
        return found[0] if len(found) == 1 else None

    @property
    def fingerprint(self) -> str:
        """What the wheelhouse contributes to the installed packages: its wheel file names."""
        return hashlib.sha256("\n".join(sorted(w.path.name for w in self.wheels)).encode()).hexdigest()

    def describe(self) -> str:
        return f"{len(self.wheels)} wheels in {self.directory} (offline: --no-index)"


def scan_wheelhouse(directory: Path, sglang_version: str) -> Wheelhouse:
    """Read ``directory`` and say what is wrong with it for a stack of ``sglang==sglang_version``."""
    problems: list[str] = []
    if not directory.is_dir():
        what = "does not exist" if not directory.exists() else "is not a directory"
        return Wheelhouse(directory, (), (f"--wheelhouse {directory} {what}",))
    wheels: list[WheelFile] = []
    for path in sorted(directory.iterdir()):
        if path.suffix != ".whl":
            continue
        wheel = parse_wheel_name(path)
        if wheel is None:
            problems.append(f"--wheelhouse {directory}: {path.name} is not a valid wheel file name")
            continue
        wheels.append(wheel)
    by_name: dict[str, list[WheelFile]] = {}
    for wheel in wheels:
        by_name.setdefault(wheel.name, []).append(wheel)
    for name, found in sorted(by_name.items()):
        versions = sorted({w.version for w in found})
        if len(versions) > 1:
            problems.append(
                f"--wheelhouse {directory}: {name} is there in {len(versions)} versions "
                f"({', '.join(w.path.name for w in found)}); keep one"
            )
    sglang = by_name.get("sglang", [])
    if not sglang:
        problems.append(
            f"--wheelhouse {directory} holds no sglang-{sglang_version} wheel "
            f"({len(wheels)} wheels found); add it (pip download --no-deps sglang=={sglang_version})"
        )
    elif len(sglang) > 1 or sglang[0].version != sglang_version:
        problems.append(
            f"--wheelhouse {directory} must hold exactly one sglang-{sglang_version} wheel, found "
            f"{', '.join(w.path.name for w in sglang)}"
        )
    return Wheelhouse(directory, tuple(wheels), tuple(problems))
