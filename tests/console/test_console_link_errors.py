"""Connection failures name the cause and the fix, against real sockets and the real resolver; a name
that does not resolve backs off and then stops instead of retrying forever."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest
from console_testkit import text_of, until

from console.app import ConsoleApp
from console.link import LinkError
from console.link.backoff import Backoff
from console.link.local import LocalLink
from console.link.ssh import SshLink, SshTarget

UNRESOLVABLE = "no-such-host.invalid"
"""RFC 6761: the .invalid domain never resolves, on any resolver."""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens there


async def test_a_refused_ssh_port_says_nothing_listens_and_what_to_check() -> None:
    port = closed_port()
    link = SshLink(SshTarget("ops@127.0.0.1", port=port, known_hosts=None, config_file=""))
    with pytest.raises(LinkError) as info:
        await link.connect()
    message = str(info.value)
    assert f"127.0.0.1:{port} refused the connection" in message
    assert "no SSH server listens there" in message and "(-p)" in message
    assert "Errno" not in message
    assert info.value.retryable and not info.value.slow


async def test_an_unresolvable_name_says_so_and_is_retried_slowly() -> None:
    link = SshLink(SshTarget(f"ops@{UNRESOLVABLE}", known_hosts=None, config_file=""))
    with pytest.raises(LinkError) as info:
        await link.connect()
    message = str(info.value)
    assert f"the host name {UNRESOLVABLE!r} does not resolve" in message and "~/.ssh/config" in message
    assert info.value.retryable and info.value.slow


async def test_a_local_socket_nobody_listens_on_says_the_agent_is_not_running(tmp_path: Path) -> None:
    sock_path = tmp_path / "run" / "agent.sock"
    sock_path.parent.mkdir()
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sock_path))
    stale.close()  # the file stays, as after an agent that was killed
    (tmp_path / "token").write_text("t" * 32)
    link = LocalLink(sock_path)
    await link.connect()
    with pytest.raises(LinkError) as info:
        await link.request("GET", "/v1/version")
    message = str(info.value)
    assert f"the agent's socket {sock_path} refused the connection" in message
    assert "no agent is listening" in message and "agent serve" in message and "Errno" not in message
    await link.close()


def test_slow_failures_back_off_to_minutes_and_give_up() -> None:
    backoff = Backoff()
    rng = random.Random(3)
    delays = [backoff.delay(n, rng, slow=True) for n in range(1, 9)]
    assert 2.5 <= delays[0] <= 5.0 and 150.0 <= delays[-1] <= 300.0
    assert not backoff.gives_up(7, slow=True) and backoff.gives_up(8, slow=True)
    assert not backoff.gives_up(100, slow=False), "a dropped link is retried as long as it takes"


async def test_the_console_shows_the_whole_cause_and_stops_retrying_an_unresolvable_host() -> None:
    backoff = Backoff(slow_base_s=0.05, slow_cap_s=0.1, slow_give_up=3)
    link = SshLink(SshTarget(f"ops@{UNRESOLVABLE}", known_hosts=None, config_file=""))
    app = ConsoleApp(link, operator="pilot", backoff=backoff)
    async with app.run_test(size=(100, 30)):
        await until(lambda: app.model.link.state == "reconnecting", what="the first retry")
        await until(lambda: "does not resolve" in text_of(app, "#link-banner"), what="the cause on screen")
        await until(lambda: app.model.link.state == "failed", what="the console to give up")
        banner = text_of(app, "#link-banner")
        assert "gave up after 3 attempts" in banner and "~/.ssh/config" in banner
        assert app.is_running
        # The whole cause is on screen at 100 columns: the banner wraps, it does not cut.
        assert app.screen.query_one("#link-banner").size.height >= 2
