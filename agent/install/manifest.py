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
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.profile.atomic import write_atomic

MANIFEST_NAME = "k25-stack-manifest.json"
MANIFEST_SCHEMA = 1


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


def read_manifest(venv: Path) -> StackManifest | None:
    """The manifest of a stack, or None when there is none or it is unreadable (a stack to rebuild)."""
    try:
        return StackManifest.model_validate_json(manifest_path(venv).read_bytes())
    except (OSError, ValidationError):
        return None


def manifest_hash(venv: str | os.PathLike[str]) -> str | None:
    """sha256 of the manifest file's bytes, or None when the stack has none (for ``/v1/version``)."""
    try:
        return hashlib.sha256(manifest_path(Path(venv).expanduser()).read_bytes()).hexdigest()
    except OSError:
        return None
