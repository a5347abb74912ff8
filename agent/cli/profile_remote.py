"""``agent profile get NAME`` and ``agent profile save NAME PATH``: the agent's profile library, from the host.

A save goes through the running agent (the same rules as the console's: the file name and
``identity.name`` agree, a production profile wants ``--confirm-production NAME``, and the replaced
file is kept among the last versions). It names the version it replaces: ``--replaces DIGEST``, the
digest ``get`` prints; without it the save creates a new profile only. A file changed since its digest
was read is refused (412), so a stale copy never overwrites someone else's save.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from agent.cli.status import add_connection_args


def add_commands(sub: Any) -> None:
    """``get`` and ``save`` under ``agent profile`` (named so that ``agent.cli.main``, which registers
    every module with a ``register``, does not add them a second time at the top level)."""
    get = sub.add_parser(
        "get",
        help="print a profile of the running agent's library and its digest (what --replaces wants)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    get.add_argument("name", metavar="NAME", help="profile name (its file is NAME.toml)")
    get.add_argument("-o", "--output", type=Path, help="write the TOML here instead of stdout")
    add_connection_args(get)
    get.set_defaults(handler=_get)

    save = sub.add_parser(
        "save",
        help="save a profile file into the running agent's library (a new one, or --replaces DIGEST)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    save.add_argument("name", metavar="NAME", help="profile name; identity.name in the file must be the same")
    save.add_argument("path", type=Path, metavar="PATH", help="the profile TOML to save")
    save.add_argument("--replaces", metavar="DIGEST", help="the digest of the version it replaces (from get)")
    save.add_argument("--confirm-production", metavar="NAME", help="replacing a production profile: its name")
    save.add_argument("--operator", default=None, help="who asks, for the audit (default: this user)")
    add_connection_args(save)
    save.set_defaults(handler=_save)


def _request(args: argparse.Namespace, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
    """The agent's status and JSON answer; raises AgentUnreachable."""
    from agent.api.client import AgentUnreachable, connect
    from agent.serve.paths import default_state_dir

    state_dir = (args.state_dir or default_state_dir()).expanduser()
    with connect(state_dir=state_dir, socket_path=args.socket, listen=args.listen) as client:
        try:
            response = client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise AgentUnreachable(f"the agent does not answer: {exc}") from None
    if response.status_code == 401:
        raise AgentUnreachable("the agent refused the token (401); is this the same state directory?")
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def _refusal(status: int, data: Any) -> str:
    detail = data.get("detail", data) if isinstance(data, dict) else data
    if isinstance(detail, dict) and isinstance(detail.get("issues"), list):
        return "\n".join(
            f"error: {': '.join(p for p in (i.get('file'), i.get('key'), i.get('rule')) if p)}"
            for i in detail["issues"]
        )
    return f"error: {detail if isinstance(detail, str) else json.dumps(detail)} (HTTP {status})"


def _get(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable

    try:
        status, data = _request(args, "GET", f"/v1/profiles/{args.name}")
    except AgentUnreachable as exc:
        print(f"agent profile get: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(_refusal(status, data), file=sys.stderr)
        return 1
    if args.output is not None:
        args.output.write_text(data["toml"], encoding="utf-8")
    else:
        sys.stdout.write(data["toml"])
    print(f"digest {data['digest']} (agent profile save {args.name} PATH --replaces {data['digest']})",
          file=sys.stderr)  # fmt: skip
    return 0


def _save(args: argparse.Namespace) -> int:
    from agent.api.client import AgentUnreachable

    try:
        text = args.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"agent profile save: cannot read {args.path}: {exc}", file=sys.stderr)
        return 2
    headers = {"If-Match": f'"{args.replaces}"'} if args.replaces else {"If-None-Match": "*"}
    body: dict[str, Any] = {"toml": text, "operator": args.operator or getpass.getuser()}
    if args.confirm_production is not None:
        body["confirm_production"] = args.confirm_production
    try:
        status, data = _request(args, "PUT", f"/v1/profiles/{args.name}", json=body, headers=headers)
    except AgentUnreachable as exc:
        print(f"agent profile save: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(_refusal(status, data), file=sys.stderr)
        return 1
    print(f"saved {args.name} (digest {data['digest']}); the file it replaced is kept among its versions")
    return 0
