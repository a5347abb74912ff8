"""The body of a benchmark's start (``POST /v1/bench``, ``/v1/bench/plan``): one definition for the
agent's routes, the console's Bench screen and ``agent bench``'s flags.

Every field is bounded here (a list's length, a text's length, a number's range), so a body is
refused before anything of it is echoed, audited or run, and each refusal says the field and what
it allows in an operator's words (:func:`said`): never the value sent (a 170,000-element list came
back whole, a lone surrogate made the answer itself fail), never a Python repr. The API keys are no
field: the agent uses its own, ``agent bench`` reads them from files.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)
from pydantic_core import PydanticCustomError

from agent.wire.actions import NAME_MAX
from agent.wire.bench import DEFAULT_CONCURRENCY, BenchOptions, StopRule
from agent.wire.bench_result import ARM_NAMES
from agent.wire.bench_workload import DATASET_NAME, WorkloadSpec

FIELD_RULE: Final = "field_rule"
"""The ``type`` of a refusal worded here: its ``msg`` names the field in words and what it allows."""

LEVELS_MAX: Final = 64
LEVEL_MAX: Final = 4096
URL_MAX: Final = 2048
UNTIL_RANGE: Final = (0.005, 0.5)
BUDGET_RANGE_S: Final = (10.0, 86_400.0)
WINDOWS_RANGE: Final = (2, 100)


def said(words: str) -> WrapValidator:
    """Whatever is wrong with the value (its type, its range, its length, a surrogate in it), the
    refusal is ``words``: the field's name as an operator reads it and what it allows."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except (ValidationError, ValueError):
            raise PydanticCustomError(FIELD_RULE, words) from None

    return WrapValidator(check)


def _refuse(words: str) -> PydanticCustomError:
    return PydanticCustomError(FIELD_RULE, words)


def _unique(values: list[Any]) -> list[Any]:
    if len(set(values)) != len(values):
        raise _refuse("each once")
    return values


def _printable(text: str) -> str:
    if not text.isprintable():
        raise _refuse("printable")
    return text


def _web_url(text: str) -> str:
    if not text.startswith(("http://", "https://")) or not text.isprintable():
        raise _refuse("a URL")
    return text


def _whole(low: int, high: int, what: str) -> WrapValidator:
    return said(f"{what}: a whole number from {low} to {high}")


def _seconds(what: str) -> WrapValidator:
    return said(f"{what}: a number of seconds from 0 to 3600")


LEVELS_WORDS = (
    f"concurrency levels: a list of 1 to {LEVELS_MAX} different whole numbers from 1 to {LEVEL_MAX}, "
    "e.g. [1, 4, 16]"
)
Levels = Annotated[
    list[Annotated[int, Field(ge=1, le=LEVEL_MAX)]],
    Field(min_length=1, max_length=LEVELS_MAX),
    AfterValidator(_unique),
    said(LEVELS_WORDS),
]
ARMS_WORDS = f"arms: a list of 1 to {len(ARM_NAMES)} different arms of {', '.join(ARM_NAMES)}"
Arms = Annotated[
    list[Literal["on", "off", "adaptive", "baseline"]],
    Field(min_length=1, max_length=len(ARM_NAMES)),
    AfterValidator(_unique),
    said(ARMS_WORDS),
]
_U_LOW, _U_HIGH = UNTIL_RANGE
_B_LOW, _B_HIGH = BUDGET_RANGE_S
_W_LOW, _W_HIGH = WINDOWS_RANGE
_WINDOWS = f"a whole number from {_W_LOW} to {_W_HIGH}"
_NAME = f"printable text of at most {NAME_MAX} characters"

Mode = Annotated[Literal["sweep", "compare"], said("mode: sweep or compare")]
Requests = Annotated[int, Field(ge=1, le=100_000), _whole(1, 100_000, "completed requests per window")]
InputLen = Annotated[int, Field(ge=1, le=1_000_000), _whole(1, 1_000_000, "prompt length in tokens")]
OutputLen = Annotated[int, Field(ge=2, le=1_000_000), _whole(2, 1_000_000, "output length in tokens")]
Chat = Annotated[bool, said("chat: true or false")]
WindowS = Annotated[float, Field(ge=0, le=3600), _seconds("shortest window")]
Warmups = Annotated[int, Field(ge=0, le=100_000), _whole(0, 100_000, "warm-up requests before each loop")]
WarmupLen = Annotated[int, Field(ge=1, le=1_000_000), _whole(1, 1_000_000, "warm-up output length in tokens")]
DrainS = Annotated[float, Field(ge=0, le=3600), _seconds("wait for other clients' requests")]
Until = Annotated[
    float,
    Field(ge=_U_LOW, le=_U_HIGH),
    said(
        f"the bound on every arm's interval: a share from {_U_LOW} to {_U_HIGH} "
        f"(±{_U_LOW * 100:g} % to ±{_U_HIGH * 100:g} %), e.g. 0.04 for ±4 %"
    ),
]
BudgetS = Annotated[
    float,
    Field(ge=_B_LOW, le=_B_HIGH),
    said(f"the run's time budget: a number of seconds from {_B_LOW:g} to {_B_HIGH:g} (24 h)"),
]
Repeats = Annotated[int, Field(ge=1, le=20), _whole(1, 20, "windows per arm and level")]
MinWindows = Annotated[int, Field(ge=_W_LOW, le=_W_HIGH), said(f"fewest windows per level: {_WINDOWS}")]
MaxWindows = Annotated[int, Field(ge=_W_LOW, le=_W_HIGH), said(f"most windows per level: {_WINDOWS}")]
BaselineUrl = Annotated[
    str,
    Field(max_length=URL_MAX),
    AfterValidator(_web_url),
    said(f"the baseline server: an http:// or https:// URL of at most {URL_MAX} printable characters"),
]
RATES_MAX: Final = 16
Rates = Annotated[
    list[Annotated[float, Field(gt=0, le=100_000)] | Literal["inf"]],
    Field(min_length=1, max_length=RATES_MAX),
    AfterValidator(_unique),
    said(
        f"request rates: a list of 1 to {RATES_MAX} different rates in requests a second, each above 0 "
        "and at most 100000, or inf (all at once)"
    ),
]
Burstiness = Annotated[
    float, Field(ge=0.01, le=100), said("burstiness: a number from 0.01 to 100 (1: Poisson arrivals)")
]
WORKLOAD_WORDS = (
    "workload: kind random, shared-prefix or dataset; range_ratio from 0 to 1; groups from 1 to 1024; "
    "prefix_len from 1 to 1000000; dataset the name of a dataset shipped with the agent"
)


def _shipped_name(spec: WorkloadSpec, info: ValidationInfo) -> WorkloadSpec:
    """Through the API a dataset is named, never a path (``bench_workload``); ``agent bench`` passes
    the context ``{"paths": True}`` for its own files."""
    paths = bool((info.context or {}).get("paths"))
    if spec.dataset is not None and not paths and not re.match(DATASET_NAME, spec.dataset):
        raise _refuse("dataset")
    if spec.kind == "dataset" and not spec.dataset:
        raise _refuse("dataset")
    return spec


Workload = Annotated[WorkloadSpec, AfterValidator(_shipped_name), said(WORKLOAD_WORDS)]
Confirm = Annotated[
    str,
    Field(max_length=NAME_MAX),
    AfterValidator(_printable),
    said(f"the production profile's name, repeated: {_NAME}"),
]
Operator = Annotated[
    str, Field(max_length=NAME_MAX), AfterValidator(_printable), said(f"who asks, for the audit: {_NAME}")
]


class BenchRequest(BaseModel):
    """What a benchmark run is asked to do. What is left out (None) is the agent's default
    (:class:`BenchOptions`); ``requests_per_level`` and ``min_level_seconds`` are older names of two
    fields, still read (scripts send them)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    mode: Mode = "compare"
    concurrency: Levels = Field(default_factory=lambda: list(DEFAULT_CONCURRENCY))
    min_requests: Requests | None = Field(
        None, validation_alias=AliasChoices("min_requests", "requests_per_level")
    )
    input_len: InputLen | None = None
    output_len: OutputLen | None = None
    chat: Chat | None = None
    min_window_s: WindowS | None = Field(
        None, validation_alias=AliasChoices("min_window_s", "min_level_seconds")
    )
    warmup_requests: Warmups | None = None
    warmup_output_len: WarmupLen | None = None
    drain_wait_s: DrainS | None = None
    until: Until | None = Field(None, description="The stopping rule's bound (0.04: ±4 %); repeats then not")
    budget_s: BudgetS | None = Field(None, description="The stopping rule's time budget for the whole run")
    repeats: Repeats | None = None
    min_windows: MinWindows | None = None
    max_windows: MaxWindows | None = None
    baseline_url: BaselineUrl | None = Field(
        None, description="A server launched without a drafter, as a compare's fourth arm"
    )
    arms: Arms | None = Field(None, description="A compare's arms; None: every arm the server allows")
    request_rates: Rates | None = Field(
        None, description="Open-loop levels in requests a second ('inf': all at once); a sweep's"
    )
    burstiness: Burstiness | None = Field(None, description="The arrivals' gamma shape (1: Poisson)")
    workload: Workload | None = Field(
        None, description="Where the prompts and lengths come from; None: random, of input_len/output_len"
    )
    confirm_production: Confirm | None = Field(
        None, description="A production profile's name, typed to confirm"
    )
    operator: Operator | None = Field(
        None, description="Who asks, for the audit (the console passes the SSH user)"
    )

    # Rules between fields: each is checked on the later field, which can then be named (fields are
    # validated in the order they are declared, the earlier ones in ``info.data``).

    @field_validator("repeats")
    @classmethod
    def _repeats_or_rule(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and _has_rule(info):
            raise _refuse(
                "windows per arm and level: not with a stopping rule (until or budget_s); then a "
                "level takes from min_windows to max_windows windows"
            )
        return value

    @field_validator("min_windows", "max_windows")
    @classmethod
    def _windows_need_rule(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and not _has_rule(info):
            raise _refuse(
                "windows per level: only with a stopping rule (until, a bound on the intervals, or "
                "budget_s, a time budget)"
            )
        low = info.data.get("min_windows")
        if info.field_name == "max_windows" and value is not None and low is not None and value < low:
            raise _refuse(f"most windows per level: at least the fewest ({low})")
        return value

    @field_validator("request_rates")
    @classmethod
    def _rates_of_sweep(
        cls, value: list[float | str] | None, info: ValidationInfo
    ) -> list[float | str] | None:
        if value is not None and info.data.get("mode", "compare") != "sweep":
            raise _refuse("request rates: a sweep's for now (mode sweep); a compare runs the closed loop")
        if value is not None and _has_rule(info):
            raise _refuse("request rates: a fixed number of windows (repeats) for now, not a stopping rule")
        return value

    @field_validator("arms")
    @classmethod
    def _arms_of_compare(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return None
        if info.data.get("mode", "compare") != "compare":
            raise _refuse("arms: only a compare has arms (mode compare)")
        if "baseline" in value and info.data.get("baseline_url") is None:
            raise _refuse("arms: the baseline arm needs baseline_url (a server launched without a drafter)")
        return value

    def body(self) -> dict[str, object]:
        """The JSON body: only what was said."""
        return self.model_dump(mode="json", exclude_none=True)

    @property
    def stop(self) -> StopRule | None:
        """The stopping rule asked for; None: a fixed number of windows (``repeats``)."""
        if self.until is None and self.budget_s is None:
            return None
        windows = {k: v for k in ("min_windows", "max_windows") if (v := getattr(self, k)) is not None}
        return StopRule(until=self.until, budget_s=self.budget_s, **windows)

    @property
    def options(self) -> BenchOptions:
        """The options the agent runs with for this body (its defaults where it says nothing)."""
        given = self.model_dump(exclude_none=True, exclude=_NOT_OPTIONS)
        arms = None if self.arms is None else tuple(a for a in ARM_NAMES if a in self.arms)
        workload = self.workload or WorkloadSpec()
        return BenchOptions.model_validate(
            {
                **given,
                "concurrency": tuple(sorted(self.concurrency)),
                "stop": self.stop,
                "arms": arms,
                "workload": workload,
            }
        )


_NOT_OPTIONS = {"mode", "confirm_production", "workload", "operator", "baseline_url", "until", "budget_s",
                "min_windows", "max_windows", "arms", "concurrency"}  # fmt: skip
"""Fields that are no option of the run itself, or that the options hold in another shape."""


def _has_rule(info: ValidationInfo) -> bool:
    return info.data.get("until") is not None or info.data.get("budget_s") is not None


def field_words(errors: list[Any], name_of: Callable[[str], str] | None = None) -> str:
    """The first refusal of a :class:`BenchRequest` as one line: as worded (the field in an
    operator's words first), or, with ``name_of``, with the field as the caller names it (a
    command's flag: ``--budget: a number of seconds ...``). The console and the CLI say what the
    agent would answer, before anything is sent."""
    error = errors[0]
    loc = [str(part)[:64] for part in error.get("loc", ()) if not isinstance(part, int)]
    field = (name_of or str)(loc[-1]) if loc else "the request"
    msg = str(error.get("msg", ""))
    if error.get("type") == FIELD_RULE:
        return msg if name_of is None else f"{field}: {msg.split(': ', 1)[-1]}"
    if error.get("type") == "extra_forbidden":
        return f"{field}: no such field in this request"
    return f"{field}: {msg}"
