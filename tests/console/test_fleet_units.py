"""The fleet's parts without a screen: the hosts file and --host, the rows and the total, the order,
and a change asked of several hosts (plans, one confirm each, host by host, never retried)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fleet_kit import RECORDING

from agent.wire import ActionRequest, ActionResult, Plan, Snapshot
from console.fleet.change import FleetChange, parse_value
from console.fleet.hosts import HostsError, load_hosts_file, target_of_spec
from console.fleet.model import row_of, sort_rows, total_of
from console.link import LinkError
from console.link.replay import load_recording
from console.model import ConsoleModel, LinkStatus

GOOD = """
[[host]]
name = "gpu-a"
ssh = "ops@10.0.0.5"
port = 2222
identity_file = "~/.ssh/id_ed25519"
socket = "/srv/k25/state/run/agent.sock"
worker_url = "http://10.0.0.5:30000"

[[host]]
name = "here"
socket = "/tmp/k25/run/agent.sock"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def test_a_hosts_file_gives_each_host_its_destination_socket_and_name(tmp_path: Path) -> None:
    a, here = load_hosts_file(write(tmp_path, GOOD), known_hosts="/k")
    assert a.name == "gpu-a" and a.ssh is not None and a.ssh.destination == "ops@10.0.0.5"
    assert a.ssh.port == 2222 and a.ssh.remote_state_dir == "/srv/k25/state" and a.ssh.known_hosts == "/k"
    assert a.worker_url == "http://10.0.0.5:30000"
    assert here.ssh is None and here.socket == Path("/tmp/k25/run/agent.sock")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (GOOD.replace("port = 2222", 'port = "22"'), "port must be a whole number"),
        (GOOD.replace("worker_url", "wroker_url"), "unknown key 'wroker_url'"),
        (GOOD.replace('name = "here"', 'name = "gpu-a"'), "two hosts are named 'gpu-a'"),
        (GOOD.replace('name = "here"', 'name = "bad name"'), "name 'bad name' is not allowed"),
        ('[[host]]\nname = "x"\n', "give ssh (user@host) for a remote agent, or socket"),
        ("[[host]\n", "not valid TOML"),
        ("hosts = 1\n", "unknown key 'hosts'"),
        (GOOD.replace('socket = "/tmp', 'socket = "tmp'), "socket must be an absolute path"),
        (GOOD.replace('ssh = "ops@10.0.0.5"', 'ssh = "-oProxyCommand=x"'), "not an SSH destination"),
    ],
)
def test_a_bad_hosts_file_names_the_file_the_host_and_the_key(tmp_path: Path, text: str, says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(HostsError) as caught:
        load_hosts_file(path)
    assert str(path) in str(caught.value) and says in str(caught.value)


def test_host_specs_name_a_destination_a_port_and_a_socket() -> None:
    common: dict[str, object] = {"port": None, "identity_file": "/id", "jump_host": None, "known_hosts": None}
    plain = target_of_spec("ops@gpu-b", common)
    assert plain.name == "gpu-b" and plain.ssh is not None and plain.ssh.identity_file == "/id"
    url = target_of_spec("b=ssh://ops@gpu-b:2222/var/k25/run/agent.sock", common)
    assert url.name == "b" and url.ssh is not None and url.ssh.port == 2222
    assert url.ssh.destination == "ops@gpu-b" and url.ssh.remote_state_dir == "/var/k25"
    local = target_of_spec("mine=/tmp/a/run/agent.sock", common)
    assert local.ssh is None and local.socket == Path("/tmp/a/run/agent.sock")
    with pytest.raises(HostsError, match="--host 'x y=ops@h'"):
        target_of_spec("x y=ops@h", common)


def _model(upto: int, link: str = "connected") -> ConsoleModel:
    model = ConsoleModel(clock=lambda: 1000.0)
    for item in load_recording(RECORDING)[0][:upto]:
        if item.kind == "snapshot":
            model.ingest(Snapshot.model_validate(item.data))
    model.set_link(LinkStatus(link))  # type: ignore[arg-type]
    return model


def test_a_row_keeps_a_dropped_hosts_last_values_and_the_total_leaves_them_out() -> None:
    live, dropped, never = _model(285), _model(225, "reconnecting"), ConsoleModel()
    rows = [row_of("a", live), row_of("b", dropped), row_of("c", never)]
    b = rows[1]
    assert b.stale and b.running == dropped.latest.load.running  # type: ignore[union-attr]
    assert rows[2].engine is None and rows[2].running is None
    total = total_of(rows)
    assert (total.hosts, total.live, total.reporting) == (3, 1, 1)
    assert total.running == live.latest.load.running  # type: ignore[union-attr]


def test_sorting_puts_unknown_values_last_either_way() -> None:
    rows = [row_of("a", _model(120)), row_of("b", _model(285)), row_of("c", ConsoleModel())]
    assert [r.name for r in sort_rows(rows, "running", True)] == ["b", "a", "c"]
    assert [r.name for r in sort_rows(rows, "running", False)] == ["a", "b", "c"]
    assert [r.name for r in sort_rows(rows, "name", True)] == ["c", "b", "a"]


class FakeClient:
    """An agent's answers to a fleet change: plan in a given mode, confirm as told."""

    def __init__(self, mode: str, confirm: str | Exception = "applied") -> None:
        self.mode, self.confirm_with = mode, confirm
        self.requests: list[ActionRequest] = []
        self.confirms = 0

    async def plan(self, request: ActionRequest) -> Plan:
        self.requests.append(request)
        return Plan(action_id=f"act-{len(self.requests)}", request=request, mode=self.mode, reason="r")  # type: ignore[arg-type]

    async def confirm(self, action_id: str) -> ActionResult:
        self.confirms += 1
        if isinstance(self.confirm_with, Exception):
            raise self.confirm_with
        plan = Plan(action_id=action_id, request=self.requests[-1], mode="live", reason="r")
        return ActionResult(action_id=action_id, status=self.confirm_with, plan=plan, message="m")  # type: ignore[arg-type]


async def test_a_change_goes_host_by_host_names_every_failure_and_retries_nothing() -> None:
    clients: dict[str, Any] = {
        "a": FakeClient("live"),
        "b": FakeClient("live", LinkError("the SSH connection dropped")),
        "c": FakeClient("rejected"),
        "d": None,
        "e": FakeClient("live", "failed"),
        "f": FakeClient("live"),
    }
    change = FleetChange("threshold", 64, list(clients), "ops")
    plans = await change.plan(clients)
    assert [p.host for p in plans] == list(clients) and plans[3].error is not None
    ids = {c.requests[0].change_id for c in clients.values() if c is not None}
    assert ids == {change.change_id}
    assert len({c.requests[0].request_id for c in clients.values() if c is not None}) == 5
    outcomes = await change.apply(clients.get)
    assert [(o.host, o.outcome) for o in outcomes] == [
        ("a", "applied"), ("b", "lost"), ("c", "rejected"), ("d", "unreachable"), ("e", "failed"), ("f", "applied"),
    ]  # fmt: skip
    assert [c.confirms for c in clients.values() if c is not None] == [1, 1, 0, 1, 1]


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("threshold", " 64 ", 64),
        ("steps", "release", -1),
        ("steps", "2", 2),
        ("apply_profile", "kimi", "kimi"),
    ],
)
def test_values_as_typed(kind: Any, text: str, value: object) -> None:
    assert parse_value(kind, text) == value


@pytest.mark.parametrize(("kind", "text"), [("threshold", "-1"), ("threshold", "6.5"), ("steps", "many")])
def test_a_wrong_value_says_what_the_kind_takes(kind: Any, text: str) -> None:
    with pytest.raises(ValueError):
        parse_value(kind, text)


async def test_a_restart_on_a_production_host_wants_its_profile_typed_before_the_fleet_applies() -> None:
    from fleet_kit import scripted_fleet

    from console.fleet.app import FleetApp
    from console.fleet.change import HostPlan
    from console.fleet.dialogs import ConfirmFleetPlans

    request = ActionRequest(
        request_id="r" * 8, kind="apply_profile", value="kimi-next", change_id="chg-12345678"
    )
    plans = [
        HostPlan("gpu-a", Plan(action_id="act-1", request=request, mode="restart", reason="topk changes"))
    ]
    answers: list[bool] = []

    targets, links = scripted_fleet()
    app = FleetApp(targets, links=links, operator="t")
    async with app.run_test() as pilot:
        await pilot.pause()
        app.push_screen(ConfirmFleetPlans("t", plans, challenge="kimi-prod"), answers.append)
        await pilot.pause()
        await pilot.press("y")  # typed into the field, not a confirm
        await pilot.pause()
        assert answers == [] and isinstance(app.screen, ConfirmFleetPlans)
        await pilot.press("backspace", *"kimi-prod", "enter")
        await pilot.pause()
    assert answers == [True]


async def test_a_screen_key_on_the_fleet_opens_that_screen_of_the_host_under_the_cursor() -> None:
    from fleet_kit import scripted_fleet

    from console.fleet.app import FleetApp
    from console.fleet.screen import FleetScreen
    from console.screens.gpus import GpusScreen

    targets, links = scripted_fleet()
    app = FleetApp(targets, links=links, operator="t")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("down", "g")
        await pilot.pause()
        assert app.in_host == "gpu-b" and isinstance(app.screen, GpusScreen)
        assert app.screen.session is app.hosts["gpu-b"].session and app.model is app.hosts["gpu-b"].model
        await pilot.press("F")
        await pilot.pause()
        assert app.in_host is None and isinstance(app.screen, FleetScreen)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--host", "a=ops@x", "--host", "a=ops@y"], "two hosts are named 'a'"),
        (["--host", "ops@x", "gpu-box"], "--host names the hosts itself"),
        (["--fleet"], "--fleet goes with --demo"),
        (["--hosts-file", "/nonexistent/hosts.toml"], "cannot read the hosts file /nonexistent/hosts.toml"),
    ],
)
def test_the_command_line_refuses_a_fleet_it_cannot_use_and_says_why(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from console.cli import main

    assert main(argv) == 2
    assert says in capsys.readouterr().err
