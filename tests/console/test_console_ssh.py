"""The SSH link through a real OpenSSH sshd: host keys, the token over exec, the socket forward, drops."""

from __future__ import annotations

import pytest
from console_testkit import RunningAgent, text_of, until
from e2e.sshd import Sshd

from console.app import ConsoleApp
from console.link import LinkError
from console.link.backoff import Backoff
from console.link.ssh import SshLink, SshTarget


def target(sshd: Sshd, agent: RunningAgent | None = None, *, known_hosts: str | None = None) -> SshTarget:
    return SshTarget(
        f"{sshd.user}@127.0.0.1",
        port=sshd.port,
        identity_file=str(sshd.client_key),
        known_hosts=known_hosts or str(sshd.known_hosts),
        config_file="",
        remote_state_dir=str(agent.state_dir) if agent else "/nonexistent",
    )


async def test_a_changed_host_key_is_refused_with_the_fix(sshd: Sshd) -> None:
    link = SshLink(target(sshd, known_hosts=str(sshd.changed_known_hosts)))
    with pytest.raises(LinkError) as info:
        await link.connect()
    assert not info.value.retryable
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'" in str(info.value)
    await link.close()


async def test_the_console_stays_up_and_says_why_when_the_key_is_refused(sshd: Sshd) -> None:
    app = ConsoleApp(SshLink(target(sshd, known_hosts=str(sshd.changed_known_hosts))), operator="pilot")
    async with app.run_test(size=(100, 30)):
        await until(lambda: app.model.link.state == "failed", what="the refused link")
        assert "never accepts an unverified key" in text_of(app, "#link-banner")
        assert app.is_running


async def test_a_dropped_link_reconnects_and_catches_up_with_history_intact(
    sshd: Sshd, agent: RunningAgent
) -> None:
    link = SshLink(target(sshd, agent))
    app = ConsoleApp(link, operator="pilot", backoff=Backoff(base_s=0.2, cap_s=1.0))
    async with app.run_test(size=(100, 30)):
        await until(lambda: len(app.model.snapshots) >= 3, what="three snapshots over SSH")
        before = [s.seq for s in app.model.snapshots]
        assert sshd.drop_connections(), "no SSH session to drop"
        await until(lambda: app.model.link.state == "reconnecting", what="the reconnecting state")
        assert "reconnecting" in text_of(app, "#status") and "Reconnecting" in text_of(app, "#link-banner")
        await until(lambda: app.screen.has_class("-stale"), what="stale values greyed")
        # While the link is down the agent keeps ticking; those snapshots must come back from its ring buffer.
        await until(lambda: app.model.link.state == "connected", timeout_s=30, what="the link to come back")
        last_before = before[-1]
        await until(lambda: app.model.last_seq is not None and app.model.last_seq > last_before + 3,
                    what="new items after the reconnect")  # fmt: skip
        seqs = [s.seq for s in app.model.snapshots]
        assert seqs[: len(before)] == before, "chart history was lost"
        every = sorted([*seqs, *(e.seq for e in app.model.events)])
        assert every == list(range(every[0], every[-1] + 1)), "a gap: the catch-up missed items"
        await until(lambda: not app.screen.has_class("-stale"), what="values no longer greyed")
