"""Ask a running agent for one live action and confirm it: ``act.py --state-dir DIR threshold 0``.

gpu.sh uses it to put the oracle engine's live threshold at 0 (speculate at every batch size) before
its comparisons, so that their adaptive arm must read as "on" (issue 13's check on the real engine).
It goes through the agent's API, as the console does, so the agent's audit and events show the move.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
from pathlib import Path

import httpx


async def act(state_dir: Path, kind: str, value: int) -> int:
    sock, token = state_dir / "run" / "agent.sock", (state_dir / "token").read_text().strip()
    transport = httpx.AsyncHTTPTransport(uds=str(sock))
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://agent", headers=headers, timeout=60
    ) as c:
        body = {
            "request_id": f"bench-{secrets.token_hex(6)}",
            "kind": kind,
            "value": value,
            "operator": "bench",
        }
        plan = (await c.post("/v1/actions", json=body)).json()
        if plan.get("mode") != "live":
            print(f"act: the agent did not plan a live change: {plan.get('reason') or plan}")
            return 1
        done = (await c.post(f"/v1/actions/{plan['action_id']}/confirm")).json()
        print(f"act: {kind} -> {value}: {done.get('status')}: {done.get('message')}")
        return 0 if done.get("status") == "applied" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("kind", choices=["threshold", "steps"])
    parser.add_argument("value", type=int)
    args = parser.parse_args()
    return asyncio.run(act(args.state_dir, args.kind, args.value))


if __name__ == "__main__":
    raise SystemExit(main())
