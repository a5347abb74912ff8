"""Profiles as the API shows them, and back: ``server.env`` values and secret-named keys hidden in every
answer (``agent.sglang.redact``), and a hidden value written back by a client put back from where it
came, so that "Save running as" of a profile whose env holds a token saves the token, not the mark.

Why a round trip: the console's save builds the new file from the running profile it was shown, and an
operator edits a profile it was shown; the agent alone knows the values, and never sends them.
"""

from __future__ import annotations

import tomllib
from typing import Any

from agent.profile import Profile, ProfileError, ProfileIssue, dump_profile
from agent.sglang.redact import (
    REDACTED,
    fill_hidden_flags,
    hidden_env_values,
    hidden_profile_toml,
    redact_change,
    redact_profile_data,
    redact_profile_text,
)


def shown_profile(profile: Profile) -> dict[str, Any]:
    """The model dump an answer carries."""
    return redact_profile_data(profile.model_dump(mode="json"))


def shown_toml(profile: Profile) -> str:
    """The profile's TOML as an answer carries it (dumped from the hidden copy)."""
    return hidden_profile_toml(dump_profile(profile))


def shown_text(text: str, profile: Profile | None) -> str:
    """A profile file's own text (comments kept) with its env values hidden; a file that does not
    validate still has its env read from the TOML, when it parses."""
    env: dict[str, Any] = dict(profile.server.env) if profile is not None else {}
    if profile is None:
        try:
            server = tomllib.loads(text).get("server")
        except tomllib.TOMLDecodeError:
            server = None
        raw = server.get("env") if isinstance(server, dict) else None
        env = {k: v for k, v in raw.items() if isinstance(v, str)} if isinstance(raw, dict) else {}
    return redact_profile_text(text, hidden_env_values(env))


def shown_change(change: dict[str, Any]) -> dict[str, Any]:
    key = str(change["key"])
    return {
        **change,
        "old": redact_change(key, change.get("old")),
        "new": redact_change(key, change.get("new")),
    }


def filled_keys(given: Profile, filled: Profile) -> dict[tuple[str, ...], Any]:
    """The key paths ``fill_hidden`` put a value back at, with the values: what a save fills into the
    operator's text (``agent.profile.save_profile_text``)."""
    out: dict[tuple[str, ...], Any] = {
        ("server", "env", name): value
        for name, value in filled.server.env.items()
        if given.server.env.get(name) != value
    }
    if given.server.extra_flags != filled.server.extra_flags:
        out[("server", "extra_flags")] = list(filled.server.extra_flags)
    return out


def _fill_flags(profile: Profile, file: str, sources: tuple[Profile | None, ...]) -> Profile:
    """``server.extra_flags`` with the hidden value of a secret flag put back from the first source
    that has the same flags; refused, naming the key, when none has."""
    flags = profile.server.extra_flags
    if not any(REDACTED in item for item in flags):
        return profile
    for source in sources:
        filled = None if source is None else fill_hidden_flags(flags, source.server.extra_flags)
        if filled is not None:
            server = profile.server.model_copy(update={"extra_flags": filled})
            return profile.model_copy(update={"server": server})
    raise ProfileError(
        [
            ProfileIssue(
                file,
                "server.extra_flags",
                f"{REDACTED!r} stands for a secret flag's value the agent hides, and neither this file nor "
                "the running profile has the same flags to take it from: write the value",
            )
        ]
    )


def fill_hidden(profile: Profile, file: str, *sources: Profile | None) -> Profile:
    """``profile`` with each ``server.env`` value (and secret ``extra_flags`` value) that is the hidden
    mark put back from the first of ``sources`` (the file it replaces, the running profile) that has
    it; a mark none of them can fill is refused, naming the key (the real value, or
    server.env_files, is wanted)."""
    profile = _fill_flags(profile, file, sources)
    env = profile.server.env
    marked = [name for name, value in env.items() if value == REDACTED]
    if not marked:
        return profile
    filled = dict(env)
    missing = []
    for name in marked:
        value = next((s.server.env[name] for s in sources if s is not None and name in s.server.env), None)
        if value is None or value == REDACTED:
            missing.append(name)
        else:
            filled[name] = value
    if missing:
        raise ProfileError(
            [
                ProfileIssue(
                    file,
                    f"server.env.{name}",
                    f"{REDACTED!r} stands for a value the agent hides, and neither this file nor the running "
                    "profile has one for it: write the value, or name a file with it in server.env_files",
                )
                for name in missing
            ]
        )
    return profile.model_copy(update={"server": profile.server.model_copy(update={"env": filled})})
