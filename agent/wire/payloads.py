"""What each family of events carries: one typed payload per family (``agent.wire.events`` joins them).

The agent fills these from what its parts report; a console reads attributes, never keys. Fields a
family's events do not all carry are None. Payloads ignore keys they do not know, so an older console
reads a newer agent's events.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent.wire.api import BenchSummary, EngineLastError
from agent.wire.autopilot import AutopilotMode, MoveKind
from agent.wire.bench import BenchProgress
from agent.wire.plans import ActionStatus, PlanMode
from agent.wire.snapshot import Severity, SpecOffReason


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# -- engine (the supervisor) ------------------------------------------------------------------------


class EngineProcess(_Payload):
    """The engine's process: started, ready, crashed, restarting, stopped..."""

    pid: int | None = None
    url: str | None = None
    startup_s: float | None = Field(None, description="engine.ready: seconds from launch to ready")
    exit_code: int | None = Field(None, description="engine.crashed: its exit code, None when it is gone")
    failures: int | None = Field(None, description="Failures in a row so far")
    delay_s: float | None = Field(None, description="engine.restarting: the wait before the next start")
    retry_s: float | None = Field(
        None, description="engine.supervisor_error: the pause before supervising again"
    )
    error: EngineLastError | None = Field(None, description="engine.crashed: the engine log's account of it")


class EngineDrain(_Payload):
    """engine.draining / engine.drain_timeout: the requests a restart or a stop waits for."""

    in_flight: int | None = Field(None, description="Requests running when the drain began")
    running: int | None = Field(None, description="Requests still running when the drain gave up")


class ProfileDiffers(_Payload):
    """engine.profile_differs: a reattached engine runs another profile than the one the agent was given."""

    running: str
    given: str


class RecordUnreadable(_Payload):
    """engine.record_unreadable: the engine record could not be read; it was set aside, and the engine
    it named is looked for (adopted, or named here, never a second one started beside it)."""

    record: str = Field(description="Where the record was (it is kept beside, renamed)")
    problem: str
    pids: list[int] = Field(default_factory=list, description="Engine processes found that it may have named")


class LiveValues(_Payload):
    """The engine's live speculation values by their read-back names (``agent.sglang.live_control``):
    the threshold (0: none) and the pinned step count (-1: not pinned, SGLang's policy chooses)."""

    threshold: int | None = None
    pinned_steps: int | None = None


# -- actions (plan → confirm → apply) -------------------------------------------------------------


class ActionPhase(_Payload):
    """The same fields on every action event, so a console follows one action from plan to end."""

    action_id: str
    request_id: str | None = None
    kind: str = Field(
        "", description="An action kind of the catalogue (agent.wire.actions); empty from an older agent"
    )
    value: int | bool | str | None = None
    mode: PlanMode | None = None
    status: ActionStatus | None = None
    terminal: bool = False
    rejected_field: str | None = None
    change_id: str | None = Field(None, description="The fleet change it belongs to (one id on every host)")
    detail: str = Field(
        "", description="Why it was refused, failed or expired, or what applying it did, in words (no prefix)"
    )


# -- speculation and findings (seen in telemetry) -------------------------------------------------


class SpeculationChange(_Payload):
    """speculation.on/off/steps/threshold: what changed between two snapshots."""

    old: int | None = Field(None, description="steps, threshold: before")
    new: int | None = Field(None, description="steps, threshold: after")
    steps: int | None = Field(None, description="speculation.on: the step count in force")
    running: int | None = Field(None, description="on, off: requests running then")
    reason: SpecOffReason | None = Field(None, description="speculation.off: why")


class FindingChange(_Payload):
    """finding.raised / finding.cleared."""

    code: str
    severity: Severity | None = None


# -- bench ----------------------------------------------------------------------------------------


class BenchRunLine(BenchSummary):
    """bench.started/finished/failed/cancelled: the run's line as ``GET /v1/bench`` lists it."""

    external: bool = Field(False, description="Driven by agent bench straight at the engine (announced)")


class BenchProgressLine(BenchProgress):
    """bench.progress: how far the run is."""

    bench_id: str


# -- the autopilot --------------------------------------------------------------------------------


class AutopilotSetting(_Payload):
    threshold: int | None = None
    steps: int | None = Field(None, description="-1: not pinned (SGLang's policy chooses)")


class AutopilotEstimate(_Payload):
    """What a move was decided on (a probe: which arm and where; a revert: why)."""

    gain: float | None = None
    gain_sd: float | None = None
    unknown_share: float | None = None
    crossover: float | None = None
    crossover_low: float | None = None
    crossover_high: float | None = None
    crossover_note: str | None = None
    context_tokens: float | None = None
    accept_length: float | None = None
    arm: int | None = Field(None, description="A probe's step count")
    batch: int | None = None
    context_bin: int | None = None
    mode: AutopilotMode | None = None
    operator_threshold: int | None = None
    operator_steps: int | None = None
    reason: str | None = None


class AutopilotNotice(_Payload):
    """autopilot.*: its mode and the operator's setting it returns to; a move adds what it set."""

    mode: AutopilotMode | None = None
    operator_threshold: int | None = None
    operator_steps: int | None = None
    reason: str | None = Field(
        None,
        description="autopilot.reverted: stale, engine, stopping; autopilot.held: no_estimate, small_gain, "
        "uncertain, dwell, budget",
    )
    kind: MoveKind | None = None
    ok: bool | None = None
    before: AutopilotSetting | None = None
    after: AutopilotSetting | None = None
    estimate: AutopilotEstimate | None = None
    readback: LiveValues | None = None


# -- the agent itself -----------------------------------------------------------------------------


class AgentNotice(_Payload):
    """agent.started/stopping/gpu_sampler/audit_damaged."""

    pid: int | None = None
    corrupt: int | None = Field(None, description="agent.audit_damaged: torn or corrupt audit lines")


class Reconciled(_Payload):
    """agent.reconciled: the engine's live values against the agent's record at its start."""

    engine: LiveValues | None = Field(None, description="What the engine has; None: it reports none")
    expected: LiveValues = LiveValues()
    differs: bool = False


class Unrecognised(_Payload):
    """agent.unknown_event: an event under a name the wire does not list (or a payload that did not
    fit its family), kept rather than lost: its name and what it carried, as JSON."""

    name: str
    data: dict[str, JsonValue] = Field(default_factory=dict)
    problem: str | None = Field(None, description="Why it is published this way")
