"""Reading, writing and comparing profile files.

Saving is atomic (temp file in the same directory, fsync, rename, fsync of the directory) and keeps
the file it replaces among the profile's last versions (``agent.profile.versions``), so an interrupted
save or a full disk never leaves an operator with a half-written profile, and no save loses one. A
profile saved from the operator's own text keeps that text, comments and all (``save_profile_text``). Loading reports every problem at once, each naming the file, the key
path and the rule, because an operator fixing a profile at 3 a.m. should not play whack-a-mole.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w
import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError

from agent.profile.atomic import write_atomic
from agent.profile.regular_file import NotAFile, read_regular_file
from agent.profile.schema import KeyedValueError, Profile
from agent.profile.versions import KEEP_VERSIONS, keep_version
from agent.profile.words import given_words

MAX_PROFILE_BYTES = 256 * 1024
"""A profile is a few kilobytes; anything this large is a mistake or an attack."""


@dataclass(frozen=True)
class ProfileIssue:
    """One problem with a profile: where it is and which rule it breaks."""

    file: str
    key: str
    rule: str
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        return f"{where}: {self.rule}"


class ProfileError(Exception):
    """A profile could not be loaded or saved; ``issues`` lists every reason."""

    def __init__(self, issues: list[ProfileIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


class ProfileNotWritten(ProfileError):
    """A profile that is fine could not be written (a full disk, a read-only one): the agent's trouble,
    not the request's (the API answers 503, not 422); the old file is intact."""


def _key_path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts)


_STRICT_TYPES = {
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be a boolean, true or false",
    "string_type": "must be text in quotes",
    "int_from_float": "must be an integer",
}
"""The schema is strict (``threshold = true`` is no 1, ``threshold = "8"`` no 8): each refusal in words."""


def _kind_words(value: Any) -> str:
    if isinstance(value, bool):
        return f"{given_words(value)}, a boolean"
    if isinstance(value, str):
        return f"{given_words(value)}, a text"
    if isinstance(value, float):
        return repr(value)  # 8.0, not the 8 that value_words would say
    return given_words(value)


def _rule(err: Mapping[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key (not part of the profile format)"
    if kind == "missing":
        return "required key is missing"
    if kind in _STRICT_TYPES:
        return f"{_STRICT_TYPES[kind]} (got {_kind_words(err.get('input'))})"
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    value = err.get("input")
    if kind not in ("model_type",) and not isinstance(value, dict | list) and value is not None:
        return f"{msg} (got {value!r})"
    return msg


def issues_from_validation(error: ValidationError, file: str) -> list[ProfileIssue]:
    """Turn pydantic's errors into operator-readable issues naming the key path."""
    issues = []
    for err in error.errors():
        loc = tuple(err["loc"])
        # model-level validators report the section only; name the key they speak of.
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, KeyedValueError):
            loc = (*loc, cause.key)
        key = _key_path(loc)
        issues.append(ProfileIssue(file=file, key=key, rule=_rule(err)))
    return issues


def parse_profile(text: str, file: str = "<profile>") -> Profile:
    """Validate TOML text as a profile; raises :class:`ProfileError` naming every problem."""
    if len(text.encode("utf-8", errors="replace")) > MAX_PROFILE_BYTES:
        raise ProfileError([ProfileIssue(file, "", f"file is larger than {MAX_PROFILE_BYTES} bytes")])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError([ProfileIssue(file, "", f"not valid TOML: {exc}")]) from None
    return profile_from_dict(data, file)


def profile_from_dict(data: Mapping[str, Any], file: str = "<profile>") -> Profile:
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(issues_from_validation(exc, file)) from None


def load_profile(path: str | os.PathLike[str], *, follow_links: bool = True) -> Profile:
    """Read and validate a profile file. A path given on the command line may be a link the operator
    made; the profile library reads its own files with ``follow_links=False`` (a link there is refused,
    never served)."""
    p = Path(path)
    try:
        data = read_regular_file(p, MAX_PROFILE_BYTES, follow_links=follow_links)
        if len(data) > MAX_PROFILE_BYTES:
            raise ProfileError([ProfileIssue(str(p), "", f"file is larger than {MAX_PROFILE_BYTES} bytes")])
        text = data.decode("utf-8")
    except ProfileError:
        raise
    except NotAFile as exc:  # a link (to /etc/shadow), a directory, a FIFO: never read
        raise ProfileError([ProfileIssue(str(p), "", f"is {exc.what}, not a profile file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError([ProfileIssue(str(p), "", f"cannot read: {exc}")]) from None
    return parse_profile(text, str(p))


def profile_to_dict(profile: Profile) -> dict[str, Any]:
    """The profile as plain data, without the keys that hold no value (TOML has no null)."""
    return profile.model_dump(mode="json", exclude_none=True)


def dump_profile(profile: Profile) -> str:
    return tomli_w.dumps(profile_to_dict(profile))


def save_profile(profile: Profile, path: str | os.PathLike[str], *, keep: int = KEEP_VERSIONS) -> Path:
    """Write ``profile`` to ``path`` atomically, first keeping the file it replaces among its last
    ``keep`` versions (``versions/<name>/`` beside it).

    On any failure (including a full disk) the old file is untouched and the temp file removed.
    """
    target = Path(path)
    text = dump_profile(profile)
    # Round-trip before touching the disk: what we write must load back as the same profile.
    if parse_profile(text, str(target)) != profile:
        raise ProfileError([ProfileIssue(str(target), "", "profile does not survive a TOML round trip")])
    try:
        keep_version(target, keep)
        write_atomic(target, text)
    except OSError as exc:
        raise not_written(target, exc) from exc
    return target


def not_written(target: Path, exc: OSError) -> ProfileNotWritten:
    """The refusal of a write the disk did not take, naming the file and the disk's reason."""
    why = exc.strerror or type(exc).__name__
    return ProfileNotWritten([ProfileIssue(str(target), "", f"not saved, the old file is intact: {why}")])


def filled_text(text: str, fill: Mapping[tuple[str, ...], Any]) -> str:
    """``text`` with the value at each key path of ``fill`` replaced, the rest as the operator wrote it:
    comments, order and layout (tomlkit edits only those values). Raises ValueError when a path is
    not in the text as a value to replace."""
    if not fill:
        return text
    try:
        doc = tomlkit.parse(text)
        for path, value in fill.items():
            node: Any = doc
            for part in path[:-1]:
                node = node[part]
            if path[-1] not in node:
                raise KeyError(path[-1])
            node[path[-1]] = value
    except (TOMLKitError, KeyError, TypeError) as exc:
        raise ValueError(f"{'.'.join(path)}: cannot be filled in the text ({exc})") from None
    return tomlkit.dumps(doc)


def save_profile_text(
    text: str,
    profile: Profile,
    path: str | os.PathLike[str],
    *,
    fill: Mapping[tuple[str, ...], Any] | None = None,
    keep: int = KEEP_VERSIONS,
) -> bool:
    """Write the operator's own ``text`` of ``profile`` to ``path`` atomically: its comments, order
    and layout kept, with the values of ``fill`` put in (the hidden values the agent fills back).
    Where the text cannot be kept so (a value that cannot be filled in place, or the result would
    not load back as ``profile``), the profile is written as ``save_profile`` writes it, without
    comments. Returns whether the comments were kept. The file it replaces is kept among its versions
    first; on any failure the old file is untouched (ProfileError, as ``save_profile``)."""
    target = Path(path)
    try:
        kept = filled_text(text, fill or {})
        same = parse_profile(kept, str(target)) == profile
    except (ValueError, ProfileError):
        same = False
    if not same:
        save_profile(profile, target, keep=keep)
        return False
    try:
        keep_version(target, keep)
        write_atomic(target, kept)
    except OSError as exc:
        raise not_written(target, exc) from exc
    return True


@dataclass(frozen=True)
class ProfileChange:
    """One key whose value differs between two profiles."""

    key: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.key}: {self.old!r} -> {self.new!r}"


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            # An empty table holds no keys: {} and an absent table compare equal, key by key.
            yield from _flatten(value, path)
        else:
            yield path, value


def diff_profiles(old: Profile, new: Profile) -> list[ProfileChange]:
    """Every key path whose value differs, in a stable order; missing values show as None."""
    a = dict(_flatten(old.model_dump(mode="json")))
    b = dict(_flatten(new.model_dump(mode="json")))
    changes = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            changes.append(ProfileChange(key, a.get(key), b.get(key)))
    return changes
