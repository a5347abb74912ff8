"""The agent's own Prometheus series: what only the agent knows, read from its state at scrape time.

SGLang exports its own series (``sglang:*``); this page adds what SGLang cannot say: whether
speculation is on and why, the live threshold and steps, the agent's health findings, the engine's
supervision state, the operator actions applied, and the last benchmark's recommendation. Names
follow Prometheus' conventions: the ``k25_`` prefix, the unit in the name, ``_total`` on counters,
one 0/1 series per state of an enum.

How it gets its data, and why this way:

* A custom ``prometheus_client`` collector (:class:`AgentExporter`) builds the families at scrape
  time from the daemon's latest snapshot and the supervisor's state, so a scrape costs the daemon
  nothing between scrapes and never shows a value older than the last tick.
* Counters (speculation switches, actions, crashes) need every item, not just the latest, so
  :class:`ExporterState` listens on the daemon's stream (``StreamHub.add_listener``) and counts as
  items are published. That runs in the event loop; scrapes run in prometheus-client's HTTP thread,
  so the state is read and written under one lock and the snapshot it holds is immutable.
* The last benchmark is read from the bench store (files) in the scrape thread, only after a
  ``bench.finished`` event said there is a new one, never in the event loop.

The autopilot (issue 16) is not here yet. Its series go under ``k25_autopilot_``, from a
:class:`MetricsSource` it provides, registered with :meth:`AgentExporter.add_source` where the daemon
is wired (``agent/api/run.py``). Nothing is exported for it until then.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol, get_args

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

import agent
from agent.bench.store import BenchStore, UnknownBench
from agent.sglang.redact import redact_text
from agent.telemetry.changes import telemetry_events
from agent.wire import ActionEvent, BenchRunEvent, Event, Snapshot
from agent.wire.bench_result import BenchResult
from agent.wire.snapshot import EngineState, SpecOffReason

if TYPE_CHECKING:
    from agent.serve.daemon import Daemon

log = logging.getLogger(__name__)

PREFIX = "k25_"
ENGINE_STATES: tuple[str, ...] = get_args(EngineState)
OFF_REASONS: tuple[str, ...] = get_args(SpecOffReason)


class MetricsSource(Protocol):
    """A part of the agent that exports its own families (the autopilot, issue 16)."""

    def collect(self) -> Iterable[Metric]: ...


class LastBench:
    """The newest finished benchmark that carries a recommendation, as the store has it."""

    def __init__(self, bench_id: str, record: BenchResult) -> None:
        self.bench_id = bench_id
        self.mode = record.mode or ""
        self.threshold = None if record.recommended_threshold is None else float(record.recommended_threshold)
        self.crossover = record.recommendation.crossover if record.recommendation is not None else None
        self.finished_at = record.finished_at


class ExporterState:
    """What the exporter counts from the stream; fed in the event loop, read by scrapes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.snapshot: Snapshot | None = None
        self.switches: Counter[str] = Counter()
        self.applied: Counter[tuple[str, str]] = Counter()
        self.failed: Counter[tuple[str, str]] = Counter()
        self.crashes = 0
        self.finding_severity: dict[str, str] = {}
        """Every finding code seen in this run, with its latest severity: a cleared one reads 0."""
        self.bench_pending: str | None = None
        """A bench id a ``bench.finished`` event announced and no scrape has read yet."""

    def observe(self, item: Snapshot | Event, action_kind: str | None = None) -> None:
        with self.lock:
            if isinstance(item, Snapshot):
                self._observe_snapshot(item)
            else:
                self._observe_event(item, action_kind)

    def _observe_snapshot(self, snap: Snapshot) -> None:
        for event in telemetry_events(self.snapshot, snap):
            if event.name in ("speculation.on", "speculation.off"):
                self.switches[event.name.removeprefix("speculation.")] += 1
        for finding in snap.findings:
            self.finding_severity[finding.code] = finding.severity
        self.snapshot = snap

    def _observe_event(self, event: Event, action_kind: str | None) -> None:
        if isinstance(event, ActionEvent) and event.name in ("action.applied", "action.failed"):
            key = (action_kind or event.data.kind or "unknown", event.data.mode or "unknown")
            (self.applied if event.name == "action.applied" else self.failed)[key] += 1
        elif event.name == "engine.crashed":
            self.crashes += 1
        elif isinstance(event, BenchRunEvent) and event.name == "bench.finished" and event.data.bench_id:
            self.bench_pending = event.data.bench_id


class AgentExporter(Collector):
    """The ``k25_*`` families, built from the daemon at scrape time (see the module docstring)."""

    def __init__(self) -> None:
        self.state = ExporterState()
        self.daemon: Daemon | None = None
        self._sources: list[MetricsSource] = []
        self._bench: LastBench | None = None
        self._bench_loaded = False
        self._bench_lock = threading.Lock()  # two scrapes at once must not both read the store

    def attach(self, daemon: Daemon) -> None:
        """Start counting from ``daemon``'s stream; call before ``daemon.start()`` to miss nothing."""
        self.daemon = daemon
        daemon.hub.add_listener(self._observe)

    def add_source(self, source: MetricsSource) -> None:
        """Export ``source``'s families too (the autopilot's ``k25_autopilot_*``, issue 16)."""
        self._sources.append(source)

    def _observe(self, item: Snapshot | Event) -> None:
        kind = None
        if isinstance(item, ActionEvent) and item.name in ("action.applied", "action.failed") and self.daemon:
            result = self.daemon.actions.get(item.data.action_id)
            kind = result.plan.request.kind if result is not None else None
        self.state.observe(item, kind)

    # ---- scrape ---------------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        """Every family, its label values scrubbed of the agent's secrets (no series carries one)."""
        if self.daemon is None:
            return
        secrets = self.daemon.secrets()
        for family in self._collect():
            family.samples = [
                s._replace(labels={k: redact_text(v, secrets) for k, v in s.labels.items()})
                for s in family.samples
            ]
            yield family

    def _collect(self) -> Iterator[Metric]:
        daemon = self.daemon
        if daemon is None:
            return
        with self.state.lock:
            st = self.state
            snap = st.snapshot
            switches = dict(st.switches)
            applied, failed = dict(st.applied), dict(st.failed)
            crashes = st.crashes
            severities = dict(st.finding_severity)
            pending, st.bench_pending = st.bench_pending, None
        yield from self._agent(daemon, snap)
        yield from self._engine(daemon, crashes)
        if snap is not None:
            yield from _speculation(snap, switches)
            yield from _findings(snap, severities)
        yield from _actions(applied, failed)
        yield from self._last_bench(daemon, pending)
        for source in self._sources:
            try:
                families = list(source.collect())
            except Exception:  # one broken source must not take the whole page down
                log.exception("metrics source %r failed", source)
                continue
            yield from families

    def _agent(self, daemon: Daemon, snap: Snapshot | None) -> Iterator[Metric]:
        profile = daemon.profile.identity
        yield InfoMetricFamily(
            PREFIX + "agent",
            "The agent: its version, the profile it runs and the engine kind.",
            value={
                "version": agent.__version__,
                "profile": profile.name,
                "production": "true" if profile.production else "false",
                "engine_kind": daemon.supervisor.kind,
            },
        )
        yield GaugeMetricFamily(
            PREFIX + "agent_start_time_seconds", "When the agent started, Unix time.", value=daemon.started_at
        )
        yield GaugeMetricFamily(
            PREFIX + "telemetry_tick_interval_seconds",
            "How often the agent samples the engine and the GPUs.",
            value=daemon.tick_interval_s,
        )
        if snap is not None:
            yield GaugeMetricFamily(
                PREFIX + "telemetry_last_snapshot_timestamp_seconds",
                "Unix time of the latest telemetry snapshot (alert when it falls behind).",
                value=snap.time,
            )

    def _engine(self, daemon: Daemon, crashes: int) -> Iterator[Metric]:
        sup = daemon.supervisor
        state = GaugeMetricFamily(
            PREFIX + "engine_state",
            "The engine's supervision state: 1 for the current one.",
            labels=["state"],
        )
        for name in ENGINE_STATES:
            state.add_metric([name], 1.0 if sup.state == name else 0.0)
        yield state
        yield CounterMetricFamily(
            PREFIX + "engine_restarts",
            "Engine restarts by this agent run: after a crash or asked for (a restart plan, the API).",
            value=sup.restarts,
        )
        yield CounterMetricFamily(
            PREFIX + "engine_crashes",
            "Times the engine stopped unexpectedly in this agent run.",
            value=crashes,
        )
        yield GaugeMetricFamily(
            PREFIX + "engine_consecutive_failures",
            "Failed starts or crashes in a row; the agent gives up at the crash-loop limit.",
            value=sup.failures,
        )
        if sup.last_startup_s is not None:
            yield GaugeMetricFamily(
                PREFIX + "engine_startup_duration_seconds",
                "How long the engine took from launch to ready, last time.",
                value=sup.last_startup_s,
            )

    def _last_bench(self, daemon: Daemon, pending: str | None) -> Iterator[Metric]:
        with self._bench_lock:
            if pending is not None or not self._bench_loaded:
                self._bench = _read_last_bench(daemon, pending) or self._bench
                self._bench_loaded = True
            bench = self._bench
        if bench is None:
            return
        yield InfoMetricFamily(
            PREFIX + "bench_last",
            "The newest finished benchmark with a recommendation.",
            value={"bench_id": bench.bench_id, "mode": bench.mode},
        )
        if bench.finished_at is not None:
            yield _gauge(
                "bench_last_finished_timestamp_seconds", "When it finished, Unix time.", bench.finished_at
            )
        if bench.threshold is not None:
            yield _gauge(
                "bench_recommended_threshold_requests",
                "Its recommended speculation threshold (running requests; 0 = speculate at every size).",
                bench.threshold,
            )
        if bench.crossover is not None:
            yield _gauge(
                "bench_crossover_requests",
                "Its measured crossover: the concurrency from which speculation off beats on.",
                bench.crossover,
            )


def _read_last_bench(daemon: Daemon, bench_id: str | None) -> LastBench | None:
    store = BenchStore(daemon.paths.root)
    try:
        if bench_id is None:
            bench_id = next(
                (
                    run.bench_id
                    for run in store.list()
                    if run.state == "finished" and run.recommended_threshold is not None
                ),
                None,
            )
            if bench_id is None:
                return None
        record = store.get(bench_id)
    except (OSError, ValueError, UnknownBench):
        return None
    if record.recommended_threshold is None:
        return None
    return LastBench(bench_id, record)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)


def _bool(value: bool) -> float:
    return 1.0 if value else 0.0


def _speculation(snap: Snapshot, switches: dict[str, int]) -> Iterator[Metric]:
    spec = snap.speculation
    yield _gauge(
        "speculation_configured", "1 when the deployment runs a draft model.", _bool(spec.configured)
    )
    if spec.on is not None:
        yield _gauge(
            "speculation_on", "1 while the engine speculates, 0 while it decodes plainly.", _bool(spec.on)
        )
    reason = GaugeMetricFamily(
        PREFIX + "speculation_off_reason",
        "Why speculation is off (or its state unknown): 1 for the current reason, all 0 while on.",
        labels=["reason"],
    )
    for name in OFF_REASONS:
        reason.add_metric([name], _bool(spec.off_reason == name))
    yield reason
    counted = CounterMetricFamily(
        PREFIX + "speculation_switches",
        "Speculation switched on or off, seen between two snapshots of this agent run.",
        labels=["to"],
    )
    for to in ("on", "off"):
        counted.add_metric([to], switches.get(to, 0))
    yield counted
    yield _gauge(
        "speculation_threshold_available",
        "1 when the live threshold can be read and moved (patched SGLang, adaptive mode).",
        _bool(spec.threshold_available),
    )
    optional = (
        (
            "speculation_threshold_requests",
            "The live threshold: running requests at or above which the engine does not speculate "
            "(0 = speculate at every batch size).",
            spec.threshold,
        ),
        ("speculation_steps", "Speculative steps in force now (0 while not speculating).", spec.steps),
        (
            "speculation_steps_pinned",
            "Steps pinned by the operator; -1 while SGLang's adaptive policy chooses.",
            spec.pinned_steps,
        ),
        ("speculation_topk", "Draft tree width (topk).", spec.topk),
        ("speculation_draft_tokens", "Draft tokens verified per step.", spec.draft_tokens),
        (
            "speculation_accept_length_tokens",
            "Tokens kept per verify step, the bonus token included (window mean).",
            spec.accept_length,
        ),
        ("speculation_accept_ratio", "Share of drafted tokens accepted (window).", spec.accept_rate),
        (
            "speculation_drafting_seconds_per_minute",
            "Seconds of the last minute the engine drafted with requests running.",
            spec.drafting_s_per_min,
        ),
        (
            "speculation_rejected_draft_ratio",
            "Share of the drafted tokens the target rejected over the last minute (wasted drafts).",
            spec.rejected_draft_share,
        ),
        (
            "speculation_wasted_draft_seconds_per_minute",
            "Seconds of the last minute's decoding spent on rejected drafts (an estimate: each round's "
            "time shared over the positions it verified).",
            spec.wasted_draft_s_per_min,
        ),
    )
    for name, doc, value in optional:
        if value is not None:
            yield _gauge(name, doc, float(value))


def _findings(snap: Snapshot, severities: dict[str, str]) -> Iterator[Metric]:
    active = {f.code for f in snap.findings}
    family = GaugeMetricFamily(
        PREFIX + "finding_active",
        "1 while a health finding holds; 0 for one seen earlier in this agent run that has cleared.",
        labels=["code", "severity"],
    )
    for code in sorted(severities):
        family.add_metric([code, severities[code]], _bool(code in active))
    yield family


def _actions(applied: dict[tuple[str, str], int], failed: dict[tuple[str, str], int]) -> Iterator[Metric]:
    for name, doc, counts in (
        ("actions_applied", "Operator actions applied, by kind and mode (live, restart, noop).", applied),
        ("actions_failed", "Operator actions that failed when applied, by kind and mode.", failed),
    ):
        family = CounterMetricFamily(PREFIX + name, doc, labels=["kind", "mode"])
        for (kind, mode), count in sorted(counts.items()):
            family.add_metric([kind, mode], count)
        yield family
