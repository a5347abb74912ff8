"""Ask a running agent for one live action and confirm it: ``python -m bench.real.act --state-dir DIR threshold 0``.

gpu.sh uses it to put the oracle engine's live threshold at 0 (speculate at every batch size) before
its comparisons, so that their adaptive arm must read as "on" (issue 13's check on the real engine).
It goes through the agent's API, as the console does, so the agent's audit and events show the move.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bench.kit.agent_api import agent_client, plan_and_confirm


async def act(state_dir: Path, kind: str, value: int) -> int:
    async with agent_client(state_dir, timeout_s=60) as c:
        plan, done = await plan_and_confirm(c, kind, value)
    if done is None:
        print(f"act: the agent did not plan a live change: {plan.get('reason') or plan}")
        return 1
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
