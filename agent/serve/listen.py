"""Parsing a ``HOST:PORT`` the agent is asked to listen on: the API (loopback only) and the metrics page.

One parser for both, so that the two flags accept the same spellings (``127.0.0.1:PORT``, ``[::1]:PORT``,
``localhost:PORT``) and refuse a wrong one in the same words; only which hosts are allowed differs.
"""

from __future__ import annotations

import ipaddress


class ListenError(Exception):
    """The requested address is refused or taken; the message says which and why."""


def parse_host_port(
    text: str, *, flag: str, example: str, allow_any: bool = False, not_loopback: str = ""
) -> tuple[str, int]:
    """``(host, port)`` of ``text``; refused unless the host is a loopback IP address or ``allow_any``.

    ``flag`` and ``example`` name the option in the message; ``not_loopback`` says what the operator
    can do about a host that is not loopback."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ListenError(f"{flag} {text!r}: expected HOST:PORT, e.g. {example}")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ListenError(f"{flag} {text!r}: port must be 1-65535")
    host = host.strip("[]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        allowed = "an IP address (127.0.0.1, ::1, 0.0.0.0 or an interface's address)" if allow_any else None
        raise ListenError(
            f"{flag} {text!r}: the host must be {allowed or 'a loopback IP address (127.0.0.1 or ::1)'}"
        ) from None
    if not address.is_loopback and not allow_any:
        raise ListenError(f"{flag} {text!r}: {host} is not a loopback address; {not_loopback}")
    return host, port


def parse_listen(text: str) -> tuple[str, int]:
    """``--listen``: ``127.0.0.1:PORT``, ``[::1]:PORT`` or ``localhost:PORT``; any other host is refused."""
    return parse_host_port(
        text,
        flag="--listen",
        example="127.0.0.1:8790",
        not_loopback="the agent listens only on loopback or a UNIX socket (reach it over SSH)",
    )
