"""Reading generation requests the way 0.5.23 reads them, down to token counts and limits.

``/generate`` takes ``text`` or ``input_ids`` and ``sampling_params`` (``max_new_tokens`` defaults
to 128); ``/v1/completions`` takes ``prompt`` (``max_tokens`` defaults to 16);
``/v1/chat/completions`` takes ``messages`` (no ``max_tokens``: up to the context length, ended by
the modelled EOS). ``ignore_eos`` is honoured everywhere. A prompt plus its output budget must fit
the context length, as SGLang checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agent.sim import text

GENERATE_DEFAULT_MAX_NEW_TOKENS = 128
COMPLETIONS_DEFAULT_MAX_TOKENS = 16

Kind = Literal["generate", "chat", "completion"]


class BadRequest(ValueError):
    """A request SGLang would refuse with HTTP 400; the message says what is wrong."""


@dataclass(frozen=True)
class GenerationRequest:
    kind: Kind
    input_len: int
    max_new_tokens: int | None
    ignore_eos: bool
    stream: bool
    model: str
    rid: str | None = None
    include_usage: bool = False
    continuous_usage: bool = False
    return_spec_details: bool = False
    prompt_key: int | None = None
    """A digest of the prompt (``text.prompt_key``): the same prompt is as predictable every time."""


def _int_field(data: dict[str, Any], key: str, where: str, minimum: int = 0) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{where}{key} must be an integer, got {value!r}")
    if value < minimum:
        raise BadRequest(f"{where}{key} must be at least {minimum}, got {value}")
    return value


def _bool_field(data: dict[str, Any], key: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be a boolean, got {value!r}")
    return value


def _prompt_len(value: Any, key: str) -> int:
    if isinstance(value, str):
        return text.count_text_tokens(value)
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return len(value)
    if isinstance(value, list) and len(value) == 1:
        return _prompt_len(value[0], key)
    raise BadRequest(
        f"{key} must be a string or a list of token ids (batches are not supported by the simulator)"
    )


def _check(input_len: int, max_new: int | None, context_length: int) -> None:
    if input_len < 1:
        raise BadRequest("The input is empty: at least one token is needed.")
    if input_len >= context_length:
        raise BadRequest(
            f"The input ({input_len} tokens) is longer than the model's context length ({context_length} tokens)."
        )
    if max_new is not None and input_len + max_new > context_length:
        raise BadRequest(
            f"Requested token count exceeds the model's maximum context length of {context_length} tokens. "
            f"You requested a total of {input_len + max_new} tokens: {input_len} tokens from the input messages "
            f"and {max_new} tokens for the completion. Please reduce the number of tokens in the input messages "
            "or the completion to fit within the limit."
        )


def parse_generate(body: Any, context_length: int, model: str) -> GenerationRequest:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if body.get("input_ids") is not None:
        input_len = _prompt_len(body["input_ids"], "input_ids")
    elif body.get("text") is not None:
        input_len = _prompt_len(body["text"], "text")
    else:
        raise BadRequest("Either text or input_ids should be provided.")
    params = body.get("sampling_params") or {}
    if not isinstance(params, dict):
        raise BadRequest("sampling_params must be a JSON object")
    max_new = _int_field(params, "max_new_tokens", "sampling_params.")
    max_new = GENERATE_DEFAULT_MAX_NEW_TOKENS if max_new is None else max_new
    _check(input_len, max_new, context_length)
    rid = body.get("rid")
    prompt = body["input_ids"] if body.get("input_ids") is not None else body["text"]
    return GenerationRequest(
        kind="generate",
        input_len=input_len,
        max_new_tokens=max_new,
        ignore_eos=_bool_field(params, "ignore_eos"),
        stream=_bool_field(body, "stream"),
        model=model,
        rid=rid if isinstance(rid, str) else None,
        prompt_key=text.prompt_key(prompt),
    )


def _openai_common(body: dict[str, Any]) -> tuple[bool, bool, bool]:
    n = body.get("n", 1)
    if n not in (None, 1):
        raise BadRequest("n > 1 is not supported by the simulator")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise BadRequest("stream_options must be a JSON object")
    return (
        _bool_field(options, "include_usage"),
        _bool_field(options, "continuous_usage_stats"),
        _bool_field(body, "return_spec_tokens_details"),
    )


def _openai_request(
    kind: Literal["chat", "completion"],
    body: dict[str, Any],
    model: str,
    input_len: int,
    max_new: int | None,
    context_length: int,
    prompt: Any,
) -> GenerationRequest:
    """What the two OpenAI routes share once each has counted its prompt and read its token limit."""
    _check(input_len, max_new, context_length)
    include_usage, continuous, spec = _openai_common(body)
    return GenerationRequest(
        kind=kind,
        input_len=input_len,
        max_new_tokens=max_new,
        ignore_eos=_bool_field(body, "ignore_eos"),
        stream=_bool_field(body, "stream"),
        model=model,
        include_usage=include_usage,
        continuous_usage=continuous,
        return_spec_details=spec,
        rid=body.get("rid") if isinstance(body.get("rid"), str) else None,
        prompt_key=text.prompt_key(prompt),
    )


def parse_chat(body: Any, context_length: int) -> GenerationRequest:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages must be a non-empty list of message objects")
    model = body.get("model")
    if not isinstance(model, str):
        raise BadRequest("model must be a string")
    input_len = text.count_message_tokens(messages)
    max_new = _int_field(body, "max_completion_tokens", "", 0)
    if max_new is None:
        max_new = _int_field(body, "max_tokens", "", 0)
    return _openai_request("chat", body, model, input_len, max_new, context_length, messages)


def parse_completion(body: Any, context_length: int) -> GenerationRequest:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if "prompt" not in body:
        raise BadRequest("prompt is required")
    model = body.get("model")
    if not isinstance(model, str):
        raise BadRequest("model must be a string")
    input_len = _prompt_len(body["prompt"], "prompt")
    max_new = _int_field(body, "max_tokens", "", 0)
    max_new = COMPLETIONS_DEFAULT_MAX_TOKENS if max_new is None and "max_tokens" not in body else max_new
    return _openai_request("completion", body, model, input_len, max_new, context_length, body["prompt"])
