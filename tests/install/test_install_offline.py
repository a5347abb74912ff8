"""``agent install --wheelhouse DIR [--system-site-packages]`` for real, offline, from wheels built here.

The GPU host's case is rebuilt on CPU: the interpreter that builds the stack is itself a venv (the
image's ``/opt/torch/.venv/bin/python3`` holds torch and the CUDA libraries), may have no
``ensurepip`` (Debian/Ubuntu without python3-venv), and the carried wheelhouse is deliberately
incomplete (the image serves what is missing, with versions the pins do not accept). The stand-in
``sglang==0.5.23`` carries the pinned wheel's real patch targets; ``sgl_kernel``, ``flashinfer`` and
``cutlass`` (through a .pth file, as nvidia-cutlass-dsl ships it) are stubs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import tomli_w
from install_wheels import SGLANG_START_UP_FILES, STUB_REQUIRES, build_wheel, start_up_stub_wheels

from agent.cli.main import main
from agent.install.manifest import read_manifest
from agent.install.patchset import load_patch_set
from agent.install.stack import PARENT_SITE_PTH
from agent.install.wheelhouse import scan_wheelhouse

pytestmark = pytest.mark.slow  # real venvs and pip runs, a few seconds each

REPO = Path(__file__).resolve().parents[2]
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
LAUNCHER = b"import argparse\nargparse.ArgumentParser(prog='sglang.launch_server').parse_args()\n"


def _sglang_wheel(
    out: Path, pristine_tree: Path, requires: tuple[str, ...], extra: dict[str, bytes] | None = None
) -> Path:
    files = {"sglang/__init__.py": b'__version__ = "0.5.23"\n', "sglang/launch_server.py": LAUNCHER}
    files |= SGLANG_START_UP_FILES | (extra or {})
    for target in load_patch_set().targets():
        files[target] = (pristine_tree / target).read_bytes()
    return build_wheel(out, "sglang", "0.5.23", files, requires)


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    data = tomllib.loads((REPO / "profiles" / "kimi-k25-eagle3.toml").read_text())
    data["stack"]["python"] = PY
    path = tmp_path / "profile.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False)


def _install(profile: Path, venv: Path, wheelhouse: Path, *extra: str, installer: str = "pip") -> int:
    argv = ["install", "--profile", str(profile), "--venv", str(venv), "--wheelhouse", str(wheelhouse)]
    return main([*argv, "--installer", installer, *extra])


@pytest.fixture
def parent_venv(tmp_path: Path) -> Path:
    """The image's interpreter: a venv holding a package the stack needs (an older version than the
    pin asks for, as the image's cuDNN and numba are) and a .pth file of its own."""
    parent = tmp_path / "image-venv"
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(parent)])
    assert done.returncode == 0, done.stderr
    site = Path(
        _run(
            [
                str(parent / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ]
        ).stdout.strip()
    )
    old_dep = build_wheel(
        tmp_path / "image-wheels", "k25-fake-dep", "0.9", {"k25_fake_dep/__init__.py": b"VALUE = 0.9\n"}
    )
    with zipfile.ZipFile(old_dep) as wheel:
        wheel.extractall(site)
    (site / "k25_image.pth").write_text("k25_image_extra\n")
    (site / "k25_image_extra").mkdir()
    (site / "k25_image_extra" / "k25_image_mod.py").write_text("WHERE = 'image'\n")
    return parent


def _give_packaging(parent: Path, tmp_path: Path) -> str:
    """Put a wheel of the agent's own ``packaging`` into the parent venv (as the image has it); its version."""
    import packaging

    source = Path(packaging.__file__).parent
    files = {f"packaging/{p.relative_to(source)}": p.read_bytes() for p in source.rglob("*.py")}
    wheel = build_wheel(tmp_path / "image-wheels", "packaging", packaging.__version__, files)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(_site(parent))
    return packaging.__version__


def _builder_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, python: Path, *, ensurepip: bool
) -> Path:
    """Put ``python`` first on PATH as ``python3.X``; without ensurepip it is hidden as Debian does."""
    bindir = tmp_path / "builder-bin"
    bindir.mkdir()
    builder = bindir / f"python{PY}"
    # A wrapper, not a symlink: a venv's python is a venv only when run by its own path (pyvenv.cfg).
    env = ""
    if not ensurepip:
        shadow = tmp_path / "no-ensurepip"
        (shadow / "ensurepip").mkdir(parents=True)
        (shadow / "ensurepip" / "__init__.py").write_text(
            "raise ImportError('ensurepip is not available (Debian without python3-venv)')\n"
        )
        env = f"PYTHONPATH={shadow} "
    builder.write_text(f'#!/bin/sh\n{env}exec {python} "$@"\n')
    builder.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return builder


def _site(venv: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_run([str(venv / "bin" / "python"), "-c", code]).stdout.strip())


# ------------------------------------------------------------------------------------- plan checks


def test_wheelhouse_problems_are_found_before_anything_changes(
    profile: Path, tmp_path: Path, pristine_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "stack"
    missing = tmp_path / "nowhere"
    assert _install(profile, venv, missing) == 1
    err = capsys.readouterr()
    assert f"--wheelhouse {missing} does not exist" in err.out + err.err

    house = tmp_path / "house"
    build_wheel(house, "k25-fake-dep", "1.0", {"k25_fake_dep/__init__.py": b""})
    assert scan_wheelhouse(house, "0.5.23").problems == (
        f"--wheelhouse {house} holds no sglang-0.5.23 wheel (1 wheels found); add it (pip download --no-deps sglang==0.5.23)",
    )
    build_wheel(
        house, "k25_fake.dep", "1.1", {"k25_fake_dep/__init__.py": b""}
    )  # same project, other spelling
    _sglang_wheel(house, pristine_tree, ())
    (problem,) = scan_wheelhouse(house, "0.5.23").problems
    assert problem.startswith(f"--wheelhouse {house}: k25-fake-dep is there in 2 versions")
    assert _install(profile, venv, house) == 1
    assert "k25-fake-dep is there in 2 versions" in capsys.readouterr().out
    assert not venv.exists() and not (tmp_path / "stack.d").exists()

    other = tmp_path / "other"
    build_wheel(other, "sglang", "0.5.22", {"sglang/__init__.py": b""})
    (problem,) = scan_wheelhouse(other, "0.5.23").problems
    assert "must hold exactly one sglang-0.5.23 wheel, found sglang-0.5.22-py3-none-any.whl" in problem


# ---------------------------------------------------------------------------- a complete wheelhouse


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_a_complete_wheelhouse_resolves_offline(
    profile: Path,
    tmp_path: Path,
    pristine_tree: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    installer: str,
) -> None:
    # The agent on the GPU host runs as PYTHONPATH=/tmp/agent-site python3 -m agent.cli.main: that
    # path must not reach the stack's python (here it would shadow sgl_kernel and fail the verify).
    leak = tmp_path / "agent-site"
    (leak / "sgl_kernel").mkdir(parents=True)
    (leak / "sgl_kernel" / "__init__.py").write_text(
        "raise ImportError('the agent PYTHONPATH reached the stack')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(leak))
    house = tmp_path / "house"
    build_wheel(house, "k25-fake-dep", "1.0", {"k25_fake_dep/__init__.py": b"VALUE = 1\n"})
    start_up_stub_wheels(house)
    _sglang_wheel(house, pristine_tree, ("k25-fake-dep==1.0", *STUB_REQUIRES))
    venv = tmp_path / "stack"
    assert _install(profile, venv, house, installer=installer) == 0
    out = capsys.readouterr().out
    assert "resolved from 5 wheels in" in out and "(offline: --no-index)" in out
    for step in (
        "create venv",
        "install packages",
        "apply patches",
        "byte-compile",
        "verify",
        "switch stack",
    ):
        assert f"  {step}: done in " in out, step
    for module in ("sglang.srt.entrypoints.http_server", "sgl_kernel", "flashinfer", "cutlass"):
        assert f"    import {module}: ok (" in out
    manifest = read_manifest(venv)
    assert manifest is not None
    assert manifest.wheelhouse == str(house) and manifest.unmet_requirements == []
    assert manifest.packages["k25-fake-dep"] == "1.0"
    assert (
        _run([str(venv / "bin" / "python"), "-c", "import cutlass; print(cutlass.DSL)"]).stdout.strip()
        == "True"
    )

    capsys.readouterr()
    assert _install(profile, venv, house, installer=installer) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_an_incomplete_wheelhouse_alone_names_what_is_missing(
    profile: Path, tmp_path: Path, pristine_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    house = tmp_path / "house"
    start_up_stub_wheels(house)
    _sglang_wheel(house, pristine_tree, ("k25-fake-dep==1.0", *STUB_REQUIRES))
    venv = tmp_path / "stack"
    assert _install(profile, venv, house) == 1
    err = capsys.readouterr().err
    assert "failed at step 'install packages'" in err and "k25-fake-dep" in err
    assert not venv.exists() and list((tmp_path / "stack.d").iterdir()) == [
        tmp_path / "stack.d" / ".install.lock"
    ]


# --------------------------------------------------------------- the GPU image: a parent venv's packages


@pytest.mark.parametrize(
    ("installer", "ensurepip"),
    [("pip", True), ("pip", False), ("uv", True)],
    ids=["ensurepip", "no-ensurepip", "uv"],  # uv: the H200 run (uv pip check saw the venv's own only)
)
def test_system_site_packages_from_a_parent_venv_with_an_incomplete_wheelhouse(
    profile: Path,
    tmp_path: Path,
    pristine_tree: Path,
    parent_venv: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    installer: str,
    ensurepip: bool,
) -> None:
    house = tmp_path / "house"
    start_up_stub_wheels(house)
    # Only in the image: a dependency the pin accepts (met, no warning) and k25-fake-dep 0.9 where the
    # pin asks for 1.0 (it serves anyway: a warning). k25-nowhere is nowhere (a warning); the last two
    # do not apply here (a marker false on this python, an extra nobody asked for) as pip check skips them.
    build_wheel(tmp_path / "image-wheels", "k25_Image.Only", "2.1", {"k25_image_only/__init__.py": b""})
    with zipfile.ZipFile(tmp_path / "image-wheels" / "k25_Image_Only-2.1-py3-none-any.whl") as wheel:
        wheel.extractall(_site(parent_venv))
    # The image's python has packaging: the check uses it (without, the system site's or the agent's).
    whose = (
        f"packaging {_give_packaging(parent_venv, tmp_path)}, the stack's own" if ensurepip else "packaging"
    )
    requires = (
        "k25-fake-dep==1.0",
        "k25-image-only>=2.0",
        "k25-nowhere>=1.5",
        "k25-elsewhere; sys_platform == 'no-such-platform'",
        "k25-dev-tool; extra == 'dev'",
        *STUB_REQUIRES,
    )
    # One module of the stack does not compile (as test data in real wheels): tolerated and counted.
    _sglang_wheel(house, pristine_tree, requires, {"sglang/test/bad_syntax.py": b"def (:\n"})
    _builder_on_path(monkeypatch, tmp_path, parent_venv / "bin" / "python", ensurepip=ensurepip)
    venv = tmp_path / "stack"

    assert _install(profile, venv, house, "--system-site-packages", installer=installer) == 0
    out = capsys.readouterr().out
    parent_site = str(_site(parent_venv))
    assert "every wheel of 4 wheels in" in out and "--no-deps" in out
    assert f"    {parent_site} (that interpreter is a venv" in out
    assert ("has no ensurepip: venv --without-pip, pip from the agent's own pip" in out) is not ensurepip
    checked = next(line for line in out.splitlines() if "check requirements: done in" in line)
    assert "2 unmet (warnings below; the verify step decides)" in checked
    assert f"on the stack's sys.path ({whose}" in checked
    unmet = [
        f"sglang 0.5.23 requires k25-fake-dep==1.0, but found k25-fake-dep 0.9 in {parent_site}",
        "sglang 0.5.23 requires k25-nowhere>=1.5, but it is not installed anywhere on the stack's sys.path",
    ]
    warned = [line.removeprefix("  warning: ") for line in out.splitlines() if line.startswith("  warning: ")]
    assert warned == unmet
    assert (
        "warning: 2 requirement(s) of the installed packages are not met by what the stack's python sees"
        in out
    )
    assert "1 file(s) did not compile (tolerated)" in out

    manifest = read_manifest(venv)
    assert manifest is not None
    assert manifest.system_site_packages and manifest.parent_site == [parent_site]
    assert manifest.unmet_requirements == unmet
    assert manifest.byte_compile_failures == 1
    site = _site(venv)
    assert (site / PARENT_SITE_PTH).read_text() == f"import site; site.addsitedir({parent_site!r})\n"
    assert (venv / "bin" / "pip").exists() is (ensurepip and installer == "pip")
    # The image's packages and its own .pth files are visible, after the stack's own packages.
    probe = "import k25_fake_dep, k25_image_mod, cutlass, sys; print(k25_fake_dep.VALUE, k25_image_mod.WHERE, sys.path.index(%r) < sys.path.index(%r))"
    done = _run([str(venv / "bin" / "python"), "-c", probe % (str(site), parent_site)])
    assert done.stdout.split() == ["0.9", "image", "True"], done.stderr
    assert list(site.glob("sglang/srt/speculative/__pycache__/adaptive_live_control.*.pyc"))


def test_a_module_the_server_needs_at_start_up_fails_the_verify_step(
    profile: Path,
    tmp_path: Path,
    pristine_tree: Path,
    parent_venv: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The real engine's first failure, caught by agent install instead of five engine crashes."""
    house = tmp_path / "house"
    stubs = start_up_stub_wheels(house)
    next(w for w in stubs if w.name.startswith("nvidia_cutlass_dsl")).unlink()
    _sglang_wheel(house, pristine_tree, ("k25-fake-dep==1.0", *STUB_REQUIRES))
    _builder_on_path(monkeypatch, tmp_path, parent_venv / "bin" / "python", ensurepip=True)
    venv = tmp_path / "stack"
    assert _install(profile, venv, house, "--system-site-packages") == 1
    err = capsys.readouterr().err
    assert "failed at step 'verify'" in err
    assert "import cutlass failed: ModuleNotFoundError: No module named 'cutlass'" in err
    assert not venv.exists()


def test_without_ensurepip_or_agent_pip_pip_runs_from_the_wheelhouse(
    profile: Path,
    tmp_path: Path,
    pristine_tree: Path,
    parent_venv: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import ensurepip

    import agent.install.plan as plan_module

    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    if not bundled:
        pytest.fail("this Python has no bundled pip wheel (ensurepip/_bundled) to stand in for a carried one")
    house = tmp_path / "house"
    start_up_stub_wheels(house)
    _sglang_wheel(house, pristine_tree, STUB_REQUIRES)
    (house / bundled[-1].name).write_bytes(bundled[-1].read_bytes())
    monkeypatch.setattr(plan_module, "agent_pip_version", lambda: None)  # as if the agent had no pip
    _builder_on_path(monkeypatch, tmp_path, parent_venv / "bin" / "python", ensurepip=False)
    venv = tmp_path / "stack"
    assert _install(profile, venv, house, "--system-site-packages") == 0
    out = capsys.readouterr().out
    assert f"pip from the pip wheel in the wheelhouse ({bundled[-1].name})" in out
    assert "check requirements: done in" in out and "on the stack's sys.path (packaging " in out
    assert ": all met" in out and "  warning: " not in out
    manifest = read_manifest(venv)
    assert manifest is not None and manifest.unmet_requirements == []
