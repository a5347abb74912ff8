"""A real OpenSSH ``sshd`` on 127.0.0.1 for end-to-end tests.

Why a real one: the console reaches the GPU host through whatever sshd the operator runs, so the
end-to-end tests go through the same daemon, with its own host key, config checks and stream-local
forwarding rules, rather than through asyncssh's in-process server. The recipe follows
docs/reference/remote-agent.md §2.5: absolute sshd path (sshd re-execs itself), ``-t`` first,
``StrictModes no`` (temp dirs), ``UsePAM no``, a free port picked beforehand (sshd cannot bind port
0), readiness by TCP connect. Run as root it needs /run/sshd; run as any other user it can only log
that same user in, which is all the tests need.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

SSHD = Path("/usr/sbin/sshd")
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
HOST = "127.0.0.1"
START_TIMEOUT_S = 15.0


class SshdUnavailable(RuntimeError):
    """OpenSSH's server is not installed or refuses to start here."""


def keygen(path: Path, comment: str) -> str:
    """Create an ed25519 key pair without passphrase; return the public key line."""
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Path(f"{path}.pub").read_text().strip()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def known_hosts_line(port: int, public_key_line: str) -> str:
    """asyncssh and OpenSSH match a non-default port only as ``[host]:port``."""
    key_type, key_b64 = public_key_line.split()[:2]
    return f"[{HOST}]:{port} {key_type} {key_b64}\n"


def wait_for_tcp(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Poll a TCP connect until sshd accepts (it has no readiness signal we can await)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SshdUnavailable(f"sshd exited with {proc.returncode} before listening")
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise SshdUnavailable(f"sshd did not listen on {HOST}:{port} within {timeout_s} s")


@dataclass
class Sshd:
    """One running sshd and the client-side files that reach it."""

    root: Path
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    changed_known_hosts: Path
    config: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def connect_kwargs(self, *, known_hosts: Path | None = None) -> dict[str, Any]:
        """Keyword arguments for ``asyncssh.connect``: our key only, our known_hosts only, no
        ~/.ssh/config and no ssh-agent, so that nothing on the machine running the tests leaks in."""
        return {
            "host": HOST,
            "port": self.port,
            "username": self.user,
            "client_keys": [str(self.client_key)],
            "known_hosts": str(known_hosts or self.known_hosts),
            "config": None,
            "agent_path": None,
            "connect_timeout": 10,
        }

    def session_pids(self) -> list[int]:
        """The per-connection sshd children: killing one drops exactly that SSH connection."""
        try:
            return [child.pid for child in psutil.Process(self.pid).children(recursive=False)]
        except psutil.NoSuchProcess:
            return []

    def drop_connections(self) -> list[int]:
        """SIGKILL every per-connection child, as a dead network path would end the session."""
        dropped = self.session_pids()
        for pid in dropped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return dropped

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def start(self) -> None:
        log = self.log.open("ab")
        try:
            self.proc = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()
        try:
            wait_for_tcp(self.port, self.proc, START_TIMEOUT_S)
        except SshdUnavailable as exc:
            self.stop()
            raise SshdUnavailable(f"{exc}\n{self.log_text()}") from exc

    def restart(self) -> None:
        """Stop the listener and every session, then start again on the same port with the same keys
        (what a host reboot or ``systemctl restart ssh`` looks like from the console)."""
        self.stop()
        self.start()

    def stop(self) -> None:
        """Stop the listener and every session it forked (they share its process group)."""
        if self.proc is None:
            return
        sessions = self.session_pids()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None


def write_config(
    root: Path, port: int, host_key: Path, authorized_keys: Path, overrides: dict[str, str]
) -> Path:
    """sshd takes the first value it reads for a keyword, so ``overrides`` go first."""
    config = root / "sshd_config"
    lines = [
        *(f"{key} {value}" for key, value in overrides.items()),
        f"Port {port}",
        f"ListenAddress {HOST}",
        f"HostKey {host_key}",
        f"PidFile {root / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized_keys}",
        "StrictModes no",
        "UsePAM no",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "AllowTcpForwarding yes",
        "AllowStreamLocalForwarding yes",
        "X11Forwarding no",
        "PrintMotd no",
        "LogLevel VERBOSE",
        "Subsystem sftp internal-sftp",
    ]
    config.write_text("\n".join(lines) + "\n")
    return config


@contextlib.contextmanager
def running_sshd(root: Path, *, attempts: int = 3, overrides: dict[str, str] | None = None) -> Iterator[Sshd]:
    """Start sshd in ``root``; yield it; stop it. Retries on a lost free-port race."""
    if not SSHD.exists():
        raise SshdUnavailable(f"{SSHD} is missing: apt-get install -y openssh-server")
    if os.geteuid() == 0:
        # Debian's sshd refuses to start as root without its privilege-separation directory.
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    host_key = root / "host_ed25519"
    client_key = root / "client_ed25519"
    other_host_key = root / "other_host_ed25519"
    host_pub = keygen(host_key, "e2e-host")
    client_pub = keygen(client_key, "e2e-client")
    other_pub = keygen(other_host_key, "e2e-impostor-host")
    authorized_keys = root / "authorized_keys"
    authorized_keys.write_text(client_pub + "\n")
    authorized_keys.chmod(0o600)
    last_error: Exception | None = None
    for _ in range(attempts):
        port = free_port()
        config = write_config(root, port, host_key, authorized_keys, overrides or {})
        check = subprocess.run([str(SSHD), "-t", "-f", str(config)], capture_output=True, text=True)
        if check.returncode != 0:
            raise SshdUnavailable(f"sshd -t rejected {config}: {check.stderr.strip()}")
        known_hosts = root / "known_hosts"
        known_hosts.write_text(known_hosts_line(port, host_pub))
        changed = root / "known_hosts_changed"
        changed.write_text(known_hosts_line(port, other_pub))
        server = Sshd(
            root=root,
            port=port,
            user=getpass.getuser(),
            client_key=client_key,
            known_hosts=known_hosts,
            changed_known_hosts=changed,
            config=config,
            log=root / "sshd.log",
        )
        try:
            server.start()
        except SshdUnavailable as exc:
            last_error = exc
            if "Address already in use" in str(exc):
                continue
            raise
        try:
            yield server
        finally:
            server.stop()
        return
    raise SshdUnavailable(f"sshd could not bind a free port after {attempts} attempts: {last_error}")
