"""The operator profile: everything needed to launch and tune one deployment, as a pydantic model.

A profile is a TOML file. This module knows its structure and the rules that need no knowledge of
SGLang (types, ranges, unknown keys, safe paths). Rules that come from SGLang itself (which
speculation settings 0.5.23 accepts, what adaptive mode supports) live in ``agent.sglang`` and are
applied on top by ``agent.sglang.rules.check_profile``; the console imports this module and never
that one.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from agent.profile.health import Health
from agent.profile.section import KeyedValueError, _Section

__all__ = ["Health", "KeyedValueError"]

SCHEMA_VERSION: Literal[1] = 1

_SAFE_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*(=.*)?$")


def _check_path(value: str, what: str) -> str:
    """Paths reach argv and the filesystem; refuse the shapes that are never intended."""
    if "\x00" in value or "\n" in value:
        raise ValueError(f"{what} must not contain NUL or newline characters")
    parts = value.replace("\\", "/").split("/")
    if ".." in parts:
        raise ValueError(f"{what} must not contain '..' components")
    return value


class Identity(_Section):
    name: Annotated[str, Field(description="Short name, shown in the console's header")]
    description: str = ""
    production: bool = Field(False, description="A production host is drawn in a distinct colour")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _SAFE_NAME.match(v):
            raise ValueError("must be 1-64 characters of letters, digits, '.', '_' or '-'")
        return v


class Host(_Section):
    destination: str = Field("", description="SSH destination: user@host or a Host from ~/.ssh/config")
    port: int | None = Field(None, ge=1, le=65535)
    identity_file: str | None = None
    jump_host: str | None = None

    @field_validator("destination", "jump_host")
    @classmethod
    def _no_option_injection(cls, v: str | None) -> str | None:
        if v and (v.startswith("-") or any(c.isspace() for c in v)):
            raise ValueError("must not start with '-' or contain whitespace")
        return v

    @field_validator("identity_file")
    @classmethod
    def _identity(cls, v: str | None) -> str | None:
        return None if v is None else _check_path(v, "identity_file")


class ExpectedGpus(_Section):
    count: int = Field(8, ge=1, le=64)
    compute_capability: str = Field("12.0", pattern=r"^\d{1,2}\.\d$")
    min_driver: str = Field("580.0", pattern=r"^\d+(\.\d+){0,2}$")
    name_contains: str | None = Field(None, description="e.g. 'RTX PRO 6000'")


class Stack(_Section):
    sglang_version: str = Field("0.5.23", pattern=r"^\d+\.\d+\.\d+(\.post\d+)?$")
    python: str = Field("3.12", pattern=r"^3\.\d{1,2}$")
    venv: str = "~/.local/share/k25console/stack"
    gpus: ExpectedGpus = ExpectedGpus()

    @field_validator("venv")
    @classmethod
    def _venv(cls, v: str) -> str:
        return _check_path(v, "venv")


class Model(_Section):
    path: str = Field(description="Target model directory (or hub id) given to --model-path")
    draft_path: str | None = Field(None, description="EAGLE-3 draft model directory")
    trust_remote_code: bool = False
    served_name: str | None = None
    context_length: int | None = Field(None, ge=256, le=4_194_304)
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    language_model_only: bool = False

    @field_validator("path", "draft_path")
    @classmethod
    def _paths(cls, v: str | None) -> str | None:
        if v is None:
            return None
        if not v or v.startswith("-"):
            raise ValueError("must be a non-empty path that does not start with '-'")
        return _check_path(v, "path")


KvCacheDtype = Literal["auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16"]


class Server(_Section):
    tp_size: int = Field(8, ge=1, le=64)
    page_size: int = Field(1, ge=1, le=1024)
    mem_fraction_static: float | None = Field(None, gt=0.0, lt=1.0)
    max_running_requests: int | None = Field(None, ge=1, le=4096)
    cuda_graph_max_bs: int | None = Field(
        None, ge=1, le=4096, description="Rendered as --cuda-graph-max-bs-decode (0.5.23's name)"
    )
    max_total_tokens: int | None = Field(
        None, ge=1, description="Pool size in tokens; the simulated engine uses it as max_total_num_tokens"
    )
    chunked_prefill_size: int | None = Field(None, ge=1)
    kv_cache_dtype: KvCacheDtype = "auto"
    attention_backend: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(30000, ge=1, le=65535)
    enable_metrics: bool = True
    api_key_file: str | None = Field(None, description="File holding the API key; never the key itself")
    admin_api_key_file: str | None = None
    extra_flags: list[str] = Field(default_factory=list, description="Extra SGLang flags, argv items")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment for the server; its values (but numbers and booleans) never leave the "
        "agent, and a secret belongs in env_files",
    )
    env_files: dict[str, str] = Field(
        default_factory=dict,
        description='Environment read from files when the engine starts (HF_TOKEN = "/path/to/file", the '
        "file 0600): the value is never in the profile, an answer, a log or argv",
    )

    @field_validator("host")
    @classmethod
    def _loopback_default(cls, v: str) -> str:
        if not v or any(c.isspace() for c in v) or v.startswith("-"):
            raise ValueError("must be an address without whitespace")
        return v

    @field_validator("api_key_file", "admin_api_key_file")
    @classmethod
    def _key_files(cls, v: str | None) -> str | None:
        return None if v is None else _check_path(v, "key file")

    @field_validator("extra_flags")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        for item in v:
            if "\x00" in item or "\n" in item:
                raise ValueError("items must not contain NUL or newline characters")
        if v and not _FLAG.match(v[0]):
            raise ValueError(f"must start with a flag such as '--foo', not {v[0]!r}")
        return v

    @field_validator("env_files")
    @classmethod
    def _env_files(cls, v: dict[str, str]) -> dict[str, str]:
        for name, path in v.items():
            if not _SAFE_ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name (A-Z, 0-9, _)")
            if not path:
                raise ValueError(f"{name}: the path of the file that holds its value is needed")
            _check_path(path, f"the file of {name}")
        return v

    @model_validator(mode="after")
    def _env_once(self) -> Server:
        both = sorted(set(self.env) & set(self.env_files))
        if both:
            raise KeyedValueError("env_files", f"{', '.join(both)} set in both env and env_files; keep one")
        return self

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not _SAFE_ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name (A-Z, 0-9, _)")
            if "\x00" in value:
                raise ValueError(f"value of {name} must not contain NUL")
        return v


SpecAlgorithm = Literal["EAGLE3", "none"]
ZeroStepPath = Literal["plain", "verify"]


class Autopilot(_Section):
    """``[speculation.autopilot]``: the agent keeps the live threshold, and the step count below it,
    where it measures the crossover (``agent.control.autopilot``). Off unless enabled here or by an
    operator action; turning it off returns to the operator's threshold in one step."""

    enabled: bool = False
    threshold_min: int = Field(
        1, ge=1, le=4096, description="Lowest live threshold it may set (1 = never speculate)"
    )
    threshold_max: int | None = Field(
        None,
        ge=2,
        le=4096,
        description="Highest live threshold it may set; unset: it may remove the threshold (speculate at "
        "every batch size) when speculation wins at every batch it sees",
    )
    steps: list[int] = Field(
        default_factory=list,
        description="Step counts it may pin below the threshold, among speculation.live_steps; empty: all",
    )
    max_moves_per_minute: int = Field(
        4, ge=1, le=30, description="Most changes it makes to the engine in any 60 s, probes included"
    )
    probe_seconds: float = Field(
        10.0, ge=2.0, le=120.0, description="How long one probe of the side it lacks data for lasts"
    )
    probe_share: float = Field(
        0.05, ge=0.0, le=0.25, description="Most of any 10 minutes it may spend probing (0 = never probe)"
    )
    min_gain: float = Field(
        0.01, ge=0.0, le=0.5, description="Predicted throughput gain a move must bring (hysteresis)"
    )
    stale_after_s: float = Field(
        10.0, ge=1.0, le=600.0, description="No fresh telemetry this long: back to the operator's setting"
    )

    @field_validator("steps")
    @classmethod
    def _steps(cls, v: list[int]) -> list[int]:
        if any(s < 1 or s > 16 for s in v):
            raise ValueError("every step count must be between 1 and 16")
        if len(set(v)) != len(v):
            raise ValueError("step counts must not repeat")
        return sorted(v)

    @model_validator(mode="after")
    def _bounds(self) -> Autopilot:
        if self.threshold_max is not None and self.threshold_max < self.threshold_min:
            raise KeyedValueError(
                "threshold_max",
                f"must be at least threshold_min ({self.threshold_min}), got {self.threshold_max}",
            )
        return self


class Speculation(_Section):
    algorithm: SpecAlgorithm = "EAGLE3"
    num_steps: int | None = Field(None, ge=1, le=16)
    eagle_topk: int | None = Field(None, ge=1, le=16)
    num_draft_tokens: int | None = Field(None, ge=2, le=256)
    adaptive: bool = False
    threshold: int | None = Field(
        None, ge=1, le=4096, description="Running batch size at or above which the server does not speculate"
    )
    live_steps: list[int] = Field(
        default_factory=list, description="Step counts the operator may choose live (built at start-up)"
    )
    ema_alpha: float | None = Field(None, gt=0.0, le=1.0)
    update_interval: int | None = Field(None, ge=1)
    warmup_batches: int | None = Field(None, ge=0)
    skip_zero_step_draft_extend: bool = Field(
        False,
        description="At 0 steps, skip the draft model's extend pass (SGLANG_SPEC_SKIP_ZERO_STEP_DRAFT_EXTEND): "
        "a cheaper 'off', but the draft starts cold when the server steps back up",
    )
    zero_step: ZeroStepPath = Field(
        "plain",
        description="How a 0-step round runs (patch 03): 'plain' = the target's own decode, the draft "
        "caught up when speculation resumes; 'verify' = SGLang 0.5.23's one-token verify",
    )
    autopilot: Autopilot = Autopilot()

    @field_validator("live_steps")
    @classmethod
    def _live_steps(cls, v: list[int]) -> list[int]:
        if any(s < 1 or s > 16 for s in v):
            raise ValueError("every live step must be between 1 and 16")
        if len(set(v)) != len(v):
            raise ValueError("live steps must not repeat")
        return sorted(v)

    @model_validator(mode="after")
    def _consistent(self) -> Speculation:
        if self.algorithm == "none":
            if self.autopilot.enabled:
                raise KeyedValueError(
                    "autopilot.enabled", "the autopilot needs speculation (algorithm EAGLE3)"
                )
            return self
        # SGLang 0.5.23 asserts when topk or draft tokens come without steps, and leaves topk unset
        # when steps come alone; a profile therefore states all three.
        for key in ("num_steps", "eagle_topk", "num_draft_tokens"):
            if getattr(self, key) is None:
                raise KeyedValueError(
                    key, f"EAGLE3 needs {key}; set num_steps, eagle_topk and num_draft_tokens"
                )
        choices = self.live_steps or ([self.num_steps] if self.num_steps is not None else [])
        outside = [s for s in self.autopilot.steps if s not in choices]
        if outside:
            raise KeyedValueError(
                "autopilot.steps",
                f"{', '.join(map(str, outside))} not among the live step choices "
                f"({', '.join(map(str, choices))}: speculation.live_steps)",
            )
        if self.autopilot.enabled and not self.adaptive:
            # The threshold it also needs at launch is SGLang's rule (agent.sglang.rules): a running
            # profile whose live threshold is 0 has none, and its launch kept one.
            raise KeyedValueError(
                "autopilot.enabled",
                "the autopilot moves the live threshold: it needs adaptive = true (and a threshold, so that "
                "SGLang builds its 0-step state at start-up)",
            )
        return self


class Telemetry(_Section):
    tick_interval_s: float = Field(1.0, ge=0.25, le=5.0)
    server_info_every_ticks: int = Field(5, ge=1, le=60)


class BenchPreset(_Section):
    name: str
    concurrency: list[int] = Field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 250])
    input_len: int = Field(1024, ge=1, le=1_048_576)
    output_len: int = Field(256, ge=1, le=1_048_576)
    requests_per_level: int | None = Field(None, ge=1)
    chat: bool = True

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, v: list[int]) -> list[int]:
        if not v or any(c < 1 or c > 10_000 for c in v):
            raise ValueError("must list concurrency levels between 1 and 10000")
        return sorted(set(v))


class Bench(_Section):
    presets: list[BenchPreset] = Field(default_factory=list)


class Profile(_Section):
    """One deployment, as the operator saved it."""

    schema_version: Literal[1] = SCHEMA_VERSION
    identity: Identity
    host: Host = Host()
    stack: Stack = Stack()
    model: Model
    server: Server = Server()
    speculation: Speculation = Speculation(algorithm="none")
    telemetry: Telemetry = Telemetry()
    health: Health = Health()
    bench: Bench = Bench()

    @property
    def speculative(self) -> bool:
        return self.speculation.algorithm != "none"

    @model_validator(mode="after")
    def _health_outlasts_ticks(self) -> Profile:
        # A rule that must hold for a time needs a few telemetry ticks inside that time, or it fires
        # (stale) or never settles (queue) on a single tick.
        tick = self.telemetry.tick_interval_s
        for key in ("stale_after_s", "queue_window_s", "accept_collapse_window_s", "accept_loop_window_s"):
            value = getattr(self.health, key)
            if value < 3 * tick:
                raise KeyedValueError(
                    f"health.{key}",
                    f"must be at least 3 telemetry ticks (3 × telemetry.tick_interval_s = {3 * tick:g} s), "
                    f"got {value:g}",
                )
        stale = self.speculation.autopilot.stale_after_s
        if stale < 2 * tick:
            raise KeyedValueError(
                "speculation.autopilot.stale_after_s",
                f"must be at least 2 telemetry ticks (2 × telemetry.tick_interval_s = {2 * tick:g} s), got {stale:g}",
            )
        return self
