"""Fixtures for the install tests: the pinned SGLang wheel's own files (from the shared ``sglang_src``
and ``sglang_wheel`` fixtures in tests/conftest.py), and SGLang's adaptive classes imported without torch.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import shutil
import sys
import types
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.install.patching import apply_patch_set
from agent.install.patchset import load_patch_set

SGLANG_VERSION = "0.5.23"
_EXTRA_SOURCES = ("sglang/srt/speculative/adaptive_runtime_state.py",)
"""Unpatched files the torch-free harness imports next to the patched ones."""


@pytest.fixture(scope="session")
def pristine_tree(sglang_src: Path, sglang_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pristine wheel files laid out like site-packages: the patch targets from the shared ``sglang_src``
    and the wheel's ``dist-info`` (its RECORD defines pristine), both from the pinned wheel."""
    root = tmp_path_factory.mktemp("sglang-site")
    for relative in (*load_patch_set().targets(), *_EXTRA_SOURCES):
        dest = root / relative
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sglang_src.parent / relative, dest)
    dist_info = f"sglang-{SGLANG_VERSION}.dist-info/"
    with zipfile.ZipFile(sglang_wheel) as wheel:
        wheel.extractall(root, [n for n in wheel.namelist() if n.startswith(dist_info)])
    return root


@pytest.fixture
def site_packages(pristine_tree: Path, tmp_path: Path) -> Path:
    """A writable site-packages holding the files the series hooks and the wheel's RECORD."""
    site = tmp_path / "site-packages"
    for target in load_patch_set().targets():
        (site / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine_tree / target, site / target)
    for dist_info in pristine_tree.glob("sglang-*.dist-info"):
        shutil.copytree(dist_info, site / dist_info.name)
    return site


# --------------------------------------------------------------------------- SGLang without torch


class OverrideRecorder:
    """Stands in for ``get_context()``: records ``override`` calls, which the live keys must never make."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def override(self, source: str, **values: Any) -> None:
        self.calls.append({"source": source, **values})

    def resolved_server_args_dict(self) -> dict[str, Any]:
        return {}


@dataclasses.dataclass
class SetInternalStateReq:
    server_args: dict[str, Any]


@dataclasses.dataclass
class SetInternalStateReqOutput:
    updated: bool


@dataclasses.dataclass
class GetInternalStateReqOutput:
    internal_state: dict[str, Any]


class _DisaggregationMode(enum.Enum):
    NULL = "null"
    DECODE = "decode"


def _module(name: str, path: Path | None = None, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    if path is not None:
        module.__path__ = [str(path)]
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def _stubs(root: Path, context: OverrideRecorder) -> dict[str, types.ModuleType]:
    """Exactly the modules the five files under test import and that need torch (or msgspec)."""
    pkg = root / "sglang"

    def identity(x: Any) -> Any:
        return x

    def log_info_on_rank0(logger: logging.Logger, msg: str) -> None:
        logger.info(msg)

    return {
        # Packages: real folders, so the real files under them import; their __init__ is skipped.
        "sglang": _module("sglang", pkg),
        "sglang.srt": _module("sglang.srt", pkg / "srt"),
        "sglang.srt.speculative": _module("sglang.srt.speculative", pkg / "srt" / "speculative"),
        "sglang.srt.managers": _module("sglang.srt.managers", pkg / "srt" / "managers"),
        "sglang.srt.managers.scheduler_components": _module(
            "sglang.srt.managers.scheduler_components", pkg / "srt" / "managers" / "scheduler_components"
        ),
        # Imported by adaptive_spec_params.py (used only by adaptive_unsupported_reason / logging).
        "sglang.srt.arg_groups": _module("sglang.srt.arg_groups", Path("/nonexistent")),
        "sglang.srt.arg_groups.overrides": _module(
            "sglang.srt.arg_groups.overrides", resolved_view=identity, resolving_view=identity
        ),
        "sglang.srt.runtime_context": _module(
            "sglang.srt.runtime_context",
            attn_dp_enabled_of=lambda cfg: False,
            get_context=lambda: context,
            get_exec=lambda: types.SimpleNamespace(moe=types.SimpleNamespace(elastic_ep_backend=None)),
            get_parallel=lambda: types.SimpleNamespace(dp_size=1, tp_size=8, pp_size=1),
        ),
        "sglang.srt.speculative.spec_info": _module(
            "sglang.srt.speculative.spec_info", SpeculativeAlgorithm=object
        ),
        "sglang.srt.utils": _module(
            "sglang.srt.utils", Path("/nonexistent"), log_info_on_rank0=log_info_on_rank0
        ),
        # Imported by internal_state.py.
        "sglang.srt.disaggregation": _module("sglang.srt.disaggregation", Path("/nonexistent")),
        "sglang.srt.disaggregation.utils": _module(
            "sglang.srt.disaggregation.utils", DisaggregationMode=_DisaggregationMode
        ),
        "sglang.srt.environ": _module(
            "sglang.srt.environ",
            envs=types.SimpleNamespace(SGLANG_EXPOSE_OWN_ENV_VARS=types.SimpleNamespace(get=lambda: False)),
            exportable_env_vars=dict,
        ),
        "sglang.srt.managers.io_struct": _module(
            "sglang.srt.managers.io_struct",
            GetInternalStateReq=object,
            GetInternalStateReqOutput=GetInternalStateReqOutput,
            SetInternalStateReq=SetInternalStateReq,
            SetInternalStateReqOutput=SetInternalStateReqOutput,
        ),
        "sglang.srt.managers.scheduler_components.memory_usage": _module(
            "sglang.srt.managers.scheduler_components.memory_usage", build_memory_usage=dict
        ),
        "sglang.srt.server_args": _module(
            "sglang.srt.server_args", compute_world_size=lambda dp_size, tp_size, pp_size: tp_size * pp_size
        ),
        "sglang.srt.utils.msgspec_utils": _module(
            "sglang.srt.utils.msgspec_utils", msgspec_to_builtins=identity
        ),
    }


@dataclasses.dataclass
class PatchedSglang:
    """The patched SGLang modules under test, imported from the wheel's files."""

    params: types.ModuleType  # sglang.srt.speculative.adaptive_spec_params (real)
    runtime_state: types.ModuleType  # sglang.srt.speculative.adaptive_runtime_state (real)
    live_control: types.ModuleType  # the overlay's, hooked in by patch 01
    live_readback: types.ModuleType  # the overlay's, hooked in by patch 02
    internal_state: types.ModuleType  # sglang.srt.managers.scheduler_components.internal_state (real)
    context: OverrideRecorder
    io: types.ModuleType


_UNDER_TEST = (
    "sglang.srt.speculative.adaptive_runtime_state",
    "sglang.srt.speculative.adaptive_live_control",
    "sglang.srt.speculative.adaptive_live_readback",
    "sglang.srt.speculative.adaptive_spec_params",
    "sglang.srt.managers.scheduler_components.internal_state",
)


@pytest.fixture
def patched_sglang(pristine_tree: Path, site_packages: Path) -> Iterator[PatchedSglang]:
    """Install the patch set (overlay and series) on the wheel's files and import them with only
    torch-bound imports stubbed."""
    import importlib

    for relative in _EXTRA_SOURCES:
        shutil.copyfile(pristine_tree / relative, site_packages / relative)
    apply_patch_set(site_packages, load_patch_set())
    context = OverrideRecorder()
    stubs = _stubs(site_packages, context)
    saved = {name: sys.modules.get(name) for name in (*stubs, *_UNDER_TEST)}
    sys.modules.update(stubs)
    try:
        modules = [importlib.import_module(name) for name in _UNDER_TEST]
        yield PatchedSglang(
            runtime_state=modules[0],
            live_control=modules[1],
            live_readback=modules[2],
            params=modules[3],
            internal_state=modules[4],
            context=context,
            io=stubs["sglang.srt.managers.io_struct"],
        )
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
