"""What ``agent install`` puts into SGLang: the overlay (new modules) and the series (hooks), read once.

Two parts, both against the pinned wheel (``PATCHED_SGLANG_VERSION``):

* the overlay, ``overlay/sglang/...``: modules of ours that SGLang imports, laid out as they go into
  site-packages and copied in as they are. They are files of the project (ruff, mypy, tests);
  ``overlay/README.md`` says how to work on them.
* the series, ``patches/``: the hooks in SGLang's own files, one ``NN-name.patch`` per patch, applied
  in the order ``patches/series`` lists them (a later patch is written against the files as the
  earlier ones left them). Each patch starts with a ``Subject:`` line and its reason, then ``---``,
  then a unified diff with ``a/``/``b/`` paths relative to site-packages (``patch -p1``). A patch
  changes existing files only: a new file belongs in the overlay.

``python -m agent.install.series`` turns the series into a git tree to edit and exports it back. The
set's hash covers the order, every patch's bytes and every overlay file's bytes: it identifies
exactly what was installed, for the stack manifest and ``/v1/version``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
PATCHES_DIR = HERE / "patches"
OVERLAY_DIR = HERE / "overlay"
OVERLAY_PACKAGE = "sglang"
"""The overlay's files are those under ``overlay/sglang`` (the folder's README and typings are not)."""
PATCHED_SGLANG_VERSION = "0.5.23"
"""The wheel the series and the overlay are written against; another version needs them redone."""
SERIES_NAME = "series"
PATCH_SUFFIX = ".patch"
PATCH_NAME = re.compile(r"^\d{2}-[a-z0-9][a-z0-9-]*$")
SUBJECT = "Subject: "
SEPARATOR = "---"
_DIFF_LIKE = ("--- ", "+++ ", "@@", "diff ", "Index:", "*** ", "=== ")
"""Starts of lines GNU patch may take for a diff header: none may appear in a patch's reason."""


class PatchSetError(ValueError):
    """The series or the overlay on disk is not well formed; the message names the file and why."""


@dataclass(frozen=True)
class Patch:
    """One hook patch: its name (the file's stem), subject, reason and the SGLang files it changes."""

    name: str
    path: Path
    sha256: str
    subject: str
    reason: str
    targets: tuple[str, ...]

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class OverlayFile:
    """One module the overlay adds: its path relative to site-packages and where it is here."""

    path: str
    source: Path
    sha256: str


@dataclass(frozen=True)
class PatchSet:
    patches: tuple[Patch, ...]
    overlay: tuple[OverlayFile, ...]

    @property
    def sha256(self) -> str:
        """One hash over the series (in order, each patch's name and bytes) and the overlay's files."""
        digest = hashlib.sha256()
        for patch in self.patches:
            digest.update(patch.name.encode() + b"\0" + patch.sha256.encode() + b"\n")
        for item in self.overlay:
            digest.update(b"overlay\0" + item.path.encode() + b"\0" + item.sha256.encode() + b"\n")
        return digest.hexdigest()

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.patches]

    def targets(self) -> list[str]:
        """Every SGLang file the series changes, once, in the order the series first touches them."""
        seen: dict[str, None] = {}
        for patch in self.patches:
            for target in patch.targets:
                seen.setdefault(target)
        return list(seen)

    def installed_paths(self) -> list[str]:
        """Every file ``agent install`` writes into site-packages: the overlay's, then the hooked ones."""
        return [item.path for item in self.overlay] + self.targets()


def split_patch(text: str, origin: str) -> tuple[str, str, str]:
    """``(subject, reason, diff)`` of one patch file's text."""
    lines = text.split("\n")
    if not lines[0].startswith(SUBJECT) or not lines[0][len(SUBJECT) :].strip():
        raise PatchSetError(f"{origin}: the first line must be '{SUBJECT}<what the patch does>'")
    if len(lines) < 2 or lines[1] != "":
        raise PatchSetError(f"{origin}: the subject line must be followed by an empty line")
    try:
        end = lines.index(SEPARATOR, 2)
    except ValueError:
        raise PatchSetError(f"{origin}: no '{SEPARATOR}' line ends the reason and starts the diff") from None
    reason = "\n".join(lines[2:end]).strip("\n")
    if not reason.strip():
        raise PatchSetError(f"{origin}: the reason (between the subject and '{SEPARATOR}') is empty")
    check_reason(reason, origin)
    return lines[0][len(SUBJECT) :].strip(), reason, "\n".join(lines[end + 1 :])


def check_reason(reason: str, origin: str) -> None:
    for line in reason.split("\n"):
        if line.startswith(_DIFF_LIKE) or line == SEPARATOR:
            raise PatchSetError(
                f"{origin}: a reason line may not start with {line.split(' ', 1)[0]!r} "
                "(GNU patch could read it as a diff header); reword it"
            )


def diff_targets(text: str, origin: str = "<diff>") -> tuple[str, ...]:
    """The existing files a ``-p1`` unified diff changes, from its ``---``/``+++`` header pairs."""
    targets: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not (line.startswith("--- ") and lines[i + 1].startswith("+++ ")):
            continue
        old = line[4:].split("\t", 1)[0].strip()
        new = lines[i + 1][4:].split("\t", 1)[0].strip()
        if old == "/dev/null" or new == "/dev/null":
            created = new[2:] if old == "/dev/null" else old[2:]
            raise PatchSetError(
                f"{origin}: it {'creates' if old == '/dev/null' else 'deletes'} {created}; the series "
                "changes SGLang's own files only (a new module belongs in the overlay)"
            )
        if not new.startswith("b/") or not old.startswith("a/"):
            raise PatchSetError(f"{origin}: '--- {old}' / '+++ {new}' must be a/<path> and b/<path> (-p1)")
        path = new[2:]
        if path.startswith("/") or ".." in Path(path).parts:
            raise PatchSetError(f"{origin}: target {path!r} must be a relative path inside site-packages")
        if old[2:] != path:
            raise PatchSetError(f"{origin}: renames are not supported ({old} -> {new})")
        targets.append(path)
    if not targets:
        raise PatchSetError(f"{origin}: no '--- a/...' / '+++ b/...' file headers found")
    return tuple(targets)


def read_series(directory: Path) -> list[str]:
    """The patch names ``series`` lists, in order (blank lines and ``#`` comments skipped)."""
    path = directory / SERIES_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PatchSetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    names = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    for name in names:
        if not PATCH_NAME.match(name):
            raise PatchSetError(f"{path}: {name!r} is not a patch name (NN-lowercase-words)")
    if len(set(names)) != len(names):
        raise PatchSetError(f"{path}: a patch is listed twice")
    if not names:
        raise PatchSetError(f"{path}: lists no patch")
    return names


def load_patch(path: Path) -> Patch:
    data = path.read_bytes()
    subject, reason, diff = split_patch(data.decode("utf-8"), str(path))
    return Patch(
        name=path.name.removesuffix(PATCH_SUFFIX),
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        subject=subject,
        reason=reason,
        targets=diff_targets(diff, str(path)),
    )


def load_overlay(directory: Path = OVERLAY_DIR) -> tuple[OverlayFile, ...]:
    """Every ``.py`` under ``overlay/sglang``, by path (caches and other files are not installed)."""
    root = directory / OVERLAY_PACKAGE
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    if not files:
        raise PatchSetError(f"{root}: the overlay has no modules")
    return tuple(
        OverlayFile(
            path=p.relative_to(directory).as_posix(),
            source=p,
            sha256=hashlib.sha256(p.read_bytes()).hexdigest(),
        )
        for p in files
    )


def load_patch_set(directory: Path = PATCHES_DIR, overlay: Path = OVERLAY_DIR) -> PatchSet:
    """The series ``directory/series`` lists and the overlay under ``overlay``, checked."""
    names = read_series(directory)
    on_disk = {p.name.removesuffix(PATCH_SUFFIX) for p in directory.glob(f"*{PATCH_SUFFIX}")}
    missing = [n for n in names if n not in on_disk]
    if missing:
        raise PatchSetError(
            f"{directory / SERIES_NAME}: lists {', '.join(missing)}, which has no .patch file"
        )
    unlisted = sorted(on_disk - set(names))
    if unlisted:
        raise PatchSetError(
            f"{directory}: {', '.join(n + PATCH_SUFFIX for n in unlisted)} is not in {SERIES_NAME}; "
            "list it there or remove it"
        )
    patches = tuple(load_patch(directory / f"{name}{PATCH_SUFFIX}") for name in names)
    files = load_overlay(overlay)
    added = {item.path for item in files}
    for patch in patches:
        clash = sorted(added.intersection(patch.targets))
        if clash:
            raise PatchSetError(f"{patch.path}: changes {clash[0]}, which the overlay adds whole")
    return PatchSet(patches, files)
