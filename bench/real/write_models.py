"""Write the local models for the real-engine runs (bench/real/README.md).

    PYTHONPATH=... python3 -m bench.real.write_models --python /tmp/stack/bin/python \
        --root /tmp/smoke/models --links /tmp/models tiny heavy
    ... --chain tuned big      # the big target walking a cycle, heads q100 and q080 (LINKS/big-chain)

The stack's python runs ``agent/smoke/tiny_models.py`` (torch lives there, not in the agent), exactly
as ``agent smoke`` does, into ``ROOT/<preset>-<digest>`` (so ``agent smoke --work-dir /tmp/smoke``
reuses the tiny set), and ``LINKS/<preset>`` points at each set, the paths the profiles in
``bench/real/profiles`` name. All presets are written at once. With ``--chain NAME``
(``agent.smoke.shapes.CHAIN_PRESETS``) each preset is written as a chain set instead: a target that
walks a cycle of tokens and EAGLE-3 heads of chosen acceptance, under ``LINKS/<preset>-chain``; each
head's ``k25-chain.json`` holds the accept length it was built for.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from agent.smoke.run import write_models
from agent.smoke.shapes import CHAIN_PRESETS, ModelSet, shape_for


async def _write(preset: str, root: Path, links: Path, python: Path, chain: str | None) -> None:
    spec = CHAIN_PRESETS[chain] if chain else None
    models = ModelSet(root=root, shape=shape_for(preset), preset=preset, chain=spec)
    await write_models(models, python, lambda line: print(f"{preset}: {line}", flush=True))
    links.mkdir(parents=True, exist_ok=True)
    link = links / (f"{preset}-chain" if chain else preset)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(models.folder, target_is_directory=True)
    print(f"{preset}: {link} -> {models.folder}", flush=True)


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--python", type=Path, required=True, help="the stack's python (torch, safetensors)")
    parser.add_argument("--root", type=Path, required=True, help="where the model sets are written")
    parser.add_argument("--links", type=Path, required=True, help="LINKS/<preset> points at each set")
    parser.add_argument(
        "--chain", choices=sorted(CHAIN_PRESETS), help="write chain sets (heads of chosen acceptance)"
    )
    parser.add_argument("presets", nargs="+", choices=("tiny", "heavy", "big"))
    args = parser.parse_args(argv)
    await asyncio.gather(*(_write(p, args.root, args.links, args.python, args.chain) for p in args.presets))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
