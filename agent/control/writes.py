"""The rules a profile write must pass before it touches the file: which version it replaces, and
whether it may replace a production profile.

HTTP has the words for the first: a write to an existing file names the version it replaces in
``If-Match`` (the digest the agent answers for the file); a write without it is refused with 428
(Precondition Required), one naming another version with 412 (Precondition Failed: someone saved in
between, the write is stale), and ``If-None-Match: *`` creates only. The second follows the agent's
production notion (``identity.production``) and its confirmation, as for a restart
(``agent control --confirm-production NAME``) or a benchmark (``confirm_production``): the write
repeats the profile's name. Every refusal says what was found and what to send, and nothing is written.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from agent.profile import ProfileIssue
from agent.profile.versions import profile_digest
from agent.profile.words import given_words


class PreconditionRequired(Exception):
    """428: the file exists and the write did not say which version of it it replaces."""


class PreconditionFailed(Exception):
    """412: the write names a version the file no longer is (or creates one that exists)."""


def _tags(header: str) -> list[str]:
    """The entity tags of an ``If-Match``/``If-None-Match`` header: ``"abc", W/"def"`` → abc, def."""
    tags = []
    for part in header.split(","):
        tag = part.strip().removeprefix("W/").strip()
        if len(tag) >= 2 and tag[0] == tag[-1] == '"':
            tag = tag[1:-1]
        if tag:
            tags.append(tag)
    return tags


@dataclass(frozen=True)
class WriteGuard:
    """What a write says about the file it writes: ``If-Match``, ``If-None-Match`` (the raw header
    values) and the production confirmation."""

    if_match: str | None = None
    if_none_match: str | None = None
    confirm_production: str | None = None

    def check(self, name: str, current: bytes | None, *, deleting: bool = False) -> None:
        """Raise PreconditionRequired or PreconditionFailed unless the write may replace ``current``
        (the file's bytes now; None: there is no file)."""
        what = "a delete" if deleting else "a write"
        if self.if_none_match is not None:
            if "*" not in _tags(self.if_none_match):
                raise PreconditionFailed(
                    f"{name}: If-None-Match accepts only '*' (create a new profile); nothing was written"
                )
            if current is not None:
                raise PreconditionFailed(
                    f"{name} already exists (digest {profile_digest(current)}); nothing was written. Choose "
                    "another name, or replace it with If-Match naming that digest"
                )
            return
        if self.if_match is None:
            if current is None:
                return
            raise PreconditionRequired(
                f'{name} exists: {what} must name the version it replaces, If-Match: "<digest>" with the '
                f"digest GET /v1/profiles/{name} answers (now {profile_digest(current)}), or use "
                "If-None-Match: * to create only; nothing was written"
            )
        tags = _tags(self.if_match)
        if current is None:
            raise PreconditionFailed(
                f"{name} does not exist, but {what} names a version of it (If-Match); nothing was written"
            )
        digest = profile_digest(current)
        if "*" not in tags and digest not in tags:
            raise PreconditionFailed(
                f"{name} changed since it was read: it is now {digest}, {what} names "
                f"{', '.join(tags) or 'no version'}. Read it again and redo the change; nothing was written"
            )

    @staticmethod
    def is_production(data: bytes | None) -> bool:
        """Whether a profile file's bytes say ``identity.production = true``; a file that is no valid
        TOML says nothing (its write still needs If-Match)."""
        if data is None:
            return False
        try:
            identity = tomllib.loads(data.decode("utf-8", errors="replace")).get("identity")
        except tomllib.TOMLDecodeError:
            return False
        return isinstance(identity, dict) and identity.get("production") is True


def production_issue(
    file: str, name: str, current: bytes | None, confirm: str | None, *, deleting: bool = False
) -> ProfileIssue | None:
    """A production profile is replaced or deleted only by a write that repeats its name in
    ``confirm_production``; None when the write may go on."""
    if not WriteGuard.is_production(current) or confirm == name:
        return None
    got = "" if confirm is None else f" (got {given_words(confirm)})"
    doing = "deleting it removes" if deleting else "saving over it replaces"
    return ProfileIssue(
        file,
        "confirm_production",
        f"{name} is a production profile: {doing} what its next start runs. Repeat its name in "
        f"confirm_production to go on{got}; nothing was written",
    )
