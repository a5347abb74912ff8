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
