"""A workload that changes over time: phases of traffic, each with its own request shape, acceptance
and concurrency, replayed on the engine model (``agent.sim.replay``) or by ``agent sim-whatif``.

A workload is a TOML file::

    name = "shifting"
    [[phase]]
    seconds = 150
    input_len = 1024              # prompt tokens of each request sent in this phase
    output_len = 256
    acceptance = "calibrated"     # calibrated | low | oracle | random: how well the drafts match
    concurrency = [8, 96, 8]      # clients: one number, or points spread evenly over the phase
                                  # with straight ramps between them

Acceptance belongs to what users ask: a request sent in a phase draws its predictability from that
phase's acceptance (``calibrated``: the Kimi K2.5 EAGLE-3 drafters; ``low``: traffic the drafter was
not trained for; ``oracle`` and ``random``: ``agent smoke``'s two tiny heads). The shipped workloads
are in ``agent/sim/workloads`` and are named without their ``.toml``.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.sim.calibration import CALIBRATION, DRAFT_ACCEPTANCE, Acceptance

LOW_ACCEPTANCE = Acceptance(first_accept_min=0.25, first_accept_max=0.45, depth_decay=0.8, topk_miss=0.7)
"""Traffic the drafter was not trained for: the first draft token kept 25-45 % of the time (accept
length ~1.45 at 2-3 steps, against ~2.4-2.75 calibrated)."""


def acceptance_named(name: str) -> Acceptance:
    if name == "low":
        return LOW_ACCEPTANCE
    found = DRAFT_ACCEPTANCE.get(name)
    return CALIBRATION.acceptance if found is None else found


ACCEPTANCE_NAMES = ("calibrated", "low", "oracle", "random")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Phase(_Strict):
    seconds: float = Field(gt=0, le=86_400)
    input_len: int = Field(ge=1, le=1_048_576)
    output_len: int = Field(ge=1, le=1_048_576)
    acceptance: str = "calibrated"
    concurrency: Annotated[list[int], Field(min_length=1, max_length=64)]

    @field_validator("acceptance")
    @classmethod
    def _acceptance(cls, v: str) -> str:
        if v not in ACCEPTANCE_NAMES:
            raise ValueError(f"must be one of {', '.join(ACCEPTANCE_NAMES)}")
        return v

    @field_validator("concurrency", mode="before")
    @classmethod
    def _one_number(cls, v: object) -> object:
        return [v] if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("concurrency")
    @classmethod
    def _concurrency(cls, v: list[int]) -> list[int]:
        if any(c < 0 or c > 10_000 for c in v):
            raise ValueError("clients must be between 0 and 10000")
        return v

    def clients_at(self, into_s: float) -> int:
        """Clients wanted ``into_s`` seconds into the phase."""
        points = self.concurrency
        if len(points) == 1:
            return points[0]
        where = min(1.0, max(0.0, into_s / self.seconds)) * (len(points) - 1)
        i = min(int(where), len(points) - 2)
        return round(points[i] + (points[i + 1] - points[i]) * (where - i))


class Workload(_Strict):
    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    phase: list[Phase] = Field(min_length=1, max_length=1000)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phase)

    def at(self, t: float) -> tuple[int, Phase, float]:
        """(index, phase, seconds into it) at ``t`` seconds from the start (the last phase after the end)."""
        start = 0.0
        for i, p in enumerate(self.phase):
            if t < start + p.seconds:
                return i, p, t - start
            start += p.seconds
        last = self.phase[-1]
        return len(self.phase) - 1, last, last.seconds


class WorkloadError(Exception):
    """A workload file that cannot be used; the message names the file and the key."""


def _key(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def parse_workload(text: str, source: str) -> Workload:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{source}: not valid TOML: {exc}") from None
    try:
        return Workload.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            rule = (
                "unknown key"
                if err["type"] == "extra_forbidden"
                else str(err["msg"]).removeprefix("Value error, ")
            )
            problems.append(f"{source}: {_key(tuple(err['loc']))}: {rule}")
        raise WorkloadError("\n".join(problems)) from None


def shipped_workloads() -> list[str]:
    folder = resources.files("agent.sim").joinpath("workloads")
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def load_workload(name_or_path: str) -> Workload:
    """A shipped workload by name (``shifting``) or a TOML file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise WorkloadError(f"{name_or_path}: cannot read: {exc}") from None
        return parse_workload(text, str(path))
    if name_or_path not in shipped_workloads():
        raise WorkloadError(
            f"{name_or_path}: no such workload file, and not a shipped one ({', '.join(shipped_workloads())})"
        )
    text = (
        resources.files("agent.sim").joinpath("workloads", f"{name_or_path}.toml").read_text(encoding="utf-8")
    )
    return parse_workload(text, f"{name_or_path}.toml")
