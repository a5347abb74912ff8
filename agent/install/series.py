"""The hook series as a git tree to edit, and back: ``python -m agent.install.series``.

Editing a diff by hand is how patch sets rot. Instead (as Electron and quilt do): ``checkout`` lays
the pinned wheel's files out in a git repository, commits them as released (tag ``pristine``), then
commits each patch of the series on top, one commit per patch (its subject, its reason and a
``Patch-Name:`` trailer). Change a hook there with git (amend, ``rebase -i``, a new commit with its
own trailer for a new patch), then ``export`` writes the series back: one ``NN-name.patch`` per
commit, in commit order, and ``series``. Export refuses a commit that adds, deletes or renames a
file: a new module belongs in the overlay (``agent/install/overlay``), not in the series.

    python -m agent.install.series checkout DIR [--wheel WHEEL] [--all]
    python -m agent.install.series apply DIR      # the rest of the series, after a fixed conflict
    python -m agent.install.series export DIR [--to agent/install/patches]

A patch that does not apply (a new SGLang version) stops ``checkout`` with GNU patch's rejects in
the tree; fix the files, commit with the message it prints, and ``apply`` goes on from there.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from agent.install.patching import apply_in
from agent.install.patchset import (
    PATCH_NAME,
    PATCH_SUFFIX,
    PATCHED_SGLANG_VERSION,
    PATCHES_DIR,
    SEPARATOR,
    SERIES_NAME,
    SUBJECT,
    PatchSetError,
    check_reason,
    load_patch_set,
)

PRISTINE_TAG = "pristine"
TRAILER = "Patch-Name: "
MESSAGE_FILE = "k25-next-message"
"""In the tree's ``.git``: the commit message of a patch that stopped ``checkout``/``apply``."""
SERIES_HEADER = (
    "# The order in which agent install applies the hook patches (agent/install/patches/README.md).\n"
)
_AUTHOR = ["-c", "user.name=k25console series", "-c", "user.email=series@k25console.invalid"]


class SeriesError(Exception):
    """The tree or the series cannot be read or written; the message says why and what to do."""


def _git(tree: Path, *args: str, data: bytes | None = None) -> bytes:
    git = shutil.which("git")
    if git is None:
        raise SeriesError("git is not installed; install it (apt-get install git) and retry")
    done = subprocess.run(
        [git, "-C", str(tree), *_AUTHOR, *args],
        input=data,
        capture_output=True,
        check=False,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"},
    )
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode(errors="replace").strip()
        raise SeriesError(f"git {' '.join(args[:2])} in {tree} failed: {said}")
    return done.stdout


def default_wheel(version: str = PATCHED_SGLANG_VERSION) -> Path:
    """The pinned wheel in the tests' cache (``K25_WHEEL_CACHE``, else ``~/.cache/k25console/wheels``)."""
    cache = Path(os.environ.get("K25_WHEEL_CACHE", "~/.cache/k25console/wheels")).expanduser()
    found = sorted(cache.glob(f"sglang-{version}-*.whl"))
    if not found:
        raise SeriesError(
            f"no sglang-{version} wheel in {cache}; pass --wheel, or fetch it with "
            f"pip download --no-deps --only-binary=:all: sglang=={version} -d {cache}"
        )
    return found[-1]


def commit_message(subject: str, reason: str, name: str) -> str:
    return f"{subject}\n\n{reason}\n\n{TRAILER}{name}\n"


def checkout(tree: Path, wheel: Path, everything: bool = False, patches: Path = PATCHES_DIR) -> list[str]:
    """A git tree of the wheel's files (those the series changes, or ``everything``), the series
    committed on top; the names of the patches applied."""
    if tree.exists() and any(tree.iterdir()):
        raise SeriesError(f"{tree} is not empty; give a new folder")
    patch_set = load_patch_set(patches)
    tree.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        members = set(archive.namelist())
        if everything:
            wanted = sorted(n for n in members if n.startswith("sglang/") and n.endswith(".py"))
        else:
            wanted = patch_set.targets()
            missing = [n for n in wanted if n not in members]
            if missing:
                raise SeriesError(f"{wheel.name} has no {missing[0]}, which the series changes")
        archive.extractall(tree, members=wanted)
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", f"SGLang as released: {wheel.name}")
    _git(tree, "tag", PRISTINE_TAG)
    return apply_rest(tree, patches)


def _applied_names(tree: Path) -> list[str]:
    return [name for name, _, _ in _commits(tree)]


def apply_rest(tree: Path, patches: Path = PATCHES_DIR) -> list[str]:
    """Commit, one by one, the patches of the series the tree does not have yet; the names applied.

    A patch that does not apply leaves GNU patch's partial result and its ``.rej`` files in the tree,
    its commit message in ``.git/k25-next-message``, and raises saying what to do.
    """
    patch_set = load_patch_set(patches)
    done = set(_applied_names(tree))
    applied: list[str] = []
    for patch in patch_set.patches:
        if patch.name in done:
            continue
        message = tree / ".git" / MESSAGE_FILE
        message.write_text(commit_message(patch.subject, patch.reason, patch.name), encoding="utf-8")
        failure = apply_in(tree, patch, reverse=False)
        if failure is not None:
            _run_partial(tree, patch.path)
            raise SeriesError(
                f"patch {patch.name} does not apply:\n{failure}\n"
                f"GNU patch applied what it could in {tree} and left .rej files for the rest: finish the\n"
                "hooks by hand, delete the .rej files, then\n"
                f"  git -C {tree} commit -a --cleanup=verbatim -F {message}\n"
                f"  python -m agent.install.series apply {tree}"
            )
        _git(tree, "commit", "-q", "-a", "--cleanup=verbatim", "-F", str(message))
        message.unlink()
        applied.append(patch.name)
    return applied


def _run_partial(tree: Path, patch: Path) -> None:
    """Apply what applies of a patch that failed its dry run, leaving rejects for the developer."""
    patch_bin = shutil.which("patch")
    if patch_bin is not None:
        subprocess.run(
            [patch_bin, "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-i", str(patch)],
            cwd=tree,
            capture_output=True,
            check=False,
        )


def _commits(tree: Path) -> list[tuple[str, str, str]]:
    """``(patch name, subject, reason)`` of each commit after ``pristine``, oldest first, with its id
    checked: every commit must name its patch in a ``Patch-Name:`` trailer."""
    ids = _git(tree, "rev-list", "--reverse", "--first-parent", f"{PRISTINE_TAG}..HEAD").decode().split()
    found = []
    for commit in ids:
        text = _git(tree, "log", "-1", "--format=%B", commit).decode()
        lines = text.rstrip("\n").split("\n")
        trailers = [line for line in lines if line.startswith(TRAILER)]
        if len(trailers) != 1 or not PATCH_NAME.match(trailers[0][len(TRAILER) :].strip()):
            raise SeriesError(
                f"commit {commit[:12]} ({lines[0]!r}) needs one trailer line '{TRAILER}NN-name' "
                "(lowercase words): the patch it becomes"
            )
        body = [line for line in lines[1:] if not line.startswith(TRAILER)]
        found.append((trailers[0][len(TRAILER) :].strip(), lines[0].strip(), "\n".join(body).strip("\n")))
    return found


def _file_diff(tree: Path, commit: str, path: str) -> str:
    old = _git(tree, "show", f"{commit}^:{path}").decode("utf-8")
    new = _git(tree, "show", f"{commit}:{path}").decode("utf-8")
    for text, side in ((old, "before"), (new, "after")):
        if text and not text.endswith("\n"):
            raise SeriesError(f"{path} has no newline at its end {side} commit {commit[:12]}")
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
    )
    return "".join(lines)


def patch_texts(tree: Path) -> list[tuple[str, str]]:
    """``(name, text of NN-name.patch)`` for each commit after ``pristine``, in order."""
    if _git(tree, "status", "--porcelain", "--untracked-files=no").strip():
        raise SeriesError(f"{tree} has changes that are not committed; commit them (or stash) first")
    ids = _git(tree, "rev-list", "--reverse", "--first-parent", f"{PRISTINE_TAG}..HEAD").decode().split()
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for commit, (name, subject, reason) in zip(ids, _commits(tree), strict=True):
        if name in seen:
            raise SeriesError(f"two commits name the patch {name}; squash them or rename one")
        seen.add(name)
        if not reason:
            raise SeriesError(f"commit {commit[:12]} ({name}) has no reason: say why in its body")
        check_reason(reason, f"commit {commit[:12]} ({name})")
        changes = _git(tree, "diff-tree", "--no-commit-id", "--name-status", "-r", "--no-renames", commit)
        paths = []
        for line in changes.decode().splitlines():
            status, path = line.split("\t", 1)
            if status != "M":
                verb = {"A": "adds", "D": "deletes"}.get(status, f"changes ({status})")
                raise SeriesError(
                    f"commit {commit[:12]} ({name}) {verb} {path}; the series only changes SGLang's own "
                    "files (a new module belongs in agent/install/overlay)"
                )
            paths.append(path)
        if not paths:
            raise SeriesError(f"commit {commit[:12]} ({name}) changes nothing")
        diff = "".join(_file_diff(tree, commit, path) for path in sorted(paths))
        out.append((name, f"{SUBJECT}{subject}\n\n{reason}\n{SEPARATOR}\n{diff}"))
    if not out:
        raise SeriesError(f"{tree} has no commit after '{PRISTINE_TAG}': nothing to export")
    return out


def export(tree: Path, to: Path = PATCHES_DIR) -> list[str]:
    """Write the tree's commits as the series in ``to`` (``.patch`` files and ``series``); stale
    ``.patch`` files there are removed, READMEs are left alone. The names written."""
    texts = patch_texts(tree)
    to.mkdir(parents=True, exist_ok=True)
    names = [name for name, _ in texts]
    for name, text in texts:
        (to / f"{name}{PATCH_SUFFIX}").write_text(text, encoding="utf-8")
    for stale in to.glob(f"*{PATCH_SUFFIX}"):
        if stale.name.removesuffix(PATCH_SUFFIX) not in names:
            stale.unlink()
    (to / SERIES_NAME).write_text(SERIES_HEADER + "\n".join(names) + "\n", encoding="utf-8")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.install.series",
        description="The SGLang hook series as a git tree to edit (checkout, apply) and back (export).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    co = sub.add_parser(
        "checkout", help="a new git tree: the wheel's files as released, one commit per patch"
    )
    co.add_argument("tree", type=Path, help="a new (or empty) folder")
    co.add_argument(
        "--wheel", type=Path, help="the sglang wheel (default: the pinned one in the tests' cache)"
    )
    co.add_argument("--all", action="store_true", help="every module of the wheel, not only the hooked files")
    ap = sub.add_parser("apply", help="commit the patches of the series the tree does not have yet")
    ap.add_argument("tree", type=Path)
    ex = sub.add_parser("export", help="write the tree's commits as the series")
    ex.add_argument("tree", type=Path)
    ex.add_argument("--to", type=Path, default=PATCHES_DIR, help=f"the series folder (default {PATCHES_DIR})")
    args = parser.parse_args(argv)
    try:
        if args.command == "checkout":
            names = checkout(args.tree, args.wheel or default_wheel(), everything=args.all)
            print(f"{args.tree}: {PRISTINE_TAG} + {len(names)} patch(es): {', '.join(names)}")
        elif args.command == "apply":
            names = apply_rest(args.tree)
            print(f"{args.tree}: applied {', '.join(names) if names else 'nothing (the tree has them all)'}")
        else:
            names = export(args.tree, args.to)
            print(f"{args.to}: {SERIES_NAME} and {len(names)} patch(es): {', '.join(names)}")
    except (SeriesError, PatchSetError, OSError, zipfile.BadZipFile) as exc:
        print(f"series {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
