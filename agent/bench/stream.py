"""One streamed request against SGLang's HTTP surface, timed the way bench_serving times it.

Native ``/generate`` streams cumulative ``meta_info.completion_tokens``; a chunk that brings k new
tokens (speculation accepts several at once) adds k inter-token gaps of chunk_gap / k, exactly as
bench_serving's ``async_request_sglang_generate`` does. The chat endpoint is asked for continuous
usage so the same per-token accounting applies; if a server omits it, each content chunk counts as
one token until the final usage chunk corrects the total.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.bench.http_stream import ConnectFailed, ProtocolFailure, StreamConnection
from agent.bench.stats import RequestRecord
from agent.sglang import paths

_WORDS = [
    "time",
    "person",
    "year",
    "way",
    "day",
    "thing",
    "man",
    "world",
    "life",
    "hand",
    "part",
    "child",
    "eye",
    "woman",
    "place",
    "work",
    "week",
    "case",
    "point",
    "government",
    "company",
    "number",
    "group",
    "problem",
    "fact",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
]


@dataclass(frozen=True)
class Prompt:
    """A prompt of about ``input_len`` tokens, unique per request so the prefix cache cannot help."""

    input_ids: list[int]
    text: str


def make_prompt(input_len: int, seed: int) -> Prompt:
    rng = random.Random(seed)
    ids = [rng.randrange(1000, 30000) for _ in range(input_len)]
    words = [rng.choice(_WORDS) for _ in range(input_len)]
    return Prompt(input_ids=ids, text=" ".join(words))


class EngineUnreachable(RuntimeError):
    """The engine refused or dropped the connection: it is down or restarting."""


def generate_body(prompt: Prompt, output_len: int) -> dict[str, Any]:
    """A prompt of token ids is sent as ``input_ids``; one of text only (a dataset's) as ``text``."""
    said: dict[str, Any] = {"input_ids": prompt.input_ids} if prompt.input_ids else {"text": prompt.text}
    return {
        **said,
        "sampling_params": {"max_new_tokens": output_len, "ignore_eos": True, "temperature": 0.0},
        "stream": True,
    }


def chat_body(prompt: Prompt, output_len: int, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt.text}],
        "max_tokens": output_len,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


class _TokenClock:
    """Turns cumulative token counts seen at chunk arrival times into TTFT and per-token ITL."""

    def __init__(self, record: RequestRecord, on_tokens: Callable[[int], None] | None = None) -> None:
        self.record = record
        self.on_tokens = on_tokens
        self.last_count = 0
        self.last_time = record.start

    def tokens_at(self, count: int, now: float) -> None:
        new = count - self.last_count
        if new <= 0:
            return
        self.record.chunk_times.append(now)
        self.record.chunk_counts.append(count)
        if self.last_count == 0:
            self.record.ttft = now - self.record.start
        else:
            gap = (now - self.last_time) / new
            self.record.itl.extend([gap] * new)
        self.last_count = count
        self.last_time = now
        if self.on_tokens is not None:
            self.on_tokens(count)


_COMPLETION_KEY = b'"completion_tokens":'
_PROMPT_KEY = b'"prompt_tokens":'
_DIGITS = re.compile(rb"\s*(\d+)")


def _int_after(payload: bytes, key: bytes) -> int | None:
    at = payload.rfind(key)
    if at < 0 or payload.find(key) != at:
        return None
    match = _DIGITS.match(payload, at + len(key))
    return int(match.group(1)) if match else None


def _native_counts(payload: bytes) -> tuple[int, int] | None:
    """(completion_tokens, prompt_tokens) from a /generate chunk without decoding it all.

    Native chunks carry the cumulative text and output_ids, so a full decode per chunk is O(n²) per
    request; the counts are the only fields the benchmark needs. A quote inside a JSON string is
    always escaped, so these keys only match keys (each must occur once). None: decode fully.
    """
    if payload.startswith(b'{"error"'):
        return None
    completion = _int_after(payload, _COMPLETION_KEY)
    prompt = _int_after(payload, _PROMPT_KEY)
    if completion is None or prompt is None:
        return None
    return completion, prompt


async def stream_request(
    conn: StreamConnection,
    prompt: Prompt,
    output_len: int,
    *,
    chat_model: str | None,
    headers: dict[str, str],
    on_tokens: Callable[[int], None] | None = None,
    record: RequestRecord | None = None,
) -> RequestRecord:
    """Send one streaming request; HTTP and stream errors are recorded, a refused connection raises.

    ``record``, when given, is filled in place: the caller keeps what a request cut off by the end
    of its level had delivered (``done`` stays False for it). ``on_tokens(count)`` is called at each
    chunk that brings new tokens, with the cumulative count (the first call is the first token)."""
    chat = chat_model is not None
    path = paths.CHAT_COMPLETIONS if chat else paths.GENERATE
    body = (
        chat_body(prompt, output_len, chat_model)
        if chat_model is not None
        else generate_body(prompt, output_len)
    )
    if record is None:
        record = RequestRecord(start=time.perf_counter())
    else:
        record.start = time.perf_counter()
    clock = _TokenClock(record, on_tokens)
    try:
        await _read_stream(conn, path, body, headers, chat, record, clock)
    except ConnectFailed as exc:
        raise EngineUnreachable(f"cannot connect to {conn.target.host}:{conn.target.port}: {exc}") from exc
    except (ProtocolFailure, ValueError) as exc:
        record.error = f"{type(exc).__name__}: {exc}"
    if record.latency == 0.0:
        record.latency = time.perf_counter() - record.start
    record.done = True
    return record


async def _read_stream(
    conn: StreamConnection,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    chat: bool,
    record: RequestRecord,
    clock: _TokenClock,
) -> None:
    async with contextlib.aclosing(conn.post_sse(path, body, headers)) as events:
        async for status, payload in events:
            now = time.perf_counter()
            if status != 200:
                record.error = f"HTTP {status}: {payload[:300].decode(errors='replace')}"
                return
            if payload == b"[DONE]":
                continue
            counts = None if chat else _native_counts(payload)
            if counts is not None:
                clock.tokens_at(counts[0], now)
                record.prompt_tokens = counts[1]
                continue
            data = json.loads(payload)
            if "error" in data:
                record.error = f"stream error: {data['error']}"
                return
            if chat:
                _chat_chunk(data, record, clock, now)
            else:
                meta = data.get("meta_info") or {}
                clock.tokens_at(int(meta.get("completion_tokens", 0)), now)
                record.prompt_tokens = int(meta.get("prompt_tokens", record.prompt_tokens))
    record.latency = time.perf_counter() - record.start
    record.output_tokens = clock.last_count
    record.success = record.output_tokens > 0
    if not record.success:
        record.error = "stream ended without any output token"


def _chat_chunk(data: dict[str, Any], record: RequestRecord, clock: _TokenClock, now: float) -> None:
    usage = data.get("usage")
    choices = data.get("choices") or []
    has_content = any((c.get("delta") or {}).get("content") for c in choices)
    if usage:
        record.prompt_tokens = int(usage.get("prompt_tokens", record.prompt_tokens))
        completion = int(usage.get("completion_tokens", 0))
        if has_content:
            clock.tokens_at(completion, now)
        elif completion > clock.last_count:
            # A usage-only or finish chunk: the server's count is authoritative, without new gaps.
            clock.last_count = completion
            record.chunk_times.append(now)
            record.chunk_counts.append(completion)
    elif has_content:
        clock.tokens_at(clock.last_count + 1, now)
