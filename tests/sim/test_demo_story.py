"""The demo tells the product's story: speculation ahead at low load, behind under load, and the
demo profile's threshold is the crossover the demo's own benchmark finds, inside the traffic's ramp.

The benchmark here is the engine model on its virtual clock (no HTTP, no wall clock): for each level
of the demo profile's first bench preset, the same requests as ``agent bench compare`` sends (the
preset's lengths, ``BenchOptions.requests_at`` per level), once with the live threshold at 0 ("on")
and once at 1 ("off"), then the bench's own ``recommend``. The live benchmark against the real-time
simulator lands in the recommendation's range (the figures in the report); this test pins the number.
"""

from __future__ import annotations

from pathlib import Path

from agent.bench.options import BenchOptions
from agent.bench.recommend import LevelPair, Recommendation, recommend
from agent.profile import Profile, load_profile
from agent.sglang import kv
from agent.sim.config import sim_config
from agent.sim.engine import Engine
from agent.sim.loadmodel import run_closed_loop
from console.demo.traffic import MAX_TOKENS, PROMPT_WORDS, target_concurrency

PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml"
DEMO_PEAK = 250  # console.demo.stack.DemoStack's default


def model_bench(profile: Profile) -> tuple[Recommendation, list[LevelPair]]:
    preset = profile.bench.presets[0]
    options = BenchOptions(
        concurrency=tuple(preset.concurrency),
        input_len=preset.input_len,
        output_len=preset.output_len,
        min_requests=preset.requests_per_level,
    )
    config = sim_config(profile)
    pairs = []
    for level in options.concurrency:
        tok_s = {}
        for arm, threshold in (("on", 0), ("off", 1)):
            engine = Engine(config, seed=0)
            assert engine.controller is not None
            engine.controller.set_threshold(threshold)
            result = run_closed_loop(
                config,
                level,
                options.input_len,
                options.output_len,
                options.requests_at(level),
                engine=engine,
            )
            tok_s[arm] = result.output_tok_s
        pairs.append(LevelPair(level, tok_s["on"], tok_s["off"]))
    return recommend(pairs), pairs


def test_the_demo_threshold_is_the_crossover_its_bench_finds_inside_the_ramp() -> None:
    profile = load_profile(PROFILE)
    assert profile.bench.presets[0].name == "crossover"
    rec, pairs = model_bench(profile)
    assert rec.threshold == profile.speculation.threshold, rec
    assert rec.confidence_label == "high"
    assert pairs[0].on > 1.3 * pairs[0].off  # one stream: speculation well ahead
    assert pairs[-1].off > 1.1 * pairs[-1].on  # the ramp's peak: speculation clearly behind
    assert 1 < rec.threshold < DEMO_PEAK
    ramp = [target_concurrency(t, 120.0, DEMO_PEAK) for t in range(120)]
    assert min(ramp) < rec.threshold < max(ramp)


def test_the_demo_engine_holds_the_ramps_peak_so_the_traffic_crosses_the_threshold() -> None:
    """The demo's KV pool fits its peak of demo-shaped requests: running really reaches past the
    threshold instead of stalling in the queue below it (the demo once topped out at 79 running)."""
    profile = load_profile(PROFILE)
    config = sim_config(profile)
    shape = kv.spec_shape_for_profile(profile)
    assert shape is not None
    held = DEMO_PEAK * (PROMPT_WORDS + MAX_TOKENS + kv.reserve_per_decode(shape, profile.server.page_size))
    assert config.pool_tokens >= held
    assert config.max_running_requests >= DEMO_PEAK
    threshold = profile.speculation.threshold
    assert threshold is not None
    assert 1.5 * threshold < DEMO_PEAK  # well past it, not grazing it
