"""The systemd unit for ``agent serve``: what it says, and why each line is there.

* ``KillMode=process``: the engine (SGLang) runs in its own session and must outlive an agent
  restart; with systemd's default (``control-group``) ``systemctl restart`` would kill SGLang and its
  TP workers too, and a restarted agent would have nothing to reattach to. Only the agent's own
  process gets the stop signal; ``agent stop --engine-too`` is how the engine is stopped on purpose.
* ``Restart=on-failure`` with ``RestartPreventExitStatus=2``: a crashed agent comes back, but one that
  refused its profile or its address (exit 2) would refuse it again, so systemd does not loop on it.
* ``--state-dir`` is the agent's default for the user it runs as, written out absolute: the console
  and ``agent status`` find the socket there over SSH without flags. (systemd's ``StateDirectory=``
  would put it under /var/lib, where they would not look.)
* ``UMask=0077``: files the agent makes are private even where it does not set a mode itself.
* No secrets: the unit names the profile file, and the profile names key *files*; nothing in the
  unit is a key, and ``Environment=`` sets only ``PYTHONUNBUFFERED``.

``ExecStart=`` is built from an argv list, each word quoted by systemd's own rules (not a shell's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

UNIT_NAME = "k25console-agent.service"
MARKER = "# Written by `agent service install` (k25console); `agent service uninstall` removes it."
"""The first line of every unit we write: how install and uninstall know a unit is ours."""

EXIT_REFUSED = 2
"""``agent serve``'s exit status for a profile or address it refused (see agent/cli/serve.py)."""

_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+")


class UnitError(ValueError):
    """A value cannot be written into a unit (the message names it and says why)."""


def exec_word(word: str, *, command: bool = False) -> str:
    """``word`` as one ExecStart= word, by systemd's rules: ``%`` doubled everywhere (specifiers);
    in arguments ``$`` doubled too (variables) and anything but plain path characters double-quoted
    with C escapes. The command itself gets no variable expansion, and systemd refuses quotes and
    backslashes in it outright, so those are refused here with the reason."""
    if not word or any(ord(c) < 32 or ord(c) == 127 for c in word):
        raise UnitError(f"{word!r}: an empty argument or a control character cannot go into a unit")
    if command and any(c in word for c in "'\"\\"):
        raise UnitError(f"{word}: systemd refuses quotes and backslashes in the command's path")
    literal = word.replace("%", "%%") if command else word.replace("%", "%%").replace("$", "$$")
    if _PLAIN.fullmatch(word):
        return literal
    return '"' + literal.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class UnitSpec:
    """What the unit runs: ``argv`` (absolute interpreter first), as whom, and for which profile."""

    argv: list[str]
    profile_name: str
    user_unit: bool
    run_as: str | None = None
    """System units only: the account the agent runs as (User=); user units run as their user."""

    def __post_init__(self) -> None:
        if not self.argv or not Path(self.argv[0]).is_absolute():
            raise UnitError(f"{self.argv[:1]}: ExecStart needs an absolute path to the interpreter")
        if self.user_unit and self.run_as is not None:
            raise UnitError("a user unit runs as its user; User= is for system units")
        if not self.user_unit and not self.run_as:
            raise UnitError("a system unit needs the account to run the agent as (User=)")


def render_unit(spec: UnitSpec) -> str:
    unit = [
        "[Unit]",
        f"Description=k25console agent (profile {spec.profile_name})",
    ]
    if not spec.user_unit:
        unit += ["After=network-online.target", "Wants=network-online.target"]
    unit += ["StartLimitIntervalSec=600", "StartLimitBurst=5"]
    service = ["[Service]", "Type=exec"]
    if spec.run_as is not None:
        service.append(f"User={spec.run_as}")
    service += [
        "ExecStart=" + " ".join(exec_word(w, command=i == 0) for i, w in enumerate(spec.argv)),
        "Restart=on-failure",
        "RestartSec=5",
        f"# Exit {EXIT_REFUSED}: the profile or an address was refused; starting again would not help.",
        f"RestartPreventExitStatus={EXIT_REFUSED}",
        "# The engine runs in its own session and must outlive an agent restart: stop only the agent.",
        "KillMode=process",
        "UMask=0077",
    ]
    service.append("Environment=PYTHONUNBUFFERED=1")  # the journal gets each log line as it is written
    install = ["[Install]", f"WantedBy={'default.target' if spec.user_unit else 'multi-user.target'}"]
    lines = [
        MARKER,
        "# Re-run `agent service install` to change it rather than editing it here.",
        *unit,
        "",
        *service,
        "",
        *install,
    ]
    return "\n".join(lines) + "\n"


def is_ours(text: str) -> bool:
    return text.startswith(MARKER + "\n")
