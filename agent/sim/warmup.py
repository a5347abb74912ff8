"""SGLang's own warm-up request, which the real server sends itself before ``/health`` answers 200.

``_execute_server_warmup`` (``http_server.py``): a non-streaming ``/generate`` of "The capital city
of France is" for 8 tokens at temperature 0. The real server's counters and its decode-log window
start with it (the capture after start, ``metrics-idle-after-start.prom``: 1 request, 6 prompt and
8 output tokens, 2 verify calls), so the simulated server sends it too, unless the profile's
``extra_flags`` hold ``--skip-server-warmup``.
"""

from __future__ import annotations

import asyncio

from agent.sglang.extra_flags import has_flag
from agent.sim import text
from agent.sim.request import SimRequest
from agent.sim.runner import EngineRunner

WARMUP_PROMPT = "The capital city of France is"
WARMUP_MAX_NEW_TOKENS = 8


async def warm_up(runner: EngineRunner) -> None:
    """Run the warm-up request through the engine and wait for it to finish."""
    if has_flag(runner.engine.config.profile.server.extra_flags, "--skip-server-warmup"):
        return
    done = asyncio.Event()
    runner.submit(
        SimRequest(
            rid=runner.engine.new_rid(),
            input_len=text.count_text_tokens(WARMUP_PROMPT),
            max_new_tokens=WARMUP_MAX_NEW_TOKENS,
            ignore_eos=False,
            notify=lambda req: done.set() if req.finished else None,
            prompt_key=text.prompt_key(WARMUP_PROMPT),
        )
    )
    await done.wait()
