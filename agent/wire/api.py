"""The answers of the agent's HTTP API routes, as typed models (FastAPI's ``response_model``s).

A console reads these models instead of walking dicts with ``.get()`` chains; the JSON each route
sends is the same as before these models existed (they describe it, they do not change it). Models
ignore keys they do not know, so that an older console reads a newer agent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent.wire.actions import NAME_MAX
from agent.wire.plans import PRINTABLE, Change
from agent.wire.snapshot import EngineState, Severity, SpecOffReason


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class VersionInfo(_Wire):
    """``GET /v1/version`` (no token needed)."""

    agent_version: str
    api_version: int
    wire_version: int
    stack_manifest_hash: str | None = Field(
        None, description="sha256 of the installed stack's manifest (none for a torn one)"
    )
    stack_manifest_problem: str | None = Field(
        None, description="Why the stack's manifest is unreadable (torn, damaged, not a file); none when fine"
    )


class PortHolderView(_Wire):
    host: str
    port: int
    pid: int | None = None
    cmdline: list[str] | None = None


class EngineLastError(_Wire):
    """Why the engine's last start failed, from its own log (``agent.engine.failure``)."""

    time: float
    summary: str = Field(description="The exception line, or who holds the port")
    frame: str | None = Field(None, description="The frame that raised")
    lines: list[str] = Field(default_factory=list)
    log: str | None = Field(None, description="The engine log's path")
    port_holder: PortHolderView | None = None


BenchState = Literal["running", "finished", "failed", "cancelled"]


class BenchStarted(_Wire):
    """``POST /v1/bench`` (202)."""

    bench_id: str


class BenchSummary(_Wire):
    bench_id: str
    mode: str | None = None
    state: BenchState | None = None
    url: str | None = None
    baseline_url: str | None = None
    profile: str | None = Field(None, description="The profile the measured engine ran")
    created_at: float | None = None
    finished_at: float | None = None
    recommended_threshold: int | None = None
    error: str | None = None


class SpeculationStatus(_Wire):
    """What ``agent status`` shows of the newest snapshot's speculation (``Snapshot.speculation``)."""

    configured: bool = False
    on: bool | None = None
    steps: int | None = None
    topk: int | None = None
    threshold: int | None = Field(None, description="Live threshold (0: none); None when unavailable")
    threshold_available: bool = False
    pinned_steps: int | None = Field(None, description="-1: not pinned (SGLang's policy chooses)")
    off_reason: SpecOffReason | None = None
    off_detail: str | None = None


class FindingStatus(_Wire):
    """A finding as ``agent status`` lists it (``Snapshot.findings`` has the whole of it)."""

    code: str
    severity: Severity
    title: str
    action: str | None = Field(None, description="What to do about it")
    since: float | None = None


DEMO_STATE_PREFIX = "k25demo-"
"""The name a demo's state directory starts with (``console.demo.stack`` makes it in the temp
directory); ``agent status`` looks there when no agent answers at the default state directory."""


class AgentStatus(_Wire):
    """``GET /v1/status``."""

    profile: str
    profile_path: str
    engine_kind: Literal["sglang", "sim"]
    engine_state: EngineState
    engine_pid: int | None = None
    engine_url: str | None = None
    engine_failures: int = 0
    engine_restarts: int = 0
    engine_startup_s: float | None = None
    engine_last_error: EngineLastError | None = None
    last_seq: int
    agent_pid: int
    agent_version: str
    started_at: float
    tick_interval_s: float
    state_dir: str
    latest_snapshot_at: float | None = Field(None, description="Agent time of the newest snapshot")
    speculation: SpeculationStatus | None = Field(None, description="The newest snapshot's speculation state")
    findings: list[FindingStatus] = Field(default_factory=list, description="The newest snapshot's findings")
    bench: BenchSummary | None = Field(None, description="The running benchmark, else the newest one")
    router_url: str | None = Field(
        None, description="SGLang's router this agent reads (`--router-url`); GET /v1/router answers its view"
    )


class ProfileEntry(_Wire):
    name: str
    path: str
    running: bool
    digest: str | None = Field(
        None, description="Of the file's bytes: what a write replacing it sends in If-Match"
    )
    production: bool = Field(
        False, description="The file says identity.production: replacing it wants its name"
    )
    changed: list[str] = Field(
        default_factory=list,
        description="For the running profile: the keys where what runs differs from this file (live changes, "
        "a restart-only change applied since it was loaded)",
    )


class ProfileList(_Wire):
    """``GET /v1/profiles``."""

    profiles: list[ProfileEntry]


class ProfileIssueView(_Wire):
    file: str
    key: str
    rule: str
    severity: str = "error"


class ProfileIssues(_Wire):
    """The ``detail`` of a 422 from the profile routes: every problem, with its file, key and rule."""

    issues: list[ProfileIssueView] = Field(default_factory=list)


class ProfileRead(_Wire):
    """``GET /v1/profiles/{name}``: the text, the parsed profile (None when it does not parse), and
    what SGLang's rules say about it."""

    name: str
    toml: str
    digest: str | None = Field(
        None, description="Of the file's bytes (also its ETag): a write replacing it sends it in If-Match"
    )
    profile: dict[str, JsonValue] | None = Field(
        None, description="The parsed profile as JSON (agent.profile.Profile); None when it does not parse"
    )
    warnings: list[ProfileIssueView] = Field(default_factory=list)
    issues: list[ProfileIssueView] = Field(default_factory=list)


class RunningProfile(_Wire):
    """``GET /v1/profile``: the profile the engine runs now, live changes included (what Controls
    shows as current and "Save running as" writes under a new name)."""

    name: str
    toml: str
    profile: dict[str, JsonValue] = Field(
        default_factory=dict, description="The running profile as JSON (agent.profile.Profile)"
    )


class ProfileSaved(_Wire):
    """``PUT /v1/profiles/{name}``: the file's new digest (what the next write names in If-Match)."""

    name: str
    saved: bool
    digest: str | None = None
    comments_kept: bool = Field(
        True, description="The text was saved as sent, comments included (false: as the agent writes it)"
    )


class ProfileDeleted(_Wire):
    """``DELETE /v1/profiles/{name}`` (the file is kept among its versions)."""

    name: str
    deleted: bool


class DiffPlan(_Wire):
    mode: Literal["live", "restart", "noop"]
    reasons: list[str] = Field(default_factory=list)


class ProfileDiff(_Wire):
    """``GET /v1/profiles/{name}/diff``: what loading the profile would change, and how."""

    changes: list[Change] = Field(default_factory=list)
    plan: DiffPlan


class SpecShapeView(_Wire):
    steps: int
    topk: int
    draft_tokens: int
    max_draft_tokens: int | None = None


class KvSideView(_Wire):
    """KV use of N requests of context L, speculation on or off (``agent.sglang.kv.KvSide``)."""

    alloc_len_per_decode: int
    reserve_per_decode: int
    lookahead_per_request: int
    tokens_per_request: int
    tokens_held: int
    tokens_reserved: int
    requests_that_fit: int
    row_extra: int
    pool_tokens: int | None = None
    """The pool this side runs in: a server without a drafter gets the draft's share back."""
    fits: bool | None = None


class DrafterCostView(_Wire):
    """What the drafter costs in the KV pool (``agent.sglang.kv.drafter_cost``)."""

    cell_bytes: float | None = None
    cell_bytes_without_draft: float | None = None
    draft_share_of_cell: float | None = None
    draft_weight_bytes: int | None = None
    pool_tokens: int | None = None
    pool_tokens_without_drafter: int | None = None
    tokens_for_draft_kv: int | None = None
    tokens_for_draft_weights: int | None = None


KV_STATES: dict[Literal["on", "off", "baseline"], str] = {
    "on": "speculation on",
    "off": "off (0 steps)",
    "baseline": "no drafter",
}
"""The what-if's three server states, by field, in the words every screen, line and summary uses."""


class KvWhatIf(_Wire):
    """``GET /v1/kv/whatif``."""

    running: int
    context: int
    page_size: int
    pool: int
    pool_source: Literal["given", "profile", "estimate"]
    spec: SpecShapeView | None = None
    zero_step: SpecShapeView | None = None
    """The 0-step state inside the speculative server ("off"); None when it never runs at 0 steps."""
    on: KvSideView | None = None
    """Speculation on; None for a profile without a drafter."""
    off: KvSideView | None = None
    """Off: 0 steps inside the speculative server (still the widest candidate's reserve)."""
    baseline: KvSideView
    """The same server launched without a drafter."""
    drafter: DrafterCostView | None = None
    off_unavailable: str | None = None
    overfull: bool = False
    fit_summary: list[str] = Field(default_factory=list)


class LogLines(_Wire):
    """``GET /v1/logs``: the newest lines of the engine log (matching ``search`` when given), oldest first."""

    lines: list[str] = Field(default_factory=list)


class BenchList(_Wire):
    """``GET /v1/bench``: stored runs, newest first."""

    runs: list[BenchSummary]


class BenchCancelled(_Wire):
    """``POST /v1/bench/{id}/cancel``."""

    cancelled: bool
    state: BenchState | None = Field(None, description="The run's state after the call")
    message: str = ""


class BenchPlan(_Wire):
    """``POST /v1/bench/plan``: what a start with this body would run and how long it should take."""

    mode: str
    arms: list[str]
    levels: list[int]
    steps: int
    expected_s: float
    basis: str = Field(description="Where the estimate comes from, in words")
    drain_wait_s: float = Field(0.0, description="The most it waits first for the engine to drain")
    busy_now: int | None = Field(None, description="Requests running or queued on the engine now")
    at_most_s: float | None = Field(
        None,
        description="With a stopping rule (until, budget_s): the longest it may take; expected_s is then "
        "the first windows' time",
    )


class BenchAnnounce(_Wire):
    """``POST /v1/bench/external``: a run that ``agent bench`` drives straight at the engine says when
    it starts and ends, so every console draws its band (the agent does not run it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bench_id: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    state: BenchState
    mode: Literal["sweep", "compare"]
    url: str | None = Field(None, max_length=500, pattern=PRINTABLE)
    error: str | None = Field(
        None, max_length=2000, pattern=PRINTABLE, description="One line: no control characters or escapes"
    )
    operator: str | None = Field(
        None,
        max_length=NAME_MAX,
        pattern=PRINTABLE,
        description="Who runs it, for the audit (agent bench: this user)",
    )
    pid: int | None = Field(
        None,
        ge=1,
        le=4_194_304,
        description="The agent bench process (on this host): a compare it forces is put back once it is gone",
    )
