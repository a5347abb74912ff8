"""Token counting and made-up text, without a tokenizer.

The simulator counts one token per whitespace-separated word of a prompt (``input_ids`` count one
each), and writes one word per generated token (each with its leading space), so token counts are
exact both ways: a client that sends ``N`` words gets ``prompt_tokens == N`` back, and the words it
receives add up to ``completion_tokens``. The words come from a fixed list, chosen by the request's
id and the token's position, so a response is the same whichever chunks it is streamed in.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

_WORD_LIST = (
    "the model serves tokens while the batch grows and each draft step proposes words that the target "
    "verifies in one pass so accepted text arrives faster when the server is quiet and slower when "
    "many requests share the experts of a large mixture network running across eight cards"
)
WORDS: tuple[str, ...] = tuple(_WORD_LIST.split(" "))
TOKEN_ID_BASE = 1000


def count_text_tokens(text: str) -> int:
    return len(text.split())


def count_message_tokens(messages: list[dict[str, Any]]) -> int:
    """Tokens of a chat prompt: the words of every message's text content (no template overhead)."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += count_text_tokens(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    total += count_text_tokens(part["text"])
    return total


def prompt_key(prompt: Any) -> int:
    """A digest of a prompt as sent (text, ids or messages), to make its predictability its own."""
    return zlib.crc32(json.dumps(prompt, separators=(",", ":"), sort_keys=True).encode())


def _offset(rid: str) -> int:
    return zlib.crc32(rid.encode()) % len(WORDS)


def token_ids(rid: str, start: int, end: int) -> list[int]:
    base = _offset(rid)
    return [TOKEN_ID_BASE + (base + i * 7) % len(WORDS) for i in range(start, end)]


def words(rid: str, start: int, end: int) -> str:
    """The text of output tokens ``start..end-1`` of a request (each word with its leading space)."""
    base = _offset(rid)
    n = len(WORDS)
    return "".join(" " + WORDS[(base + i * 7) % n] for i in range(start, end))
