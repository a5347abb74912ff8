"""``agent service install|uninstall`` and the unit it writes, checked by systemd's own ``systemd-analyze
verify`` (Debian's ``systemd`` package; it runs without systemd as PID 1, as in CI's container: the
system unit with plain ``verify``, the user unit with ``--user verify`` and a private XDG_RUNTIME_DIR).

The commands run as the operator runs them (``python -m agent.cli.main``), into a temporary
``--unit-dir``; nothing here touches /etc or the real ~/.config.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli.main import build_parser
from agent.service import install as service_install
from agent.service.install import InstallRequest, ServiceError, render_for
from agent.service.unit import MARKER, UNIT_NAME, UnitError, UnitSpec, exec_word, render_unit

REPO = Path(__file__).resolve().parents[2]
SIM_PROFILE = REPO / "profiles" / "local-sim.toml"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def verify(unit: Path, *, user: bool, tmp_path: Path) -> tuple[int, str]:
    """``systemd-analyze [--user] verify UNIT``: its exit code and everything it printed."""
    # never skipped: without it the tests fail naming the package (`./dev test` installs it as root)
    assert SYSTEMD_ANALYZE, "systemd-analyze is missing: apt-get install --no-install-recommends systemd"
    env = dict(os.environ)
    argv = [SYSTEMD_ANALYZE]
    if user:
        runtime = tmp_path / "xdg-runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(runtime)  # the user manager wants one; there is no session here
        argv.append("--user")
    done = subprocess.run([*argv, "verify", str(unit)], capture_output=True, text=True, env=env, timeout=60)
    return done.returncode, done.stdout + done.stderr


def agent_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )


def install_user(
    unit_dir: Path, *extra: str, profile: Path = SIM_PROFILE
) -> subprocess.CompletedProcess[str]:
    return agent_cli(
        "service", "install", "--user", "--profile", str(profile), "--unit-dir", str(unit_dir), *extra
    )


# ---- the unit, verified by systemd ------------------------------------------------------------------


@pytest.mark.parametrize("user", [True, False], ids=["user-unit", "system-unit"])
def test_the_rendered_unit_passes_systemd_analyze_verify(tmp_path: Path, user: bool) -> None:
    request = InstallRequest(
        profile=SIM_PROFILE,
        user_unit=user,
        engine="sim",
        metrics_listen="127.0.0.1:9464",
        run_as=None if user else pwd.getpwuid(os.geteuid()).pw_name,  # systemd warns about "nobody"
        unit_dir=tmp_path,
    )
    rendered = render_for(request)
    rendered.path.write_text(rendered.text)
    code, said = verify(rendered.path, user=user, tmp_path=tmp_path)
    assert code == 0, said
    assert UNIT_NAME not in said and str(tmp_path) not in said, said  # not even a warning about it
    text = rendered.text
    for line in ("Restart=on-failure", "KillMode=process", "RestartPreventExitStatus=2", "Type=exec"):
        assert f"\n{line}\n" in text
    assert ("\nUser=" in text) is not user
    assert f"WantedBy={'default.target' if user else 'multi-user.target'}" in text


def test_verify_catches_a_broken_unit_so_the_check_above_means_something(tmp_path: Path) -> None:
    rendered = render_for(InstallRequest(profile=SIM_PROFILE, user_unit=True, unit_dir=tmp_path))
    rendered.path.write_text(rendered.text.replace("KillMode=process", "KillMode=bogus"))
    code, said = verify(rendered.path, user=True, tmp_path=tmp_path)
    assert UNIT_NAME in said and "bogus" in said, (code, said)  # rc 0: why the test reads the output
    missing = rendered.text.replace(sys.executable, str(tmp_path / "no-such-python"), 1)
    rendered.path.write_text(missing)
    code, said = verify(rendered.path, user=True, tmp_path=tmp_path)
    assert code != 0 and "is not executable" in said


def test_paths_with_spaces_percent_and_dollar_reach_systemd_intact(tmp_path: Path) -> None:
    """systemd resolves ExecStart's first word: a python under an awkward path must be found."""
    odd = tmp_path / "stack 100% $HOME" / "bin"
    odd.mkdir(parents=True)
    python = odd / "python"
    python.symlink_to(sys.executable)
    spec = UnitSpec(argv=[str(python), "-m", "agent.cli.main", "serve"], profile_name="x", user_unit=True)
    unit = tmp_path / UNIT_NAME
    unit.write_text(render_unit(spec))
    code, said = verify(unit, user=True, tmp_path=tmp_path)
    assert code == 0 and UNIT_NAME not in said, said
    exec_start = next(line for line in unit.read_text().splitlines() if line.startswith("ExecStart="))
    assert "100%%" in exec_start and "$HOME" in exec_start and "$$" not in exec_start  # no $ expansion there


def test_a_command_path_systemd_would_refuse_is_refused_with_the_reason() -> None:
    with pytest.raises(UnitError, match="quotes and backslashes"):
        render_unit(
            UnitSpec(argv=["/opt/it's/python", "-m", "agent.cli.main"], profile_name="x", user_unit=True)
        )


@pytest.mark.parametrize(
    ("word", "written"),
    [
        ("/usr/bin/python3", "/usr/bin/python3"),
        ("127.0.0.1:9464", "127.0.0.1:9464"),
        ("/a b/c", '"/a b/c"'),
        ("50%", '"50%%"'),
        ("$HOME", '"$$HOME"'),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
    ],
)
def test_exec_words_are_quoted_by_systemds_rules(word: str, written: str) -> None:
    assert exec_word(word) == written


@pytest.mark.parametrize("word", ["", "a\nExecStartPre=/bin/rm", "tab\there"])
def test_a_word_that_could_break_the_unit_is_refused(word: str) -> None:
    with pytest.raises(UnitError):
        exec_word(word)


def test_the_unit_runs_a_valid_agent_serve_command_with_no_secret(tmp_path: Path) -> None:
    key = tmp_path / "engine.key"
    key.write_text("sk-k25-secret-value-0000\n")
    key.chmod(0o600)
    profile = tmp_path / "keyed.toml"
    profile.write_text(
        SIM_PROFILE.read_text().replace("[server]\n", f'[server]\napi_key_file = "{key}"\n', 1)
    )
    rendered = render_for(
        InstallRequest(
            profile=profile, user_unit=True, engine="sim", metrics_listen="[::1]:9464", unit_dir=tmp_path
        )
    )
    argv = rendered.spec.argv
    assert argv[:3] == [sys.executable, "-m", "agent.cli.main"]
    args = build_parser().parse_args(argv[3:])  # what `agent serve` will parse, flag for flag
    assert args.command == "serve" and args.engine == "sim" and args.metrics_listen == "[::1]:9464"
    assert args.profile == profile and args.state_dir.is_absolute()
    assert "sk-k25-secret-value" not in rendered.text


# ---- install and uninstall, as commands -------------------------------------------------------------


def test_install_writes_the_unit_and_says_how_to_enable_it(tmp_path: Path) -> None:
    unit_dir = tmp_path / "units"  # does not exist yet
    state = tmp_path / "state"
    done = install_user(unit_dir, "--engine", "sim", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    unit = unit_dir / UNIT_NAME
    text = unit.read_text()
    assert text.startswith(MARKER + "\n")
    assert f"--state-dir {state}" in text and f"--profile {SIM_PROFILE}" in text
    assert stat.S_IMODE(unit.stat().st_mode) == 0o644
    assert f"wrote: {unit}" in done.stdout
    assert "systemctl --user daemon-reload" in done.stdout
    assert f"systemctl --user enable --now {UNIT_NAME}" in done.stdout
    assert [p.name for p in unit_dir.iterdir()] == [UNIT_NAME]  # no temp file left

    again = install_user(unit_dir, "--engine", "sim", "--state-dir", str(state))
    assert again.returncode == 0 and f"unchanged: {unit}" in again.stdout
    moved = install_user(unit_dir, "--engine", "sglang", "--state-dir", str(state))
    assert moved.returncode == 0 and f"wrote: {unit}" in moved.stdout
    assert "--engine" not in unit.read_text()  # ours: replaced


def test_a_unit_we_did_not_write_is_never_replaced_or_removed(tmp_path: Path) -> None:
    unit = tmp_path / UNIT_NAME
    theirs = "[Service]\nExecStart=/usr/local/bin/their-agent\n"
    unit.write_text(theirs)
    done = install_user(tmp_path)
    assert done.returncode == 2
    assert "was not written by `agent service install`" in done.stderr and str(unit) in done.stderr
    gone = agent_cli("service", "uninstall", "--user", "--unit-dir", str(tmp_path))
    assert gone.returncode == 2 and "leaving it alone" in gone.stderr
    assert unit.read_text() == theirs


def test_a_link_at_the_unit_path_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.service"
    target.write_text(render_unit(UnitSpec(argv=[sys.executable], profile_name="x", user_unit=True)))
    (tmp_path / UNIT_NAME).symlink_to(target)
    done = install_user(tmp_path)
    assert done.returncode == 2 and "is a link" in done.stderr
    assert (tmp_path / UNIT_NAME).is_symlink()


@pytest.mark.parametrize(
    ("edit", "extra", "says"),
    [
        (lambda t: t.replace("eagle_topk = 1", "eagle_topk = 0"), (), "speculation.eagle_topk"),
        (lambda t: t + "\n[surprise]\nkey = 1\n", (), "surprise"),
        (lambda t: t, ("--metrics-listen", "0.0.0.0:9464"), "--metrics-listen-any"),
        (lambda t: t, ("--metrics-listen-any",), "needs --metrics-listen"),
    ],
    ids=["bad-value", "unknown-section", "public-metrics", "any-alone"],
)
def test_bad_input_is_an_error_that_changes_nothing(
    tmp_path: Path, edit: object, extra: tuple[str, ...], says: str
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(edit(SIM_PROFILE.read_text()))  # type: ignore[operator]
    unit_dir = tmp_path / "units"
    done = install_user(unit_dir, *extra, profile=profile)
    assert done.returncode == 2, done.stdout
    assert says in done.stderr
    assert not unit_dir.exists()


def test_system_unit_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="no such user"):
        render_for(
            InstallRequest(profile=SIM_PROFILE, user_unit=False, run_as="no-such-user-k25", unit_dir=tmp_path)
        )
    with pytest.raises(ServiceError, match="--run-as is for system units"):
        render_for(InstallRequest(profile=SIM_PROFILE, user_unit=True, run_as="nobody", unit_dir=tmp_path))
    if os.geteuid() == 0 and not os.environ.get("SUDO_USER"):
        with pytest.raises(ServiceError, match="run the agent as root"):
            render_for(InstallRequest(profile=SIM_PROFILE, user_unit=False, unit_dir=tmp_path))
    nobody = render_for(
        InstallRequest(profile=SIM_PROFILE, user_unit=False, run_as="nobody", unit_dir=tmp_path)
    )
    home = Path(os.path.expanduser("~nobody"))
    assert nobody.spec.argv[nobody.spec.argv.index("--state-dir") + 1] == str(
        home / ".local/state/k25console"
    )


def test_a_failed_write_leaves_the_previous_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert install_user(tmp_path, "--engine", "sim").returncode == 0
    before = (tmp_path / UNIT_NAME).read_text()
    rendered = render_for(InstallRequest(profile=SIM_PROFILE, user_unit=True, unit_dir=tmp_path))

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(ServiceError, match="No space left"):
        service_install.install(rendered)
    monkeypatch.undo()
    assert (tmp_path / UNIT_NAME).read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == [UNIT_NAME]


def test_uninstall_removes_our_unit_unless_it_is_enabled(tmp_path: Path) -> None:
    assert install_user(tmp_path).returncode == 0
    unit = tmp_path / UNIT_NAME
    wants = tmp_path / "default.target.wants"
    wants.mkdir()
    (wants / UNIT_NAME).symlink_to(unit)  # what `systemctl --user enable` leaves
    enabled = agent_cli("service", "uninstall", "--user", "--unit-dir", str(tmp_path))
    assert enabled.returncode == 2
    assert f"systemctl --user disable --now {UNIT_NAME}" in enabled.stderr
    assert unit.exists()

    (wants / UNIT_NAME).unlink()
    done = agent_cli("service", "uninstall", "--user", "--unit-dir", str(tmp_path))
    assert done.returncode == 0 and f"removed: {unit}" in done.stdout and "daemon-reload" in done.stdout
    assert not unit.exists()
    again = agent_cli("service", "uninstall", "--user", "--unit-dir", str(tmp_path))
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_dry_run_prints_the_unit_and_writes_nothing(tmp_path: Path) -> None:
    done = install_user(tmp_path / "units", "--dry-run")
    assert done.returncode == 0
    assert MARKER in done.stdout and "KillMode=process" in done.stdout
    assert not (tmp_path / "units").exists()
