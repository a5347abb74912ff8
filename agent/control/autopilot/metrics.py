"""The autopilot's ``k25_autopilot_*`` series: a ``MetricsSource`` for the agent's exporter.

Built at scrape time (prometheus-client's HTTP thread) from the runner's latest state, an immutable
wire model replaced whole on every tick, and copies of its counters; a value it does not know is
absent, never a made-up 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, get_args

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from agent.wire.autopilot import AutopilotMode

if TYPE_CHECKING:
    from agent.control.autopilot.runner import AutopilotRunner

PREFIX = "k25_autopilot_"
MODES: tuple[str, ...] = get_args(AutopilotMode)
COMMAND_KINDS = ("move", "probe", "probe_end", "revert", "restore", "failed")


class AutopilotMetrics:
    def __init__(self, runner: AutopilotRunner) -> None:
        self.runner = runner

    def collect(self) -> Iterator[Metric]:
        state = self.runner.state
        counts, reverts = dict(self.runner.counts), dict(self.runner.reverts)
        yield _gauge("enabled", "1 while the speculation autopilot is on.", 1.0 if state.enabled else 0.0)
        mode = GaugeMetricFamily(
            PREFIX + "mode", "The autopilot's mode: 1 for the current one.", labels=["mode"]
        )
        for name in MODES:
            mode.add_metric([name], 1.0 if state.mode == name else 0.0)
        yield mode
        optional = (
            (
                "threshold_requests",
                "Live threshold the autopilot holds (0 = speculate at every size).",
                state.threshold,
            ),
            ("steps", "Steps it pins below the threshold (-1: SGLang's policy chooses).", state.steps),
            (
                "operator_threshold_requests",
                "The operator's threshold it returns to when turned off or reverting.",
                state.operator_threshold,
            ),
            (
                "crossover_requests",
                "Estimated running batch from which decoding without drafting delivers more.",
                state.crossover,
            ),
            (
                "crossover_low_requests",
                "Lower end of the crossover estimate's uncertainty.",
                state.crossover_low,
            ),
            (
                "crossover_high_requests",
                "Upper end of the crossover estimate's uncertainty.",
                state.crossover_high,
            ),
            (
                "expected_gain_ratio",
                "Estimated tokens/s of its setting over the operator's, minus 1, on recent traffic.",
                state.expected_gain,
            ),
            (
                "accept_length_tokens",
                "Accept length its estimate uses for the steps in force.",
                state.accept_length,
            ),
            ("probe_share_ratio", "Share of the last 10 minutes it spent probing.", state.probe_share),
            (
                "probe_share_max_ratio",
                "The most of any 10 minutes it may spend probing.",
                state.probe_share_max,
            ),
            (
                "last_move_timestamp_seconds",
                "When it last changed the live setting, Unix time.",
                state.last_move.time if state.last_move else None,
            ),
        )
        for name, doc, value in optional:
            if value is not None:
                yield _gauge(name, doc, float(value))
        yield _gauge(
            "moves_last_minute", "Changes it made in the last 60 s, probes included.", state.moves_last_minute
        )
        yield _gauge(
            "max_moves_per_minute", "The most changes it may make in any 60 s.", state.max_moves_per_minute
        )
        commands = CounterMetricFamily(
            PREFIX + "commands",
            "Changes of the live setting it applied, by kind (move, probe, probe_end, revert, restore) and failed.",
            labels=["kind"],
        )
        for kind in COMMAND_KINDS:
            commands.add_metric([kind], counts.get(kind, 0))
        yield commands
        back = CounterMetricFamily(
            PREFIX + "reverts",
            "Returns to the operator's setting for safety, by reason (stale telemetry, engine restart, agent stopping).",
            labels=["reason"],
        )
        for reason in ("stale", "engine", "stopping"):
            back.add_metric([reason], reverts.get(reason, 0))
        yield back


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)
