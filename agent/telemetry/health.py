"""Health over time: the findings that need more than one tick, and since when every finding holds.

``findings.py``'s rules judge one tick. An operator at 3 a.m. also needs to hear that the queue keeps
growing, that time to first token is over the target, that the KV pool is nearly full, that nothing
has arrived for minutes although the engine is ready, that the engine restarted or crash-loops, and
that the agent has stopped hearing from a ready engine. ``HealthWatch`` keeps the little history
these need, from the snapshots themselves (plus the supervisor's restart counters, which a tick
cannot see), adds its findings to each snapshot and stamps every finding with the time it began to
hold. The thresholds are the profile's ``[health]`` section.

Each rule is a pure function of a ``Moment`` (this tick plus the watch's history), so it can be
tested by building one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from agent.profile.health import Health
from agent.sglang import paths
from agent.telemetry.acceptance import AcceptanceWatch
from agent.telemetry.against_bench import threshold_against_bench
from agent.telemetry.bench_load import BenchLoad, caused_by_bench
from agent.telemetry.moment import Moment
from agent.telemetry.reach import threshold_unreachable
from agent.wire import Finding, Snapshot
from agent.wire.bench_evidence import BenchEvidence

UP_STATES: Final = frozenset({"ready", "draining"})
"""States in which the engine is expected to answer and to serve."""
SEVERITY_ORDER: Final = {"critical": 0, "warning": 1, "info": 2}
CLEAR_AFTER_S: Final = 10.0
"""Hysteresis: a finding is cleared only once its condition has been absent this long. A batch that
hovers at max_running_requests made "runs its maximum of 256" rise and clear every few seconds; an
alert manager's ``keep_firing_for`` does the same."""


@dataclass(frozen=True)
class EngineCounts:
    """The supervisor's counters: ``restarts`` (every start after the first), ``failures`` (crashes
    and failed starts in a row)."""

    restarts: int = 0
    failures: int = 0


def _ago(now: float, then: float) -> str:
    seconds = max(0.0, now - then)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _kv_pct(snap: Snapshot) -> float | None:
    kv = snap.kv
    if kv.used_tokens is None or not kv.pool_tokens:
        return None
    return 100.0 * kv.used_tokens / kv.pool_tokens


def queue_growing(m: Moment) -> Finding | None:
    if not m.queue_window or m.queue_nonempty_since is None:
        return None
    now, queued = m.queue_window[-1]
    start_time, start_queued = m.queue_window[0]
    window = m.limits.queue_window_s - 1e-6
    covered = now - start_time >= window and now - m.queue_nonempty_since >= window
    if not covered or queued < m.limits.queue_min_requests or queued < start_queued:
        return None
    load = m.snap.load
    grew = queued - start_queued
    kv = _kv_pct(m.snap)
    at_cap = (
        load.running is not None
        and load.max_running_requests is not None
        and (load.running >= load.max_running_requests)
    )
    if at_cap:
        why = f"the server runs its maximum of {load.max_running_requests} requests"
        fix = (
            "If the KV pool has room, raise server.max_running_requests (restart); otherwise the load "
            "is above what this deployment serves: add capacity or shed load at the client."
        )
    elif kv is not None and kv >= m.limits.kv_used_max_pct - 10:
        why = f"the KV pool is {kv:.0f} % used, so SGLang admits no more ({load.running} running)"
        fix = (
            "Free KV: lower the speculation threshold (drafting holds look-ahead slots per request), "
            "use an fp8 KV cache or a higher mem_fraction_static (restart), or shed load at the client."
        )
    else:
        why = f"{load.running} requests run and the rest wait"
        fix = "Compare the arrival rate with what the server finishes; shed load or add capacity."
    return Finding(
        code="queue_growing",
        severity="warning",
        title=f"Queue growing: {queued} requests wait ({grew:+d} in {m.limits.queue_window_s:.0f} s)",
        explanation=(
            f"For {_ago(now, m.queue_nonempty_since)} the waiting queue has not emptied and over the "
            f"last {m.limits.queue_window_s:.0f} s it did not shrink: requests arrive faster than the "
            f"server finishes them. {why[0].upper() + why[1:]}. Every waiting request's time to first "
            "token grows with the queue."
        ),
        action=fix,
        value=float(queued),
        limit=float(m.limits.queue_min_requests),
        unit="requests",
        since=m.queue_nonempty_since,
    )


def ttft_over_target(m: Moment) -> Finding | None:
    lat = m.snap.latency
    target = m.limits.ttft_p99_target_s
    if lat.ttft_p99_s is None or lat.ttft_p99_s <= target:
        return None
    p50 = f" (p50 {lat.ttft_p50_s:.1f} s)" if lat.ttft_p50_s is not None else ""
    queued = m.snap.load.queued or 0
    if queued:
        cause = (
            f"{queued} requests wait in the queue, and a waiting request's clock runs: the server is "
            "over capacity."
        )
        fix = (
            "Shed load or add capacity; if the KV pool is the limit, a lower speculation threshold "
            "frees look-ahead slots. Raise health.ttft_p99_target_s if the target is wrong."
        )
    else:
        cause = "Nothing waits in the queue, so the time goes to prefill: long prompts, or many at once."
        fix = (
            "Check prompt lengths; a smaller server.chunked_prefill_size interleaves prefill with decode "
            "(restart). Raise health.ttft_p99_target_s if the target is wrong."
        )
    return Finding(
        code="ttft_over_target",
        severity="warning",
        title=f"Time to first token p99 {lat.ttft_p99_s:.1f} s, over the target of {target:g} s",
        explanation=f"Over the telemetry window 1 request in 100 waited longer than that for its first token{p50}. {cause}",
        action=fix,
        value=lat.ttft_p99_s,
        limit=target,
        unit="s",
    )


def kv_nearly_full(m: Moment) -> Finding | None:
    pct = _kv_pct(m.snap)
    limit = m.limits.kv_used_max_pct
    if pct is None or pct < limit:
        return None
    kv = m.snap.kv
    return Finding(
        code="kv_nearly_full",
        severity="critical" if pct >= 99.0 else "warning",
        title=f"KV cache {pct:.0f} % used ({kv.used_tokens:,} of {kv.pool_tokens:,} tokens)",
        explanation=(
            f"The KV pool is at or above {limit:g} %. SGLang admits a request only while its whole budget "
            "fits, so new requests wait; when a decoding request cannot grow, SGLang retracts running "
            "requests and recomputes their tokens later."
        ),
        action=(
            "Lower the speculation threshold (each speculating request holds look-ahead slots), lower "
            "server.max_running_requests, or give the cache more room (kv_cache_dtype fp8, "
            "mem_fraction_static; restart)."
        ),
        value=round(pct, 1),
        limit=limit,
        unit="%",
    )


def no_traffic(m: Moment) -> Finding | None:
    if m.idle_since is None or m.limits.idle_after_s <= 0:
        return None
    now = m.snap.time
    if now - m.idle_since < m.limits.idle_after_s:
        return None
    return Finding(
        code="no_traffic",
        severity="warning",
        title=f"No traffic for {_ago(now, m.idle_since)} while the engine is ready",
        explanation=(
            "No request has been running or waiting on the engine for that long. On a server that "
            "should be serving, the usual cause is outside it: the load balancer or router stopped "
            "sending here, a client lost its address (a restarted engine may listen on another port), "
            "or the clients are down."
        ),
        action=(
            f"Send one request to the engine from the host (curl its {paths.HEALTH} and {paths.MODELS}); check the "
            "router's view of this backend and the clients' logs. Set health.idle_after_s to 0 on a "
            "server that is idle on purpose."
        ),
        value=round(now - m.idle_since, 1),
        limit=m.limits.idle_after_s,
        unit="s",
        since=m.idle_since,
    )


def engine_restarts(m: Moment) -> Finding | None:
    now = m.snap.time
    window = m.limits.restart_window_s
    if m.snap.engine_state == "crash_loop" or len(m.crashes) >= m.limits.crash_loop_crashes:
        stopped = m.snap.engine_state == "crash_loop"
        return Finding(
            code="engine_crash_loop",
            severity="critical",
            title=(
                "The engine is crash-looping: the agent stopped restarting it"
                if stopped
                else f"The engine crashed {len(m.crashes)} times in {_ago(now, m.crashes[0])}"
            ),
            explanation=(
                f"{len(m.crashes)} crash(es) or failed start(s) within {window / 60:.0f} min. An engine that "
                "dies again after every start is usually refused by its own launch: bad flags, out of "
                "GPU memory at load, a missing model file, a port held by another process."
            ),
            action=(
                "Read the engine log (Logs screen, or the agent's engine.log) from the last start on; "
                "fix the profile, then start the engine again."
            ),
            value=float(len(m.crashes)),
            limit=float(m.limits.crash_loop_crashes),
            unit="crashes",
            since=m.crashes[0] if m.crashes else None,
        )
    if not m.restarts:
        return None
    last = m.restarts[-1]
    crashed = any(c >= last - 30.0 for c in m.crashes)
    how = "after a crash" if crashed else "as planned (an operator's restart or a profile change)"
    return Finding(
        code="engine_restarted",
        severity="warning" if crashed else "info",
        title=f"The engine restarted {_ago(now, last)} ago" + (" after a crash" if crashed else ""),
        explanation=(
            f"The engine was started again {how}; {len(m.restarts)} restart(s) in the last "
            f"{window / 60:.0f} min. Clients holding its old address (a restarted simulated engine listens "
            "on a new port) must find it again; the rates and latencies start from zero."
        ),
        action=(
            "Check that traffic came back (throughput, running). After a crash, read the engine log "
            "around the crash for the cause."
            if crashed
            else "Check that traffic came back (throughput, running)."
        ),
        value=float(len(m.restarts)),
        unit="restarts",
        since=last,
    )


def telemetry_stale(m: Moment) -> Finding | None:
    if m.unread_since is None:
        return None
    now = m.snap.time
    if now - m.unread_since < m.limits.stale_after_s:
        return None
    cause = f" The last attempt: {m.scrape_error}." if m.scrape_error else ""
    return Finding(
        code="telemetry_stale",
        severity="warning",
        title=f"No telemetry from the engine for {_ago(now, m.unread_since)}",
        explanation=(
            f"The engine is {m.snap.engine_state}, but neither {paths.METRICS} nor {paths.SERVER_INFO} has answered "
            f"since then, so every number on screen is old or unknown.{cause} A busy scheduler answers "
            "late; a hung one not at all."
        ),
        action=(
            f"curl the engine's {paths.HEALTH} and {paths.METRICS} from the host; read the engine log. If the engine "
            "hangs, restart it (Controls, or agent stop --engine-too and start again)."
        ),
        value=round(now - m.unread_since, 1),
        limit=m.limits.stale_after_s,
        unit="s",
        since=m.unread_since,
    )


RULES: Final[tuple[Callable[[Moment], Finding | None], ...]] = (
    engine_restarts,
    telemetry_stale,
    queue_growing,
    ttft_over_target,
    kv_nearly_full,
    no_traffic,
    threshold_unreachable,
    threshold_against_bench,
)


@dataclass
class HealthWatch:
    """Feed it every snapshot in order (``observe``); it returns the snapshot with the findings of
    ``findings.py`` and its own, each stamped with ``since``, most severe first."""

    _queue: deque[tuple[float, int]] = field(default_factory=deque)
    _queue_nonempty_since: float | None = None
    _idle_since: float | None = None
    _unread_since: float | None = None
    _restarts: deque[float] = field(default_factory=deque)
    _crashes: deque[float] = field(default_factory=deque)
    _counts: EngineCounts | None = None
    _pid: int | None = None
    _first_seen: dict[str, float] = field(default_factory=dict)
    _held: dict[str, tuple[Finding, float]] = field(default_factory=dict)
    """Each raised finding as last seen, and when: kept up to ``clear_after_s`` once it stops holding."""
    clear_after_s: float = CLEAR_AFTER_S
    traffic_window_s: float = 60.0
    """The longest window the telemetry judges traffic over (the collector's ``Windows``): a
    benchmark's requests weigh on the load findings this long after it ends."""
    _bench: tuple[str, float] | None = None
    """The agent's last benchmark seen running on the engine, and the last tick it ran."""
    _acceptance: AcceptanceWatch = field(default_factory=AcceptanceWatch)
    """Collapse, loop and wasted drafts (``acceptance``): the agent's benchmark is not judged."""

    def observe(
        self,
        snap: Snapshot,
        limits: Health,
        counts: EngineCounts | None = None,
        scrape_error: str | None = None,
        bench: str | None = None,
        evidence: BenchEvidence | None = None,
    ) -> Snapshot:
        """``bench``: the id of the agent's own benchmark running on the engine at this tick, if any
        (its load findings say that it caused them: ``bench_load``); ``evidence``: the newest finished
        bench on this engine (``against_bench``), judged only while none runs."""
        now = snap.time
        self._engine(snap, counts, limits)
        up = snap.engine_state in UP_STATES
        read = snap.metrics_source != "none"
        self._unread_since = None if (read or not up) else (self._unread_since or now)
        queued, running = snap.load.queued, snap.load.running
        if not (up and read) or queued is None:
            self._queue.clear()
            self._queue_nonempty_since = None
        else:
            self._queue.append((now, queued))
            while len(self._queue) > 1 and now - self._queue[1][0] >= limits.queue_window_s:
                self._queue.popleft()
            self._queue_nonempty_since = (self._queue_nonempty_since or now) if queued > 0 else None
        idle = snap.engine_state == "ready" and read and running == 0 and queued == 0
        self._idle_since = (self._idle_since or now) if idle else None
        moment = Moment(
            snap=snap,
            limits=limits,
            queue_window=tuple(self._queue) if self._queue_nonempty_since is not None else (),
            queue_nonempty_since=self._queue_nonempty_since,
            idle_since=self._idle_since,
            unread_since=self._unread_since,
            scrape_error=scrape_error,
            restarts=tuple(self._restarts),
            crashes=tuple(self._crashes),
            evidence=evidence if bench is None else None,
        )
        found = list(snap.findings)
        found.extend(f for f in (rule(moment) for rule in RULES) if f is not None)
        load = self._bench_load(bench, now, limits)
        found.extend(self._acceptance.observe(snap, limits, judged=load is None))
        if load is not None:
            found = [caused_by_bench(f, load) for f in found]
        stamped = self._stamp(found, now)
        stamped.sort(key=lambda f: SEVERITY_ORDER[f.severity])
        return snap.model_copy(update={"findings": stamped})

    def _bench_load(self, bench: str | None, now: float, limits: Health) -> BenchLoad | None:
        """The benchmark whose requests the windows still hold at ``now``, if any."""
        if bench is not None:
            self._bench = (bench, now)
        if self._bench is None:
            return None
        bench_id, last_ran = self._bench
        clears_s = max(self.traffic_window_s, limits.queue_window_s)
        if bench is None and now - last_ran > clears_s:
            self._bench = None
            return None
        return BenchLoad(bench_id, running=bench is not None, clears_s=clears_s)

    def _engine(self, snap: Snapshot, counts: EngineCounts | None, limits: Health) -> None:
        """Restarts and crashes, from the supervisor's counters (a tick may miss the short states)."""
        now = snap.time
        if counts is not None:
            if self._counts is not None:
                if counts.restarts > self._counts.restarts:
                    self._restarts.append(now)
                if counts.failures > self._counts.failures:
                    self._crashes.append(now)
            self._counts = counts
        elif self._pid is not None and snap.engine_pid is not None and snap.engine_pid != self._pid:
            self._restarts.append(now)  # no counters given: a new engine pid is a restart
        if snap.engine_pid is not None:
            if self._pid is not None and snap.engine_pid != self._pid:
                self._queue.clear()  # the old process's queue says nothing about the new one
                self._acceptance.clear()
                self._queue_nonempty_since = None
            self._pid = snap.engine_pid
        for times in (self._restarts, self._crashes):
            while times and now - times[0] > limits.restart_window_s:
                times.popleft()
        if counts is not None and counts.failures == 0 and snap.engine_state == "ready":
            self._crashes.clear()  # a start that held (the supervisor reset its count) ends the loop

    def _stamp(self, found: list[Finding], now: float) -> list[Finding]:
        fresh = {f.code for f in found}
        for f in found:
            self._held[f.code] = (f, now)
        for code, (finding, at) in list(self._held.items()):
            if code in fresh:
                continue
            if now - at < self.clear_after_s:
                found.append(finding)  # absent for less than the hysteresis: held as last seen
            else:
                del self._held[code]
        seen = {f.code for f in found}
        for code in list(self._first_seen):
            if code not in seen:
                del self._first_seen[code]
        out = []
        for f in found:
            first = self._first_seen.setdefault(f.code, f.since if f.since is not None else now)
            out.append(f if f.since is not None else f.model_copy(update={"since": first}))
        return out
