"""The hosts of a fleet: a name, an SSH destination (or none, for an agent on this machine) and the
agent's socket, from the hosts file in the user's config folder or from ``--host`` given more than once.

The hosts file (``$XDG_CONFIG_HOME/k25console/hosts.toml``, default ``~/.config/k25console/hosts.toml``)::

    [[host]]
    name = "gpu-a"                   # what the Fleet screen and the title call it
    ssh = "ops@10.0.0.5"             # user@host or a Host of ~/.ssh/config; omit for a local agent
    port = 22                        # optional, as ssh's -p
    identity_file = "~/.ssh/id_ed25519"   # optional, -i
    jump_host = "ops@bastion"        # optional, -J
    socket = "/home/ops/.local/state/k25console/run/agent.sock"   # optional: the agent's socket
    worker_url = "http://10.0.0.5:30000"   # optional: this host's engine as the router names it

``--host`` takes ``[NAME=]DEST``: ``ops@gpu-a``, ``ssh://ops@gpu-a:2222/path/to/agent.sock`` or a
local socket path (``/tmp/a/run/agent.sock``). Every error names the file (or the argument), the key
and what is allowed; nothing is connected before every target is valid.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from console.link import Link
from console.link.local import LocalLink
from console.link.ssh import SshLink, SshTarget

MAX_HOSTS = 256
MAX_FILE_BYTES = 256 * 1024
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
KEYS = {"name", "ssh", "port", "identity_file", "jump_host", "socket", "worker_url"}


class HostsError(ValueError):
    """A target that cannot be used, said with where it came from and what is allowed."""


@dataclass(frozen=True)
class HostTarget:
    name: str
    ssh: SshTarget | None
    """None: an agent on this machine, at ``socket``."""
    socket: Path | None = None
    """The agent's socket (on the host for SSH); None: the agent's default place."""
    worker_url: str | None = None
    """This host's engine as SGLang's router names it, where the agent's own URL differs."""

    def link(self) -> Link:
        if self.ssh is not None:
            return SshLink(self.ssh)
        if self.socket is None:
            raise HostsError(f"host {self.name!r}: a local agent needs its socket")
        return LocalLink(self.socket)


def default_hosts_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "k25console" / "hosts.toml"


def state_dir_of(socket: str) -> str:
    """The agent's state directory from its socket (``<state>/run/agent.sock``): its token is there."""
    parent = Path(socket).parent
    return str(parent.parent if parent.name == "run" else parent)


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise HostsError(
            f"{where}: name {value!r} is not allowed: 1 to 32 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def _text(entry: dict[str, object], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > 1024 or not value.isprintable():
        raise HostsError(f"{where}: {key} must be a non-empty text of at most 1024 characters")
    return value


def _ssh(destination: str, where: str, **options: object) -> SshTarget:
    try:
        return SshTarget(destination, **options)  # type: ignore[arg-type]
    except ValueError as exc:
        raise HostsError(f"{where}: {exc}") from None


def target_of_entry(entry: object, where: str, known_hosts: str | None = None) -> HostTarget:
    if not isinstance(entry, dict):
        raise HostsError(f"{where}: each [[host]] is a table of keys")
    unknown = sorted(set(entry) - KEYS)
    if unknown:
        raise HostsError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(KEYS))}")
    name = _name(entry.get("name"), where)
    at = f"{where} ({name})"
    port = entry.get("port")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535):
        raise HostsError(f"{at}: port must be a whole number from 1 to 65535, not {port!r}")
    socket = _text(entry, "socket", at)
    if socket is not None and not socket.startswith("/"):
        raise HostsError(f"{at}: socket must be an absolute path, not {socket!r}")
    worker_url = _text(entry, "worker_url", at)
    if worker_url is not None and urlsplit(worker_url).scheme not in ("http", "https"):
        raise HostsError(f"{at}: worker_url must be an http:// or https:// URL, not {worker_url!r}")
    destination = _text(entry, "ssh", at)
    ssh = None
    if destination is not None:
        ssh = _ssh(
            destination,
            at,
            port=port,
            identity_file=_text(entry, "identity_file", at),
            jump_host=_text(entry, "jump_host", at),
            known_hosts=known_hosts,
            remote_state_dir=state_dir_of(socket) if socket else None,
        )
    elif socket is None:
        raise HostsError(f"{at}: give ssh (user@host) for a remote agent, or socket for one on this machine")
    return HostTarget(name, ssh, Path(socket) if socket else None, worker_url)


def load_hosts_file(path: Path, known_hosts: str | None = None) -> list[HostTarget]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise HostsError(f"cannot read the hosts file {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise HostsError(f"{path}: the hosts file is over {MAX_FILE_BYTES // 1024} KiB")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HostsError(f"{path}: not valid TOML ({exc})") from None
    extra = sorted(set(data) - {"host"})
    if extra:
        raise HostsError(f"{path}: unknown key {extra[0]!r}; the file holds [[host]] tables only")
    entries = data.get("host")
    if not isinstance(entries, list) or not entries:
        raise HostsError(f"{path}: no [[host]] table; each host is a [[host]] with name and ssh (or socket)")
    targets = [target_of_entry(e, f"{path}: host {i + 1}", known_hosts) for i, e in enumerate(entries)]
    return unique(targets, str(path))


def target_of_spec(spec: str, common: dict[str, object]) -> HostTarget:
    """``[NAME=]DEST`` from ``--host``: ``user@host``, ``ssh://user@host:port/socket`` or a socket path."""
    where = f"--host {spec!r}"
    if len(spec) > 2048 or not spec.isprintable():
        raise HostsError(f"{where}: too long or not printable")
    name, sep, dest = spec.partition("=")
    if not sep:
        name, dest = "", spec
    if dest.startswith("/"):
        return HostTarget(_name(name or Path(dest).parent.parent.name or "local", where), None, Path(dest))
    socket: str | None = None
    port = common.get("port")
    if dest.startswith("ssh://"):
        parts = urlsplit(dest)
        if not parts.hostname:
            raise HostsError(f"{where}: ssh:// needs a host (ssh://user@host:port/path/to/agent.sock)")
        try:
            port = parts.port or port
        except ValueError:
            raise HostsError(f"{where}: the port must be a number from 1 to 65535") from None
        dest = f"{parts.username}@{parts.hostname}" if parts.username else parts.hostname
        socket = parts.path or None
    host = dest.rpartition("@")[2]
    options = {**common, "port": port, "remote_state_dir": state_dir_of(socket) if socket else None}
    ssh = _ssh(dest, where, **options)
    return HostTarget(_name(name or host, where), ssh, Path(socket) if socket else None)


def unique(targets: list[HostTarget], where: str) -> list[HostTarget]:
    if len(targets) > MAX_HOSTS:
        raise HostsError(f"{where}: {len(targets)} hosts; at most {MAX_HOSTS}")
    seen: set[str] = set()
    for target in targets:
        if target.name in seen:
            raise HostsError(f"{where}: two hosts are named {target.name!r}; each name once")
        seen.add(target.name)
    return targets
