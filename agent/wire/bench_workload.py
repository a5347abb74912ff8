"""Where a benchmark's prompts and lengths come from (issue 45 item 1): the workload, as a run's
options record it and a request asks for it.

* ``random`` (the default): unique random prompts, as before; with ``range_ratio`` below 1 each
  request's input and output lengths are drawn uniformly from ``[max(1, int(L × ratio)), L]`` of
  ``input_len`` / ``output_len``, as SGLang's ``bench_serving --dataset-name random
  --random-range-ratio`` draws them (1: every request the same length).
* ``shared-prefix``: ``groups`` system prompts of ``prefix_len`` tokens; each request is one group's
  prompt and a question of its own (``input_len`` tokens in all), so the prefix cache works as it does
  in production (bench_serving's ``generated-shared-prefix``).
* ``dataset``: the prompts and output lengths of a file: bench_serving's ShareGPT JSON, or JSONL of
  ``{"prompt": ...}`` / ``{"messages": [...]}`` lines with an optional ``output_len``; capped by
  ``input_len`` / ``output_len`` (as ``--sharegpt-output-len`` does). Through the agent's API only a
  dataset shipped with the agent is named (``agent/bench/datasets``), never a path: a body never
  makes the agent read a file it names. ``agent bench`` on the command line takes a path.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

WorkloadKind = Literal["random", "shared-prefix", "dataset"]
DATASET_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A dataset shipped with the agent, by its file name (``chat-small.jsonl``)."""


class WorkloadSpec(BaseModel):
    """The workload a run is asked for; what it drew is the result's ``workload`` (``describe``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: WorkloadKind = "random"
    range_ratio: float = Field(1.0, ge=0.0, le=1.0)
    """``random``: the shortest request's share of ``input_len`` / ``output_len`` (1: all the same)."""
    groups: int = Field(8, ge=1, le=1024)
    """``shared-prefix``: how many system prompts the requests share."""
    prefix_len: int = Field(512, ge=1, le=1_000_000)
    """``shared-prefix``: the tokens of each system prompt (capped below ``input_len``)."""
    dataset: str | None = Field(None, max_length=4096)
    """``dataset``: the file (a shipped dataset's name; on the command line, a path)."""


class Lengths(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    min: float
    median: float
    max: float


class WorkloadDrawn(BaseModel):
    """A result's ``workload``: what the run's requests were (``agent.bench.workload.describe``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: WorkloadKind = "random"
    range_ratio: float | None = None
    groups: int | None = None
    prefix_len: int | None = None
    file: str | None = None
    sha256: str | None = None
    entries: int | None = None
    input_len: Lengths | None = None
    output_len: Lengths | None = None
    shared_prefix_share: float = 0.0

    def words(self) -> str:
        """One line, as ``agent bench`` and the console's result say it: ``dataset chat-small.jsonl
        (sha256 1cd14154…, 48 entries); input 11..927 (median 131), output 16..256 (median 96)``."""
        if self.kind == "dataset":
            head = f"dataset {self.file} (sha256 {(self.sha256 or '')[:8]}…, {self.entries} entries)"
        elif self.kind == "shared-prefix":
            head = (
                f"shared-prefix: {self.groups} system prompts of {self.prefix_len} tokens "
                f"({self.shared_prefix_share:.0%} of a prompt)"
            )
        else:
            ratio = self.range_ratio
            head = "random" + ("" if ratio is None or ratio == 1.0 else f" (range ratio {ratio:g})")
        inp, out = self.input_len, self.output_len
        if inp is None or out is None:
            return f"{head}; lengths not recorded"
        return (
            f"{head}; input {inp.min:g}..{inp.max:g} (median {inp.median:g}), "
            f"output {out.min:g}..{out.max:g} (median {out.median:g})"
        )
