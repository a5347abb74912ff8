"""The Kimi profile's threshold against its own pool (issue 27): 125 sits above the ~107 requests of
its bench preset that the estimated pool holds, and the console must say which of the two is wrong."""

from __future__ import annotations

from pathlib import Path

from agent.profile import load_profile
from agent.profile.schema import Health
from agent.sglang.kv import estimate_pool_tokens
from agent.sim.calibration import CROSSOVER_CONTEXT
from agent.telemetry.moment import Moment
from agent.telemetry.reach import threshold_unreachable
from agent.wire import KvView, Load, Snapshot, Speculation

KIMI = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "kimi-k25-eagle3.toml")


def kimi_at(running: int, context: int, threshold: int | None = None) -> Moment:
    pool = estimate_pool_tokens(KIMI)
    snap = Snapshot(
        seq=1,
        time=0.0,
        speculation=Speculation(
            configured=True, on=True, threshold_available=True,
            threshold=KIMI.speculation.threshold if threshold is None else threshold,
        ),
        kv=KvView(pool_tokens=pool, used_tokens=running * context, reserve_per_request_on=8),
        load=Load(running=running, queued=40, max_running_requests=KIMI.server.max_running_requests),
    )  # fmt: skip
    return Moment(snap=snap, limits=Health())


def test_the_kimi_threshold_is_the_wrong_one_at_its_own_preset() -> None:
    fit = estimate_pool_tokens(KIMI) // (CROSSOVER_CONTEXT + 8)
    assert 100 <= fit < KIMI.speculation.threshold == 125  # the seed's numbers: ~107 against 125
    finding = threshold_unreachable(kimi_at(fit, CROSSOVER_CONTEXT))
    assert finding is not None and finding.code == "threshold_unreachable"
    assert f"threshold {KIMI.speculation.threshold} is above the {fit} requests" in finding.title
    assert "it is the threshold that is wrong for this traffic, not the pool" in finding.explanation


def test_a_threshold_the_pool_can_reach_says_nothing() -> None:
    assert threshold_unreachable(kimi_at(100, 512)) is None  # 512-token requests: 243 fit
    assert threshold_unreachable(kimi_at(100, CROSSOVER_CONTEXT, threshold=64)) is None
    assert threshold_unreachable(kimi_at(4, 30_000)) is None  # too few running to judge the traffic
