"""An operator's request and the agent's plan for it: what changes, how, and how it ended.

What each kind of request takes and how it reads is the action catalogue's (``agent.wire.actions``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic_core import PydanticCustomError

from agent.wire.actions import NAME_MAX, ActionKind, spec_of


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


PRINTABLE = r"^[^\p{C}\p{Zl}\p{Zp}]*$"
"""A name that reaches the logs, the audit and an operator's terminal (``operator``): printable
characters only, no control characters, line breaks or terminal escapes (one could forge a line)."""

PlanMode = Literal["live", "restart", "rejected", "noop"]


class ActionRequest(_Wire):
    """An operator's request; ``request_id`` makes a repeated request (after a timeout) idempotent.
    Strict: ``3.0`` is no step count and ``"true"`` no boolean; a value of another type than its kind
    takes is refused naming what that is (``agent.wire.actions``), the planner says what is in bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    request_id: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: ActionKind
    value: int | bool | Annotated[str, Field(max_length=NAME_MAX, pattern=PRINTABLE)] | None = Field(
        None,
        description="What the kind takes (agent.wire.actions.CATALOGUE): threshold, steps, topk: a whole "
        "number (threshold 0: none; steps -1: release the pin); adaptive, autopilot: true or false; "
        "apply_profile: a profile's name",
    )
    operator: str | None = Field(
        None, max_length=NAME_MAX, pattern=PRINTABLE, description="SSH user as the console passes it"
    )
    change_id: str | None = Field(
        None,
        min_length=8,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="One change asked of several hosts at once (the console's fleet change): every "
        "host's audit records it, so the hosts' lines of one change can be found together",
    )

    @field_validator("value", mode="wrap")
    @classmethod
    def _fits_its_kind(
        cls, value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> object:
        """A value of the wrong type is refused naming what its kind takes (never pydantic's list of
        types, never the value itself: it may be anything a client sent)."""
        spec = spec_of(str(info.data.get("kind", "")))
        if spec is not None:
            wrong = spec.wrong_type(value)
            if wrong is not None:
                raise PydanticCustomError("action_value", wrong)
        return handler(value)


class Change(_Wire):
    """One setting a plan changes, old → new, as its profile value (JSON)."""

    key: str
    old: JsonValue = None
    new: JsonValue = None


class Plan(_Wire):
    action_id: str
    request: ActionRequest
    mode: PlanMode
    reason: str = Field(description="Why live / why a restart / why rejected, in an operator's words")
    changes: list[Change] = Field(default_factory=list)
    expected_downtime_s: float | None = None
    drain_timeout_s: float | None = None
    rejected_field: str | None = None


ActionStatus = Literal["planned", "applying", "applied", "rejected", "failed", "expired", "cancelled"]


class ActionResult(_Wire):
    action_id: str
    status: ActionStatus
    plan: Plan
    message: str = ""
    applied_at: float | None = None
