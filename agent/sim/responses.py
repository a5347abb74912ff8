"""The JSON bodies 0.5.23 answers generation requests with, built from a request's progress.

``/generate``: ``{"text", "output_ids", "meta_info"}`` with cumulative text (SGLang's default,
``--incremental-streaming-output`` off); the final chunk's ``meta_info`` adds ``e2e_latency`` and,
with speculation, ``spec_accept_rate``/``spec_accept_length``/``spec_num_correct_drafts``/
``spec_num_proposed_drafts``/``spec_verify_ct``/``spec_correct_drafts_histogram``
(``tokenizer_manager.py``). OpenAI endpoints follow ``openai/protocol.py``: a role chunk, content
chunks, a finish chunk, then a usage-only chunk (``choices: []``) when asked for, and an ``sglext``
chunk with ``spec_tokens_details`` when ``return_spec_tokens_details`` is set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agent.sim import text
from agent.sim.protocol import GenerationRequest
from agent.sim.request import SimRequest


def openai_finish(req: SimRequest) -> tuple[str | None, int | str | None]:
    reason = req.finish_reason
    if reason is None:
        return None, None
    matched = reason.get("matched") if reason["type"] == "stop" else None
    return str(reason["type"]), matched


def spec_fields(req: SimRequest, startup_draft_tokens: int) -> dict[str, Any]:
    """Per-request speculative statistics, as the tokenizer computes them (startup draft width)."""
    if req.verify_ct <= 0:
        return {}
    proposed = req.verify_ct * (startup_draft_tokens - 1)
    fields: dict[str, Any] = {}
    if proposed > 0:
        fields = {
            "spec_accept_rate": req.correct_drafts / proposed,
            "spec_accept_length": req.output_len / req.verify_ct,
            "spec_num_correct_drafts": req.correct_drafts,
            "spec_num_proposed_drafts": proposed,
            "spec_verify_ct": req.verify_ct,
        }
    if req.drafts_histogram:
        fields["spec_correct_drafts_histogram"] = list(req.drafts_histogram)
    return fields


def meta_info(req: SimRequest, final: bool, startup_draft_tokens: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "id": req.rid,
        "finish_reason": req.finish_reason if final else None,
        "prompt_tokens": req.input_len,
        "weight_version": "default",
        "num_retractions": req.retractions,
        "reasoning_tokens": 0,
        "completion_tokens": req.output_len,
        "cached_tokens": 0,
    }
    if final:
        if req.finished_at is not None:
            meta["e2e_latency"] = req.finished_at - req.arrival
        meta.update(spec_fields(req, startup_draft_tokens))
    return meta


def generate_body(req: SimRequest, final: bool, startup_draft_tokens: int) -> dict[str, Any]:
    return {
        "text": text.words(req.rid, 0, req.output_len),
        "output_ids": text.token_ids(req.rid, 0, req.output_len),
        "meta_info": meta_info(req, final, startup_draft_tokens),
    }


def usage(req: SimRequest) -> dict[str, Any]:
    return {
        "prompt_tokens": req.input_len,
        "total_tokens": req.input_len + req.output_len,
        "completion_tokens": req.output_len,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
        "completion_tokens_details": None,
    }


def spec_tokens_details(req: SimRequest, startup_draft_tokens: int) -> dict[str, Any]:
    """``SpecTokensDetails`` (``openai/protocol.py``): zeros where a statistic does not apply."""
    fields = spec_fields(req, startup_draft_tokens)
    return {
        "spec_accept_rate": fields.get("spec_accept_rate", 0.0),
        "spec_accept_length": fields.get("spec_accept_length", 0.0),
        "spec_cap_length": 0.0,
        "spec_block_accept_length": 0.0,
        "spec_num_correct_drafts": fields.get("spec_num_correct_drafts", 0),
        "spec_num_proposed_drafts": fields.get("spec_num_proposed_drafts", 0),
        "spec_verify_ct": fields.get("spec_verify_ct", 0),
        "spec_correct_drafts_histogram": fields.get("spec_correct_drafts_histogram", []),
        "spec_cap_lens_histogram": [],
    }


def _chunk_base(gen: GenerationRequest, req: SimRequest, created: int) -> dict[str, Any]:
    obj = "chat.completion.chunk" if gen.kind == "chat" else "text_completion"
    return {"id": req.rid, "object": obj, "created": created, "model": gen.model}


def content_chunk(
    gen: GenerationRequest,
    req: SimRequest,
    created: int,
    start: int,
    end: int,
    *,
    role: bool = False,
) -> dict[str, Any]:
    """A streamed piece of text (tokens ``start..end-1``); ``role`` makes it the chat role chunk."""
    piece = "" if role else text.words(req.rid, start, end)
    chunk = _chunk_base(gen, req, created)
    if gen.kind == "chat":
        delta: dict[str, Any] = {
            "role": "assistant" if role else None,
            "content": piece,
            "reasoning_content": None,
        }
        choice: dict[str, Any] = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": None,
            "matched_stop": None,
        }
    else:
        choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": None, "matched_stop": None}
    chunk["choices"] = [choice]
    chunk["usage"] = usage(req) if gen.continuous_usage and not role else None
    return chunk


def finish_chunk(gen: GenerationRequest, req: SimRequest, created: int) -> dict[str, Any]:
    reason, matched = openai_finish(req)
    chunk = _chunk_base(gen, req, created)
    if gen.kind == "chat":
        choice: dict[str, Any] = {
            "index": 0,
            "delta": {"role": None, "content": None, "reasoning_content": None},
            "logprobs": None,
            "finish_reason": reason,
            "matched_stop": matched,
        }
    else:
        choice = {"index": 0, "text": "", "logprobs": None, "finish_reason": reason, "matched_stop": matched}
    chunk["choices"] = [choice]
    chunk["usage"] = usage(req) if gen.continuous_usage else None
    return chunk


def usage_chunk(gen: GenerationRequest, req: SimRequest, created: int) -> dict[str, Any]:
    chunk = _chunk_base(gen, req, created)
    chunk["choices"] = []
    chunk["usage"] = usage(req)
    return chunk


def sglext_chunk(
    gen: GenerationRequest, req: SimRequest, created: int, startup_draft_tokens: int
) -> dict[str, Any]:
    chunk = _chunk_base(gen, req, created)
    chunk["choices"] = []
    chunk["usage"] = None
    chunk["sglext"] = {"spec_tokens_details": spec_tokens_details(req, startup_draft_tokens)}
    return chunk


def openai_response(
    gen: GenerationRequest, req: SimRequest, created: int, startup_draft_tokens: int
) -> dict[str, Any]:
    reason, matched = openai_finish(req)
    body_text = text.words(req.rid, 0, req.output_len)
    if gen.kind == "chat":
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": body_text, "reasoning_content": None},
            "logprobs": None,
            "finish_reason": reason,
            "matched_stop": matched,
        }
        obj = "chat.completion"
    else:
        choice = {
            "index": 0,
            "text": body_text,
            "logprobs": None,
            "finish_reason": reason,
            "matched_stop": matched,
        }
        obj = "text_completion"
    body: dict[str, Any] = {
        "id": req.rid,
        "object": obj,
        "created": created,
        "model": gen.model,
        "choices": [choice],
        "usage": usage(req),
        "metadata": None,
    }
    if gen.return_spec_details:
        body["sglext"] = {"spec_tokens_details": spec_tokens_details(req, startup_draft_tokens)}
    return body


def dumps(obj: Any) -> bytes:
    """Compact JSON, as SGLang's orjson writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


_encode_str: Callable[[str], str] = json.encoder.encode_basestring_ascii
_encode_str_utf8: Callable[[str], str] = json.encoder.encode_basestring
_SLOT = re.compile(r'"\\u0000(\w+)\\u0000"')


def slot(name: str) -> str:
    """A placeholder for :class:`Template`: put it where a value goes in the object to render."""
    return f"\x00{name}\x00"


class Template:
    """A JSON object rendered once with placeholders, then filled per chunk by string joins.

    Streaming writes one chunk per request per step (15,000 a second at speedup 20 and 250
    clients): building and encoding the whole dict every time would make the simulator the
    bottleneck. The object is still built by the same functions as the non-streamed answers.
    """

    def __init__(self, obj: Any) -> None:
        parts = _SLOT.split(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
        self.literals = [p.encode() for p in parts[0::2]]
        self.names = parts[1::2]

    def render(self, **values: str | int) -> bytes:
        out = [self.literals[0]]
        for name, literal in zip(self.names, self.literals[1:], strict=True):
            value = values[name]
            out.append((_encode_str(value) if isinstance(value, str) else str(int(value))).encode())
            out.append(literal)
        return b"".join(out)


def content_chunk_template(gen: GenerationRequest, req: SimRequest, created: int) -> Template:
    """``content_chunk`` with the text piece (``piece``) and, with continuous usage, the counts as slots."""
    chunk = content_chunk(gen, req, created, 0, 0)
    choice = chunk["choices"][0]
    if gen.kind == "chat":
        choice["delta"]["content"] = slot("piece")
    else:
        choice["text"] = slot("piece")
    if chunk["usage"] is not None:
        chunk["usage"]["completion_tokens"] = slot("completion")
        chunk["usage"]["total_tokens"] = slot("total")
    return Template(chunk)


class GenerateStream:
    """The cumulative ``/generate`` stream of one request, encoded incrementally.

    Each chunk repeats the whole text and ``output_ids`` so far (SGLang's default), so encoding the
    dict anew per chunk costs O(length) of Python work per chunk and made the native stream 2.6x
    as dear as chat for the simulator (issue 3). Here the text and the ids are kept already encoded
    and only the new tokens are encoded; ``meta_info`` of a running request is a :class:`Template`.
    The bytes are those ``dumps(generate_body(...))`` gives; the final chunk is built that way.
    """

    def __init__(self, req: SimRequest, startup_draft_tokens: int) -> None:
        self.req = req
        self.draft = startup_draft_tokens
        self.sent = 0
        self._text = bytearray()
        self._ids = bytearray()
        meta = meta_info(req, False, startup_draft_tokens)
        meta["num_retractions"] = slot("retractions")
        meta["completion_tokens"] = slot("completion")
        self._meta = Template(meta)

    def chunk(self, final: bool) -> bytes:
        """The chunk for the request's progress now (its final chunk when ``final``)."""
        req = self.req
        now = req.output_len
        if final:
            self.sent = now
            return dumps(generate_body(req, True, self.draft))
        if now > self.sent:
            self._text += _encode_str_utf8(text.words(req.rid, self.sent, now))[1:-1].encode()
            if self._ids:
                self._ids += b","
            self._ids += ",".join(map(str, text.token_ids(req.rid, self.sent, now))).encode()
            self.sent = now
        meta = self._meta.render(retractions=req.retractions, completion=now)
        return b"".join(
            (b'{"text":"', self._text, b'","output_ids":[', self._ids, b'],"meta_info":', meta, b"}")
        )
