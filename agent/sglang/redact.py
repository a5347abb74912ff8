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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from agent.profile import ProfileError, dump_profile, parse_profile
from agent.profile.store import profile_from_dict, profile_to_dict

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


# --- Argument lists ----------------------------------------------------------------------------------
# ``server.extra_flags`` (and any argv kept as a list) holds a secret as two items, the flag and its
# value, which no text rule sees together: ``["--ssl-keyfile-password", "…"]``. The value after a
# flag whose name says secret is hidden, as is the value of ``--name=value``.


def _flag_name(item: str) -> tuple[str, str, str] | None:
    """``(head, name, value)`` of ``--name=value`` / ``--name`` (value ""), None for a plain item."""
    if not item.startswith("-") or item in ("-", "--") or _is_number(item):
        return None
    head, sep, value = item.partition("=")
    return head + sep, head.lstrip("-"), value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _secret_flag_positions(items: Sequence[str]) -> list[tuple[int, str]]:
    """``(index, what)`` of each secret in an argument list: ``what`` is "item" (the whole item is
    the value after a secret flag) or "inline" (the part after ``=``)."""
    out: list[tuple[int, str]] = []
    hide_next = False
    for i, item in enumerate(items):
        flag = _flag_name(item) if isinstance(item, str) else None
        if hide_next and flag is None:
            out.append((i, "item"))
            hide_next = False
            continue
        hide_next = False
        if flag is None or not is_secret_name(flag[1]):
            continue
        if flag[0].endswith("="):
            out.append((i, "inline"))
        else:
            hide_next = True
    return out


def secret_flag_values(items: Sequence[str]) -> list[str]:
    """The values of secret-named flags in an argument list (what must never leave the agent)."""
    values = []
    for i, what in _secret_flag_positions(items):
        value = items[i] if what == "item" else items[i].partition("=")[2]
        if value not in _NOT_SECRET_VALUES:
            values.append(value)
    return values


def redact_flag_list(items: Sequence[Any]) -> list[Any]:
    """An argument list with the value of every secret-named flag replaced by ``<redacted>``."""
    out = list(items)
    for i, what in _secret_flag_positions(items):
        if what == "item":
            out[i] = _mask(items[i])
        else:
            head, _, value = items[i].partition("=")
            out[i] = f"{head}={_mask(value)}"
    return out


def fill_hidden_flags(hidden: Sequence[str], given: Sequence[str]) -> list[str] | None:
    """``hidden`` (an argument list as the agent keeps it) with each ``<redacted>`` value put back
    from ``given`` where the same flag stands at the same place; None when one cannot be."""
    if not any(REDACTED in item for item in hidden):
        return list(hidden)
    if len(hidden) != len(given) or redact_flag_list(given) != list(hidden):
        return None
    return list(given)


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
            return [clean(v, None) for v in redact_flag_list(value)]
        if isinstance(value, str):
            return redact_text(value, known)
        return value

    return {str(k): clean(v, str(k)) for k, v in info.items()}


# --- Profiles ----------------------------------------------------------------------------------------
# A profile's ``server.env`` is where an operator puts what the engine's environment needs, HF_TOKEN
# and the like: every value there is hidden from what the agent answers, whatever its name, except
# numbers and booleans (``SGLANG_ENABLE_PCIE_IPC_ALLREDUCE = "1"`` stays readable). The real values
# stay in the profile file and reach only the engine's environment; ``server.env_files`` keeps a
# secret out of the profile altogether.

ENV_KEY: Final = "server.env"
_PLAIN = re.compile(r"^(?:[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|on|off|yes|no)$", re.I)


def is_plain_value(value: str) -> bool:
    """A number or a boolean, written as text: never a secret."""
    return bool(_PLAIN.match(value.strip()))


def hidden_env_values(env: Mapping[str, str]) -> list[str]:
    """The values of ``server.env`` that never leave the agent (every one but numbers and booleans)."""
    return [v for v in env.values() if v and not is_plain_value(v) and v != REDACTED]


def redact_env(env: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v if not isinstance(v, str) or not v or is_plain_value(v) else REDACTED for k, v in env.items()
    }


def redact_profile_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """A profile as plain data (its model dump, its TOML parsed) with ``server.env`` values and the
    value of every key whose name says secret hidden."""
    out = redact_mapping(data)
    server, given = out.get("server"), data.get("server")
    if isinstance(server, dict) and isinstance(server.get("env"), Mapping):
        server["env"] = redact_env(server["env"])
    if isinstance(server, dict) and isinstance(given, Mapping) and "env_files" in given:
        server["env_files"] = given["env_files"]  # paths, shown: the values are in the files
    return out


def redact_reasons(reasons: Iterable[str], *envs: Mapping[str, str]) -> list[str]:
    """A plan's reasons (they quote old and new values) without the env values of ``envs``."""
    hidden = [v for env in envs for v in hidden_env_values(env)]
    return [redact_text(r, hidden) for r in reasons]


def redact_change(key: str, value: Any) -> Any:
    """A value shown for a profile key (a plan's or a diff's ``old``/``new``): hidden when the key is
    under ``server.env`` or its name says secret."""
    if value is None or type(value) in (bool, int, float):
        return value
    if key.startswith(ENV_KEY + "_files."):
        return value  # a path: the value is in the file
    if key.startswith(ENV_KEY + "."):
        return value if isinstance(value, str) and (not value or is_plain_value(value)) else REDACTED
    if key == ENV_KEY and isinstance(value, Mapping):
        return redact_env(value)
    if is_secret_name(key.rsplit(".", 1)[-1]):
        return REDACTED if value not in ("", [], {}) else value
    if isinstance(value, list | tuple):
        return redact_flag_list(value)  # extra_flags: the value after a secret flag
    return value


def _toml_strings(value: str) -> list[str]:
    """The ways TOML writes ``value`` as a one-line string: basic (escaped) and literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() or c == " " else f"\\u{ord(c):04x}" for c in escaped)
    forms = [f'"{escaped}"', f'"{value}"']
    if "'" not in value:
        forms.append(f"'{value}'")
    return forms


_TABLE = re.compile(r"^\s*\[\s*(?P<name>[^\]\[]+?)\s*\]\s*(?:#.*)?$")
_FLAG_ITEM = re.compile(
    r"(?P<flag>\"--?(?P<n1>[A-Za-z][\w.-]*)\"|'--?(?P<n2>[A-Za-z][\w.-]*)')"
    r"(?P<sep>\s*,(?:\s|#[^\n]*)*)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*')"
)
"""A flag and its value as two strings of a TOML array (``extra_flags``), comments between allowed."""


def _flag_items(match: re.Match[str]) -> str:
    name = match.group("n1") or match.group("n2")
    value = match.group("value")
    if not is_secret_name(name) or value[1:-1] in _NOT_SECRET_VALUES:
        return match.group(0)
    return match.group("flag") + match.group("sep") + f'"{REDACTED}"'


def _names_a_path(table: str, line: str) -> bool:
    """Whether ``line`` (in TOML table ``table``) gives ``server.env_files`` a value: file paths,
    shown as they are everywhere (the secrets are in the files)."""
    if table == "server.env_files":
        return True
    key = line.split("=", 1)[0].strip().replace('"', "").replace("'", "") if "=" in line else ""
    full = f"{table}.{key}" if table else key
    return full == "server.env_files" or full.startswith("server.env_files.")


def _known(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_profile_text(text: str, hidden: Iterable[str], secrets: Iterable[str] = ()) -> str:
    """A profile file's text as the operator wrote it (comments and all), with every ``hidden`` value
    written as a TOML string replaced by ``"<redacted>"``, every secret-named assignment redacted, the
    value after a secret flag in ``extra_flags`` redacted and every known ``secrets`` value replaced
    wherever it stands. ``server.env_files`` keeps its paths, as every other answer shows them."""
    known = [s for s in secrets if s]
    table = ""
    lines = []
    for line in _FLAG_ITEM.sub(_flag_items, text).splitlines(keepends=True):
        header = _TABLE.match(line)
        if header:
            table = "".join(part.strip().strip("\"'") + "." for part in header["name"].split("."))[:-1]
        keep = header is None and _names_a_path(table, line)
        lines.append(_known(line, known) if keep else redact_text(line, known))
    clean = "".join(lines)
    for value in sorted(set(hidden), key=len, reverse=True):
        for form in _toml_strings(value):
            clean = clean.replace(form, f'"{REDACTED}"')
    return clean


def redact_values(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (JSON-shaped: an event's data) with every known secret replaced in every string; keys
    are left alone (an event's ``key`` names a profile key, not a secret)."""
    known = [s for s in secrets if s and len(s) >= 4]
    if not known:
        return value

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            for secret in known:
                if secret in item:
                    item = item.replace(secret, REDACTED)
            return item
        if isinstance(item, Mapping):
            return {k: clean(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [clean(v) for v in item]
        return item

    return clean(value)


_TOKEN_SHAPE = re.compile(r"^(?:hf_|sk-|sk_|ghp_|gho_|github_pat_|glpat-|xox[abpr]-|AKIA)[A-Za-z0-9_\-]{8,}$")
"""Values that are credentials whatever their name: Hugging Face, OpenAI-style, GitHub, GitLab, Slack, AWS."""


def profile_secret_warnings(
    env: Mapping[str, str], extra_flags: Sequence[str] = ()
) -> list[tuple[str, str, str]]:
    """``(severity, key, rule)`` for each ``server.env`` value that is a secret (its name says so, or it
    has a credential's shape): it sits in the profile file in plain text; ``server.env_files`` reads it
    from a file at launch instead. And for each secret-named flag in ``server.extra_flags`` with a
    value: in the file in plain text, and on the engine's command line."""
    out = []
    for name, value in env.items():
        if not value or value == REDACTED or not (is_secret_name(name) or _TOKEN_SHAPE.match(value)):
            continue
        why = "its name says secret" if is_secret_name(name) else "its value has a credential's shape"
        out.append((
            "warning",
            f"{ENV_KEY}.{name}",
            f"looks like a secret ({why}) and sits in the profile in plain text: put the value in a file only "
            f'the agent\'s user can read (chmod 600) and name it in server.env_files: {name} = "/path/to/file"',
        ))  # fmt: skip
    for i, _what in _secret_flag_positions(extra_flags):
        item = extra_flags[i]
        value = item if _what == "item" else item.partition("=")[2]
        if value in _NOT_SECRET_VALUES:
            continue
        flag = extra_flags[i - 1] if _what == "item" else item.partition("=")[0]
        out.append((
            "warning",
            "server.extra_flags",
            f"{flag} takes a secret (its name says so), and its value sits in the profile in plain text and "
            "on the engine's command line, where every user of the host can read it (ps); the agent hides it "
            "in what it answers, records and logs. Prefer a setting SGLang reads from a file or the "
            "environment (server.env_files)",
        ))  # fmt: skip
    return out


def hidden_profile_toml(toml_text: str) -> str:
    """A profile's TOML (as the agent dumps it) with its env values and secrets hidden: what the engine
    record keeps on disk. Text that is no valid profile is scrubbed as text (never kept as it was)."""
    try:
        profile = parse_profile(toml_text, "<record>")
    except ProfileError:
        return redact_text(toml_text)
    try:
        return dump_profile(profile_from_dict(redact_profile_data(profile_to_dict(profile)), "<record>"))
    except ProfileError:  # a hidden value the schema refuses: hide it in the text instead
        return redact_profile_text(toml_text, hidden_env_values(profile.server.env))
