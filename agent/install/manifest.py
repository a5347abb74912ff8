"""The stack manifest: what ``agent install`` put in a stack venv, written last, read by the daemon.

``<venv>/k25-stack-manifest.json`` holds the versions installed, the patch set applied and the sha256
of every file it installed (``patched_files``: the overlay's modules and the hooked SGLang files). Its own sha256 is what ``/v1/version`` reports as ``stack_manifest_hash``, so
an operator can tell two hosts' stacks apart (or equal) at a glance. It is written only after the stack
verified, so a manifest means "this stack was complete and checked".
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.profile.atomic import write_atomic
from agent.profile.regular_file import read_regular_file

MANIFEST_NAME = "k25-stack-manifest.json"
MANIFEST_SCHEMA = 1
MANIFEST_MAX_BYTES = 4 * 1024 * 1024
"""A manifest lists a few hundred files: kilobytes. Anything this large is not one."""


class PatchRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    sha256: str


class StackManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = MANIFEST_SCHEMA
    created_at: str
    profile: str
    python_version: str
    installer: str
    index_url: str | None
    find_links: list[str]
    sglang_version: str
    packages: dict[str, str]
    packages_fingerprint: str
    patch_set_sha256: str | None
    patches: list[PatchRecord]
    patched_files: dict[str, str]
    """sha256 of every file the patch set installed, by path in site-packages: overlay and hooked."""
    wheelhouse: str | None = None
    """The directory the packages came from, offline (``--wheelhouse``)."""
    system_site_packages: bool = False
    parent_site: list[str] = []
    """A parent venv's site-packages the stack also sees (``--system-site-packages`` from a venv python)."""
    unmet_requirements: list[str] = []
    """After a ``--no-deps`` install, the requirements nothing on the stack python's ``sys.path`` meets
    (``agent.install.requirements``): what the stack runs without (the verify step decides)."""
    byte_compile_failures: int | None = None


def manifest_path(venv: Path) -> Path:
    return venv / MANIFEST_NAME


def write_manifest(venv: Path, manifest: StackManifest) -> Path:
    """Atomic: temp file in the same folder, fsync, rename."""
    target = manifest_path(venv)
    write_atomic(target, json.dumps(manifest.model_dump(), indent=2, sort_keys=True) + "\n")
    return target


@dataclass(frozen=True)
class ManifestRead:
    """A stack's manifest as read from disk: the manifest and its file's sha256, or why there is none."""

    manifest: StackManifest | None = None
    sha256: str | None = None
    """Of the file's bytes, only for a manifest that reads back whole (a torn one has no hash to show)."""
    problem: str | None = None
    """Why a manifest that is there cannot be used (torn, not one, not a file); None when there is none."""


def load_manifest(venv: str | os.PathLike[str]) -> ManifestRead:
    """The manifest of the stack at ``venv``, read through ``read_regular_file`` (a link or a FIFO there
    is refused, never followed or waited on); a torn or damaged one says why and has no hash."""
    path = manifest_path(Path(venv).expanduser())
    try:
        data = read_regular_file(path, MANIFEST_MAX_BYTES)
    except FileNotFoundError:
        return ManifestRead()
    except OSError as exc:
        return ManifestRead(problem=f"{path}: cannot be read ({exc.strerror or type(exc).__name__})")
    if len(data) > MANIFEST_MAX_BYTES:
        return ManifestRead(problem=f"{path}: larger than {MANIFEST_MAX_BYTES} bytes, not a stack manifest")
    try:
        manifest = StackManifest.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the top level"
        why = "not JSON (torn or damaged)" if first["type"] == "json_invalid" else f"{where}: {first['msg']}"
        return ManifestRead(problem=f"{path}: unreadable: {why}")
    return ManifestRead(manifest, hashlib.sha256(data).hexdigest())


def read_manifest(venv: Path) -> StackManifest | None:
    """The manifest of a stack, or None when there is none or it is unreadable (a stack to rebuild)."""
    return load_manifest(venv).manifest


def manifest_hash(venv: str | os.PathLike[str]) -> str | None:
    """sha256 of the manifest file's bytes (for ``/v1/version``), or None when the stack has none or
    the one it has is torn: a hash is shown only for a manifest that reads back as one."""
    return load_manifest(venv).sha256


def stack_manifest(venv: str) -> dict[str, str | None]:
    """``/v1/version``'s word on the stack: its manifest's sha256, or why the one there is unreadable."""
    read = load_manifest(venv)
    return {"stack_manifest_hash": read.sha256, "stack_manifest_problem": read.problem}
