"""Redacting secrets from what SGLang says about itself: ``/server_info``, its launch command, its log.

SGLang 0.5.23's ``/server_info`` returns every server argument, ``api_key`` and ``admin_api_key``
included, and the raw launch command (reference §4.1); its log prints ``ServerArgs(...)`` at start-up.
Nothing of that may reach a console, a bench result or a log line of ours with a key in it.

Redaction goes **by key, not by word**: a value is secret when the *name* it is given under ends in
a secret word (``api_key``, ``admin_api_key``, ``hf_token``, ``watermark_key_b``,
``ssl_keyfile_password``, ``HF_TOKEN``, ``client_secret``...). A name that merely contains such a
word is not secret: ``max_total_tokens``, ``max_prefill_tokens``, ``speculative_num_draft_tokens``
and ``tokenizer_path`` keep their values, so the numbers an operator needs stay readable. Numbers
and booleans are never secrets. The same name rule applies in every shape a secret is written in:

* JSON and Python mappings: ``{"api_key": "sk-1"}``, ``{'api_key': 'sk-1'}``;
* ``ServerArgs(...)`` reprs and ``key=value`` text: ``api_key='sk-1'``, ``api_key="sk-1"``,
  ``HF_TOKEN=hf_x``, ``api_key: sk-1``;
* command lines: ``--api-key sk-1``, ``--api-key=sk-1``, ``--hf-token "hf x"``;
* HTTP headers: ``Authorization: Bearer sk-1``.

Values the agent knows to be secret (its token, the engine's keys) are also replaced wherever they
appear, whatever surrounds them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

REDACTED: Final = "<redacted>"

LAUNCH_COMMAND: Final = "launch_command"
"""``/server_info``'s space-joined argv: kept, with the values of its secret flags redacted."""

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:api_?key|key|token|secret|password|passwd|passphrase|credentials?|private_key|"
    r"access_key|authorization|auth)(?:_[a-z0-9])?$"
)
"""The last word(s) of a normalised name that make it secret; ``watermark_key_b`` ends in ``key_b``."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

_QUOTED: Final = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
_FLAG = re.compile(
    r"(?P<head>(?<![\w-])--?(?P<name>[A-Za-z][\w.-]*)(?:=|[ \t]+))(?P<value>" + _QUOTED + r"|[^\s\"']+)"
)
_ASSIGN = re.compile(
    r"(?P<head>(?P<q>[\"']?)(?P<name>[A-Za-z_][\w.-]*)(?P=q)[ \t]*[:=][ \t]*)"
    r"(?P<value>" + _QUOTED + r"|[^\s,;)}\]\"']+)"
)
_BEARER = re.compile(r"(?P<head>\b[Bb]earer[ \t]+)(?P<value>[^\s\"',;]+)")
_NOT_SECRET_VALUES: Final = frozenset({"", "None", "none", "null", "NULL", "''", '""', REDACTED})


@functools.lru_cache(maxsize=8192)
def is_secret_name(name: str) -> bool:
    """Whether a value given under ``name`` is a secret: its last word is a secret word.

    >>> [is_secret_name(n) for n in ("api_key", "HF_TOKEN", "max_total_tokens", "tokenizer_path")]
    [True, True, False, False]
    """
    words = _CAMEL.sub("_", name).lower().replace("-", "_").replace(".", "_").strip("_ ")
    return bool(_SECRET_NAME.search(words))


def _mask(value: str) -> str:
    if value in _NOT_SECRET_VALUES:
        return value
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0] + REDACTED + value[0]
    return REDACTED


_AUTH_SCHEMES: Final = frozenset({"bearer", "basic"})
"""``Authorization: Bearer <token>``: the scheme is not the secret, the word after it is (``_BEARER``)."""


def _secret_pair(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")) or match.group("value").lower() in _AUTH_SCHEMES:
        return match.group(0)
    return match.group("head") + _mask(match.group("value"))


def _bearer(match: re.Match[str]) -> str:
    return match.group("head") + _mask(match.group("value"))


def _scrub(text: str) -> str:
    if "earer" in text:
        text = _BEARER.sub(_bearer, text)
    if "=" in text or ":" in text or " -" in text or text.startswith("-"):
        text = _FLAG.sub(_secret_pair, text)
        text = _ASSIGN.sub(_secret_pair, text)
    return text


_scrub_cached = functools.lru_cache(maxsize=4096)(_scrub)
"""/server_info repeats its strings from one answer to the next: scrub each once."""


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret value written in it replaced by ``<redacted>`` (see the module)."""
    clean = _scrub_cached(text) if len(text) < 4096 else _scrub(text)
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in clean:
            clean = clean.replace(secret, REDACTED)
    return clean


def redact_lines(lines: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """Log lines (SGLang prints its server args, keys included, at start-up) made safe to pass on."""
    known = [s for s in secrets if s]
    return [redact_text(line, known) for line in lines]


def redact_mapping(info: Mapping[str, Any], secrets: Iterable[str] = ()) -> dict[str, Any]:
    """A copy of a JSON-shaped mapping (``/server_info``) with every secret replaced by ``<redacted>``.

    A value under a secret name loses its value unless it is empty, a number or a boolean; the
    launch command keeps its shape with its secret flags' values redacted; every other string is
    scrubbed for secrets written inside it. The input is not modified.
    """
    known = [s for s in secrets if s]

    def clean(value: Any, key: str | None) -> Any:
        kind = type(value)
        if key is not None and is_secret_name(key):
            if value is None or kind is bool or kind is int or kind is float or value in ("", [], {}):
                return value
            return REDACTED
        if kind is str:
            return redact_text(value, known)
        if kind is int or kind is float or kind is bool or value is None:  # most of the answer
            return value
        if isinstance(value, Mapping):
            return {str(k): clean(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v, None) for v in value]
        if isinstance(value, str):
            return redact_text(value, known)
        return value

    return {str(k): clean(v, str(k)) for k, v in info.items()}
