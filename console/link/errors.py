"""Connection failures in an operator's words: what failed, why, and what fixes it.

``[Errno 111] Connect call failed`` says nothing at 3 a.m.; "nothing listens on gpu1:2222: is sshd
running, is the port right (-p)?" does. Each failure also says how the reconnect loop should treat
it: a refused port is worth retrying soon (sshd restarting), a name that does not resolve is not
(it backs off to minutes, then gives up), a refused host key never.
"""

from __future__ import annotations

import errno
import socket

from console.link.base import LinkError


def root_os_error(exc: BaseException) -> OSError | None:
    """The OSError at the bottom of a wrapped exception (httpx and asyncssh wrap the socket's own)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and (
            current.errno is not None or isinstance(current, socket.gaierror)
        ):
            return current
        current = current.__cause__ or current.__context__
    return None


def unresolvable(host: str, error: socket.gaierror) -> LinkError:
    why = error.strerror or str(error)
    return LinkError(
        f"the host name {host!r} does not resolve ({why}). Check its spelling and the Host entry in "
        "~/.ssh/config; if it resolves only on a VPN or an internal DNS, connect that first. The "
        "console tries again less and less often, then stops.",
        retryable=True,
        slow=True,
    )


def refused(where: str, fix: str) -> LinkError:
    return LinkError(f"{where} refused the connection: {fix}", retryable=True)


def ssh_connect_error(destination: str, host: str, port: int | None, exc: BaseException) -> LinkError:
    """Why ``asyncssh.connect`` to ``host`` failed, with the fix."""
    where = f"{host}:{port or 22}"
    if isinstance(exc, TimeoutError):
        return LinkError(
            f"no answer from {where} within the connect timeout: the host is down, a firewall drops "
            "the packets, or the address is wrong. Check that `ssh "
            f"{destination}` reaches it from this machine.",
        )
    os_error = root_os_error(exc)
    if isinstance(os_error, socket.gaierror):
        return unresolvable(host, os_error)
    if os_error is not None and os_error.errno == errno.ECONNREFUSED:
        return refused(
            where,
            "no SSH server listens there. Check the port (-p), that sshd runs on the host, and that no "
            "firewall rejects the port.",
        )
    if os_error is not None and os_error.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return LinkError(
            f"no route to {where} ({os_error.strerror}): this machine cannot reach that network. "
            "Check the VPN, the jump host (-J) or the address."
        )
    detail = os_error.strerror if os_error is not None and os_error.strerror else str(exc)
    return LinkError(f"cannot reach {destination} over SSH: {detail or type(exc).__name__}")


def agent_socket_error(socket_desc: str, exc: BaseException) -> LinkError:
    """A call on the agent's socket (local, or the SSH forward of it) could not connect."""
    os_error = root_os_error(exc)
    if os_error is not None and os_error.errno in (errno.ECONNREFUSED, errno.ENOENT):
        return refused(
            socket_desc,
            "no agent is listening (it stopped, and may have left its socket file behind). Start it on "
            "the host with `agent serve --profile ...`; the console reconnects by itself.",
        )
    if os_error is not None and os_error.errno == errno.EACCES:
        return LinkError(
            f"{socket_desc}: permission denied. The agent's socket is private (0600) to the user who "
            "runs `agent serve`: connect as that user.",
            retryable=False,
        )
    detail = os_error.strerror if os_error is not None and os_error.strerror else str(exc)
    return LinkError(f"lost the agent on {socket_desc}: {detail or type(exc).__name__}")
