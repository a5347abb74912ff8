"""The hook series: how it is read (``patchset``), and its round trip through a git tree (``series``).

The committed series must be exactly what ``python -m agent.install.series export`` writes from a tree
that ``checkout`` made out of the pinned wheel: so the command that regenerates it reproduces it, and
an edit made in the tree lands in the right patch, in the right order.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from agent.install import series
from agent.install.patching import apply_patch_set
from agent.install.patchset import PATCHES_DIR, SERIES_NAME, PatchSetError, load_patch_set

HOOKED = "sglang/srt/managers/overlap_utils.py"


def _git(tree: Path, *args: str) -> str:
    argv = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def tree(sglang_wheel: Path, tmp_path: Path) -> Path:
    path = tmp_path / "tree"
    assert series.checkout(path, sglang_wheel) == load_patch_set().names
    return path


def _series_files(folder: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.suffix == ".patch" or p.name == SERIES_NAME
    }


def test_export_of_a_fresh_checkout_reproduces_the_committed_series(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert series.main(["export", str(tree), "--to", str(out)]) == 0
    assert _series_files(out) == _series_files(PATCHES_DIR)
    log = _git(tree, "log", "--format=%s%n%b", "pristine..HEAD")
    for patch in load_patch_set().patches:
        assert patch.subject in log and f"Patch-Name: {patch.name}" in log


def test_an_edit_in_the_tree_lands_in_its_patch_and_installs(
    tree: Path, tmp_path: Path, site_packages: Path
) -> None:
    """A hook changed with git (a fixup of patch 03) comes out in 03's file, and installs."""
    hooked = tree / HOOKED
    text = hooked.read_text()
    marker = (
        "        # k25 patch 03: a plain 0-step decode reads only its bonus token; the top-k and hidden\n"
    )
    assert marker in text
    hooked.write_text(text.replace(marker, marker.replace("bonus token;", "bonus token (edited);")))
    _git(tree, "commit", "-q", "-a", "--fixup=HEAD")
    _git(tree, "-c", "sequence.editor=true", "rebase", "-q", "-i", "--autosquash", "pristine")
    out = tmp_path / "out"
    shutil.copytree(PATCHES_DIR, out)
    assert series.export(tree, out) == load_patch_set().names
    changed = {n for n, data in _series_files(out).items() if data != _series_files(PATCHES_DIR)[n]}
    assert changed == {"03-zero-step-plain-decode.patch"}
    apply_patch_set(site_packages, load_patch_set(out))
    assert "bonus token (edited);" in (site_packages / HOOKED).read_text()


def test_a_new_patch_is_a_new_commit_with_its_name(tree: Path, tmp_path: Path) -> None:
    hooked = tree / HOOKED
    hooked.write_text(
        hooked.read_text().replace("# FIXME: indices", "# k25: a fourth hook\n        # FIXME: indices", 1)
    )
    message = tmp_path / "message"
    message.write_text("A fourth hook\n\nBecause a test says so.\n\nPatch-Name: 04-fourth-hook\n")
    _git(tree, "commit", "-q", "-a", "--cleanup=verbatim", "-F", str(message))
    out = tmp_path / "out"
    shutil.copytree(PATCHES_DIR, out)
    assert series.export(tree, out)[-1] == "04-fourth-hook"
    added = load_patch_set(out).patches[-1]
    assert (added.subject, added.reason, added.targets) == (
        "A fourth hook",
        "Because a test says so.",
        (HOOKED,),
    )
    assert (out / SERIES_NAME).read_text().splitlines()[-1] == "04-fourth-hook"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("add", "adds sglang/srt/speculative/k25_new.py; the series only changes SGLang's own files"),
        ("no-name", "needs one trailer line 'Patch-Name: NN-name'"),
        ("dirty", "has changes that are not committed"),
    ],
)
def test_export_refuses_what_the_series_cannot_hold(
    tree: Path, tmp_path: Path, change: str, said: str
) -> None:
    if change == "add":
        (tree / "sglang/srt/speculative/k25_new.py").write_text("x = 1\n")
        _git(tree, "add", "-A")
        _git(tree, "commit", "-q", "-m", "A module\n\nWhy.\n\nPatch-Name: 04-module")
    elif change == "no-name":
        (tree / HOOKED).write_text((tree / HOOKED).read_text() + "# more\n")
        _git(tree, "commit", "-q", "-a", "-m", "No name\n\nWhy.")
    else:
        (tree / HOOKED).write_text((tree / HOOKED).read_text() + "# more\n")
    out = tmp_path / "out"
    shutil.copytree(PATCHES_DIR, out)
    before = _series_files(out)
    with pytest.raises(series.SeriesError, match=said.replace("(", r"\(").replace(")", r"\)")):
        series.export(tree, out)
    assert _series_files(out) == before


def test_a_patch_that_no_longer_applies_stops_checkout_and_apply_goes_on(
    sglang_wheel: Path, tmp_path: Path
) -> None:
    """Moving to another wheel: the patch whose context moved stops with its rejects; fixed and
    committed with the message it leaves, ``apply`` commits the rest."""
    moved = tmp_path / "sglang-0.5.23-moved.whl"
    upstream = (
        b"            return\n        # FIXME: indices",
        b"            return None\n        # FIXME: indices",
    )
    with zipfile.ZipFile(sglang_wheel) as source, zipfile.ZipFile(moved, "w") as dest:
        for name in load_patch_set().targets():
            data = source.read(name)
            if name == HOOKED:  # the line patch 03's hook follows changed upstream
                assert data.count(upstream[0]) == 1
                data = data.replace(*upstream)
            dest.writestr(name, data)
    tree = tmp_path / "tree"
    with pytest.raises(series.SeriesError, match="patch 03-zero-step-plain-decode does not apply") as failed:
        series.checkout(tree, moved)
    assert "git -C" in str(failed.value) and (tree / ".git" / series.MESSAGE_FILE).is_file()
    assert [name for name, _, _ in series._commits(tree)] == [
        "01-live-adaptive-control",
        "02-live-adaptive-readback",
    ]
    rejected = tree / (HOOKED + ".rej")
    assert "reads_bonus_only" in rejected.read_text()
    hooked = tree / HOOKED
    hooked.write_text(
        hooked.read_text().replace(
            "            return None\n        # FIXME: indices",
            "            return None\n"
            "        from sglang.srt.speculative import k25_zero_step_runtime\n\n"
            "        if k25_zero_step_runtime.reads_bonus_only(batch):\n"
            "            draft_input.bonus_tokens = self.output_tokens_buf[indices]\n"
            "            return\n"
            "        # FIXME: indices",
        )
    )
    rejected.unlink()
    _git(tree, "commit", "-q", "-a", "--cleanup=verbatim", "-F", str(tree / ".git" / series.MESSAGE_FILE))
    assert series.apply_rest(tree) == []
    assert [name for name, _, _ in series._commits(tree)] == load_patch_set().names


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("no subject\n\nwhy\n---\n", "the first line must be 'Subject: "),
        ("Subject: x\nwhy\n---\n", "must be followed by an empty line"),
        ("Subject: x\n\n\n---\n", "the reason .* is empty"),
        ("Subject: x\n\nwhy\n", "no '---' line ends the reason"),
        ("Subject: x\n\n--- a/y looks like a header\n---\n", "a reason line may not start with '---'"),
        (
            "Subject: x\n\nwhy\n---\n--- /dev/null\n+++ b/sglang/new.py\n@@ -0,0 +1 @@\n+x = 1\n",
            "creates sglang/new.py; the series changes SGLang's own files only",
        ),
        (
            "Subject: x\n\nwhy\n---\n--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n",
            "must be a relative path",
        ),
        ("Subject: x\n\nwhy\n---\nnothing\n", "no '--- a/...' / '\\+\\+\\+ b/...' file headers"),
    ],
)
def test_a_malformed_patch_is_named_with_what_is_wrong(tmp_path: Path, text: str, said: str) -> None:
    folder = tmp_path / "patches"
    folder.mkdir()
    (folder / SERIES_NAME).write_text("01-broken\n")
    (folder / "01-broken.patch").write_text(text)
    with pytest.raises(PatchSetError, match=said) as failed:
        load_patch_set(folder)
    assert str(folder / "01-broken.patch") in str(failed.value)


@pytest.mark.parametrize(
    ("listed", "files", "said"),
    [
        ("01-a\n", ["01-a", "02-b"], "02-b.patch is not in series"),
        ("01-a\n02-b\n", ["01-a"], "lists 02-b, which has no .patch file"),
        ("01-a\n01-a\n", ["01-a"], "a patch is listed twice"),
        ("# nothing\n", [], "lists no patch"),
        ("1-a\n", [], "'1-a' is not a patch name"),
    ],
)
def test_the_series_list_must_match_the_patch_files(
    tmp_path: Path, listed: str, files: list[str], said: str
) -> None:
    folder = tmp_path / "patches"
    folder.mkdir()
    (folder / SERIES_NAME).write_text(listed)
    good = next(iter(load_patch_set().patches)).text
    for name in files:
        (folder / f"{name}.patch").write_text(good)
    with pytest.raises(PatchSetError, match=said):
        load_patch_set(folder)
