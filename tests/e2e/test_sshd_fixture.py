"""The sshd fixture itself: a key-authenticated login works, and a changed host key is refused."""

from __future__ import annotations

import asyncio

import asyncssh
import pytest

from .sshd import Sshd


async def test_key_login_through_real_sshd_runs_a_command(sshd: Sshd) -> None:
    async with asyncssh.connect(**sshd.connect_kwargs()) as conn:
        result = await conn.run("echo $USER-ok", check=True, timeout=10)
    assert result.stdout == f"{sshd.user}-ok\n"
    assert f"Accepted publickey for {sshd.user}" in sshd.log_text()


async def test_changed_host_key_is_refused_before_login(sshd: Sshd) -> None:
    accepted_before = sshd.log_text().count("Accepted publickey")
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        async with asyncssh.connect(**sshd.connect_kwargs(known_hosts=sshd.changed_known_hosts)):
            pass
    assert sshd.log_text().count("Accepted publickey") == accepted_before


async def test_dropping_the_session_child_ends_the_connection(sshd: Sshd) -> None:
    async with asyncssh.connect(**sshd.connect_kwargs()) as conn:
        assert await conn.run("true", check=True, timeout=10)
        assert sshd.drop_connections()
        await asyncio.wait_for(conn.wait_closed(), 10)
        with pytest.raises((asyncssh.ChannelOpenError, asyncssh.ConnectionLost, OSError)):
            await conn.run("true", timeout=5)
