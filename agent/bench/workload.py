"""A run's requests as its workload makes them (``agent.wire.bench_workload``): for each request's
seed, its prompt and its output length; and what the run drew, for its result.

The request of a seed is fixed: a level sends the same seeds to every arm and repeat
(``sweep.SweepSession.run_step``), so every arm meets the same prompts and lengths. A dataset's
lengths are its own, counted in words where no tokenizer is at hand (the simulated engine counts
text the same way; a real engine's own count is what each record's ``prompt_tokens`` keeps).
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.bench.options import BenchOptionError
from agent.bench.stream import Prompt, make_prompt
from agent.wire.bench_workload import WorkloadDrawn, WorkloadSpec

SHIPPED = Path(__file__).with_name("datasets")
"""The datasets that come with the agent (their provenance: ``datasets/README.md``)."""
DATASET_MAX_BYTES = 64 * 1024 * 1024
DATASET_MAX_ITEMS = 100_000
DESCRIBE_SAMPLE = 256
"""Requests drawn to describe a workload's lengths in its result (the first seeds a level sends)."""


@dataclass(frozen=True)
class Item:
    prompt: Prompt
    output_len: int


@dataclass(frozen=True)
class _Entry:
    words: list[str]
    output_len: int | None


class Workload:
    """The requests of one run: ``item(seed)``; ``describe()`` for its result."""

    def __init__(self, spec: WorkloadSpec, input_len: int, output_len: int, path: Path | None = None) -> None:
        self.spec = spec
        self.input_len = input_len
        self.output_len = output_len
        self.path = path
        self.digest: str | None = None
        self._entries: list[_Entry] = []
        if spec.kind == "dataset":
            if path is None:
                raise BenchOptionError("dataset", "a dataset workload needs a dataset file")
            raw = _read(path)
            self.digest = hashlib.sha256(raw).hexdigest()
            self._entries = parse_dataset(raw, path.name)
        self._prefixes = [
            make_prompt(self.prefix_len, 9_000_000 + g).text.split() for g in range(spec.groups)
        ]

    @property
    def prefix_len(self) -> int:
        return max(0, min(self.spec.prefix_len, self.input_len - 1))

    def item(self, seed: int) -> Item:
        kind = self.spec.kind
        if kind == "dataset":
            entry = self._entries[seed % len(self._entries)]
            words = entry.words[: self.input_len]
            out = min(entry.output_len or self.output_len, self.output_len)
            return Item(Prompt(input_ids=[], text=" ".join(words)), max(1, out))
        if kind == "shared-prefix":
            rng = random.Random(seed)
            prefix = self._prefixes[rng.randrange(len(self._prefixes))]
            question = make_prompt(self.input_len - len(prefix), seed).text.split()
            return Item(Prompt(input_ids=[], text=" ".join(prefix + question)), self.output_len)
        ratio = self.spec.range_ratio
        if ratio >= 1.0:
            return Item(make_prompt(self.input_len, seed), self.output_len)
        rng = random.Random(seed ^ 0x5EED)
        in_len = rng.randint(max(1, int(self.input_len * ratio)), self.input_len)
        out_len = rng.randint(max(1, int(self.output_len * ratio)), self.output_len)
        return Item(make_prompt(in_len, seed), out_len)

    def describe(self, first_seed: int = 0) -> dict[str, Any]:
        """The result's ``workload``: kind, file and digest, the lengths drawn, the shared share."""
        items = [self.item(first_seed + i) for i in range(DESCRIBE_SAMPLE)]
        inputs = [len(it.prompt.input_ids) or len(it.prompt.text.split()) for it in items]
        outputs = [it.output_len for it in items]
        shared = self.prefix_len / statistics.mean(inputs) if self.spec.kind == "shared-prefix" else 0.0
        return {
            "kind": self.spec.kind,
            "range_ratio": self.spec.range_ratio if self.spec.kind == "random" else None,
            "groups": self.spec.groups if self.spec.kind == "shared-prefix" else None,
            "prefix_len": self.prefix_len if self.spec.kind == "shared-prefix" else None,
            "file": None if self.path is None else self.path.name,
            "sha256": self.digest,
            "entries": len(self._entries) or None,
            "input_len": _spread(inputs),
            "output_len": _spread(outputs),
            "shared_prefix_share": round(shared, 3),
        }


def _spread(values: list[int]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def words(workload: dict[str, Any]) -> str:
    """A result's workload in one line (``WorkloadDrawn.words``), with its label."""
    return f"workload: {WorkloadDrawn.model_validate(workload).words()}"


def resolve(spec: WorkloadSpec, allow_paths: bool) -> WorkloadSpec:
    """``spec`` with its dataset as the file's absolute path: a dataset shipped with the agent by its
    name, or (``allow_paths``: the command line) a path. The agent's API never reads a path a body
    names. The file is read and checked here, so a bad one is refused before any request."""
    if spec.kind != "dataset":
        return spec
    name = spec.dataset
    if not name:
        raise BenchOptionError("dataset", "give a dataset: a file, or one shipped with the agent")
    shipped = SHIPPED / name
    if "/" not in name and shipped.is_file():
        path = shipped
    elif allow_paths:
        path = Path(name)
    else:
        known = ", ".join(sorted(p.name for p in SHIPPED.glob("*.json*")))
        raise BenchOptionError("dataset", f"not a dataset shipped with the agent; those are: {known}")
    resolved = spec.model_copy(update={"dataset": str(path.resolve())})
    load(resolved, 1, 1)
    return resolved


def load(spec: WorkloadSpec, input_len: int, output_len: int) -> Workload:
    """The workload of a resolved ``spec`` (``resolve``)."""
    return Workload(spec, input_len, output_len, None if spec.dataset is None else Path(spec.dataset))


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            raw = f.read(DATASET_MAX_BYTES + 1)
    except OSError as exc:
        raise BenchOptionError("dataset", f"{path.name}: cannot read it ({exc.strerror})") from None
    if len(raw) > DATASET_MAX_BYTES:
        raise BenchOptionError("dataset", f"{path.name}: larger than {DATASET_MAX_BYTES // 2**20} MiB")
    return raw


def parse_dataset(raw: bytes, name: str) -> list[_Entry]:
    """bench_serving's ShareGPT JSON (a list of ``{"conversations": [{"from": "human", "value": ...},
    {"from": "gpt", "value": ...}]}``: the first turn the prompt, the reply's words its output
    length), or JSONL of ``{"prompt": text}`` or ``{"messages": [{"role", "content"}]}`` with an
    optional ``output_len``. Entries without a prompt are skipped; none left is an error."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BenchOptionError("dataset", f"{name}: not UTF-8 text") from None
    stripped = text.lstrip()
    try:
        rows: list[Any] = (
            json.loads(stripped)
            if stripped.startswith("[")
            else [json.loads(line) for line in text.splitlines() if line.strip()]
        )
    except json.JSONDecodeError as exc:
        raise BenchOptionError("dataset", f"{name}: not JSON or JSONL (line {exc.lineno})") from None
    entries = [e for e in (_entry(row) for row in rows[:DATASET_MAX_ITEMS]) if e is not None]
    if not entries:
        raise BenchOptionError(
            "dataset", f"{name}: no prompt in it (ShareGPT conversations, or prompt / messages lines)"
        )
    return entries


def _entry(row: Any) -> _Entry | None:
    if not isinstance(row, dict):
        return None
    out = row.get("output_len")
    output_len = out if isinstance(out, int) and not isinstance(out, bool) and out > 0 else None
    turns = row.get("conversations")
    if isinstance(turns, list) and turns and all(isinstance(t, dict) for t in turns):
        prompt = turns[0].get("value")
        reply = turns[1].get("value") if len(turns) > 1 else None
        if output_len is None and isinstance(reply, str) and reply.split():
            output_len = len(reply.split())
    elif isinstance(row.get("messages"), list):
        prompt = " ".join(
            m["content"] for m in row["messages"] if isinstance(m, dict) and isinstance(m.get("content"), str)
        )
    else:
        prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.split():
        return None
    return _Entry(prompt.split(), output_len)
