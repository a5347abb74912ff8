"""The SGLang patch set shipped with the agent: which diffs, in which order, touching which files.

Each patch is a folder ``patches/<NN-name>/`` with ``patch.diff`` (a unified diff against the pinned
wheel's files, paths relative to site-packages with ``a/``/``b/`` prefixes, so ``patch -p1``) and a
``README.md``. The folder name's number is the order of application; a later patch is written against
the files as the earlier ones left them. The set's hash identifies exactly what was applied, for the
stack manifest and ``/v1/version``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

PATCHES_DIR = Path(__file__).with_name("patches")
PATCHED_SGLANG_VERSION = "0.5.23"
"""The wheel the diffs are written against; another version needs a new patch set."""
DIFF_NAME = "patch.diff"
_PATCH_DIR_NAME = re.compile(r"^\d{2}-[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class PatchTarget:
    """One file a patch touches, relative to site-packages; ``created`` when the diff adds it."""

    path: str
    created: bool


@dataclass(frozen=True)
class Patch:
    name: str
    diff_path: Path
    sha256: str
    targets: tuple[PatchTarget, ...]

    @property
    def text(self) -> str:
        return self.diff_path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class PatchSet:
    patches: tuple[Patch, ...]

    @property
    def sha256(self) -> str:
        """One hash over every patch's name and bytes, in order."""
        digest = hashlib.sha256()
        for patch in self.patches:
            digest.update(patch.name.encode() + b"\0" + patch.sha256.encode() + b"\n")
        return digest.hexdigest()

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.patches]

    def targets(self) -> list[PatchTarget]:
        """Every file the set touches, once; ``created`` when the first patch touching it adds it."""
        seen: dict[str, PatchTarget] = {}
        for patch in self.patches:
            for target in patch.targets:
                seen.setdefault(target.path, target)
        return list(seen.values())


def diff_targets(text: str, origin: str = "<diff>") -> tuple[PatchTarget, ...]:
    """The files a ``-p1`` unified diff touches, from its ``---``/``+++`` header pairs."""
    targets: list[PatchTarget] = []
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not (line.startswith("--- ") and lines[i + 1].startswith("+++ ")):
            continue
        old = line[4:].split("\t", 1)[0].strip()
        new = lines[i + 1][4:].split("\t", 1)[0].strip()
        if not new.startswith("b/"):
            raise ValueError(f"{origin}: '+++ {new}' must start with 'b/' (a -p1 diff)")
        path = new[2:]
        if path.startswith("/") or ".." in Path(path).parts:
            raise ValueError(f"{origin}: target {path!r} must be a relative path inside site-packages")
        if old != "/dev/null" and old[2:] != path:
            raise ValueError(f"{origin}: renames are not supported ({old} -> {new})")
        targets.append(PatchTarget(path=path, created=old == "/dev/null"))
    if not targets:
        raise ValueError(f"{origin}: no '--- a/...' / '+++ b/...' file headers found")
    return tuple(targets)


def load_patch_set(directory: Path = PATCHES_DIR) -> PatchSet:
    """Read every ``NN-name/patch.diff`` under ``directory``, ordered by name."""
    patches: list[Patch] = []
    for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
        if not _PATCH_DIR_NAME.match(folder.name):
            continue
        diff = folder / DIFF_NAME
        if not diff.is_file():
            raise ValueError(f"{folder}: missing {DIFF_NAME}")
        data = diff.read_bytes()
        patches.append(
            Patch(
                name=folder.name,
                diff_path=diff,
                sha256=hashlib.sha256(data).hexdigest(),
                targets=diff_targets(data.decode("utf-8"), str(diff)),
            )
        )
    if not patches:
        raise ValueError(f"{directory}: no patches found")
    return PatchSet(tuple(patches))
