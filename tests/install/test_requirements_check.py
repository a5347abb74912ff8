"""The requirement check of a ``--no-deps`` stack: pip check's rules, over what the stack's python sees.

``check`` is the probe's logic on listed distributions (the rules); ``check_requirements`` runs the
real probe with a real venv's python that has no ``packaging`` of its own (the agent's is used).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from install_wheels import build_wheel

import agent.install.requirements as requirements
from agent.install.requirements import Unmet, check_requirements
from agent.install.requirements_probe import Found, check
from agent.install.stack import CommandFailed

OWN = "/stack/lib/python3.12/site-packages"
PARENT = "/image/lib/python3.12/site-packages"


def _unmet(listed: list[Found]) -> list[str]:
    result = check(listed, {OWN})
    return [Unmet.model_validate(u).describe() for u in result["unmet"]]


def test_a_dependency_found_outside_the_stack_site_is_met_and_only_the_stack_site_is_checked() -> None:
    listed: list[Found] = [
        ("sglang", "0.5.23", OWN, ["NumPy>=1.17", "typing_extensions>=4.10", "requests"]),
        ("numpy", "2.1.0", PARENT, []),
        ("typing-extensions", "4.12.2", PARENT, []),
        ("requests", "2.32.0", PARENT, ["charset-normalizer<4"]),  # the image's own: not ours to check
    ]
    assert check(listed, {OWN}) == {"checked": 1, "visible": 4, "unmet": []}


def test_missing_and_wrong_versions_are_named_with_what_was_found() -> None:
    listed: list[Found] = [
        ("sglang", "0.5.23", OWN, ["numba==0.65.1", "tokenizers==0.23.2", "datasets"]),
        ("numba", "0.61.0", PARENT, []),
        ("tokenizers", "0.23.2", PARENT, []),
    ]
    assert _unmet(listed) == [
        f"sglang 0.5.23 requires numba==0.65.1, but found numba 0.61.0 in {PARENT}",
        "sglang 0.5.23 requires datasets, but it is not installed anywhere on the stack's sys.path",
    ]


def test_markers_extras_and_pre_releases_follow_pip_check() -> None:
    listed: list[Found] = [
        (
            "torch",
            "2.11.0",
            OWN,
            [
                "nvidia-nccl==2.28; sys_platform == 'no-such-platform'",  # not for this python
                "opt-einsum>=3.3; extra == 'opt-einsum'",  # an extra nobody asked for
                f"k25-here; python_version == '{sys.version_info.major}.{sys.version_info.minor}'",
                "cuda-toolkit[cublas,cudart]==13.0.3",  # the named extras are not followed
                "triton>=3.5",
            ],
        ),
        ("cuda-toolkit", "13.0.3", PARENT, ["nvidia-cublas; extra == 'cublas'"]),
        ("triton", "3.6.0rc1", PARENT, []),  # a pre-release satisfies >=3.5, as in pip check
    ]
    assert _unmet(listed) == [
        "torch 2.11.0 requires k25-here, but it is not installed anywhere on the stack's sys.path"
    ]


def test_the_first_distribution_of_a_name_on_sys_path_is_the_one_that_counts() -> None:
    listed: list[Found] = [
        ("transformers", "5.0.0", OWN, ["huggingface-hub>=1.31"]),
        ("huggingface_hub", "1.2.0", OWN, []),  # shadows the parent's newer one: import finds this
        ("huggingface-hub", "1.40.0", PARENT, []),
    ]
    assert _unmet(listed) == [
        f"transformers 5.0.0 requires huggingface-hub>=1.31, but found huggingface_hub 1.2.0 in {OWN}"
    ]


def test_unreadable_requirements_and_versions_are_reported_not_fatal() -> None:
    listed: list[Found] = [
        ("odd", "1.0", OWN, ["not a requirement !!", "legacy>=1", "legacy"]),  # any version does
        ("legacy", "2004d", PARENT, []),
    ]
    first, second = _unmet(listed)
    assert first.startswith("odd 1.0 requires not a requirement !!, which cannot be read (")
    assert second == f"odd 1.0 requires legacy>=1, but found legacy 2004d in {PARENT}, not a valid version"


@pytest.fixture
def bare_venv(tmp_path: Path) -> Path:
    """A venv of the base interpreter without pip or system site: it has no packaging of its own."""
    base = (
        Path(sysconfig.get_config_var("BINDIR")) / f"python{sys.version_info.major}.{sys.version_info.minor}"
    )
    venv = tmp_path / "stack"
    done = subprocess.run(
        [str(base), "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return venv


def test_the_probe_runs_with_the_stack_python_and_the_agents_packaging(
    bare_venv: Path, tmp_path: Path
) -> None:
    python = bare_venv / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.strip()
    wheels = [
        build_wheel(tmp_path / "w", "k25-top", "1.0", {"k25_top.py": b""}, ("k25-dep>=2", "k25-gone")),
        build_wheel(tmp_path / "w", "k25-dep", "1.5", {"k25_dep.py": b""}),
    ]
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    report = check_requirements(bare_venv)
    assert report.packaging.endswith(", the agent's, the stack has none")
    assert (report.checked, report.visible) == (2, 2)  # the agent's packaging is not one of them
    assert [u.describe() for u in report.unmet] == [
        f"k25-top 1.0 requires k25-dep>=2, but found k25-dep 1.5 in {site}",
        "k25-top 1.0 requires k25-gone, but it is not installed anywhere on the stack's sys.path",
    ]


def test_without_packaging_in_the_stack_or_the_agent_the_check_says_so(
    bare_venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(requirements, "agent_packaging_folder", lambda: None)
    with pytest.raises(CommandFailed) as caught:
        check_requirements(bare_venv)
    assert "packaging is in neither the stack nor the agent" in str(caught.value)
    assert "import sys" not in str(caught.value)  # the probe's source is not the command shown
