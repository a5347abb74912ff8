"""The profiles directory as the API sees it: list, read, save (validated, atomic), diff against what runs.

Names are file stems checked against the profile name rule, so a name can never be a path. The rules
for a write live here (``agent.control.writes`` words them): the file name and ``identity.name``
agree; a write says which version it replaces (the digest, HTTP's ``If-Match``) or that it creates
(``If-None-Match: *``), so a stale write is refused; a production profile is replaced only when the
write repeats its name, as a restart or a benchmark on production wants; the replaced file is kept
among the profile's last versions.
"""

from __future__ import annotations

import builtins
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.control.profile_view import fill_hidden, filled_keys, shown_change, shown_profile, shown_text
from agent.control.writes import WriteGuard, production_issue
from agent.profile import (
    Profile,
    ProfileError,
    ProfileIssue,
    ProfileNotWritten,
    diff_profiles,
    load_profile,
    parse_profile,
    save_profile_text,
)
from agent.profile.regular_file import NotAFile, read_regular_file
from agent.profile.store import not_written
from agent.profile.versions import keep_version, profile_digest
from agent.profile.words import given_words
from agent.sglang import rules
from agent.sglang.redact import redact_reasons

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A profile name, matched whole (``fullmatch``: ``$`` would let a final newline through)."""


class UnknownProfile(Exception):
    pass


@dataclass(frozen=True)
class Saved:
    digest: str
    """Of the file's new bytes: what the next write names in If-Match."""
    comments_kept: bool
    """The text was written as sent (comments, order and layout); False: written as the agent dumps it."""


@dataclass(frozen=True)
class ProfileFile:
    name: str
    path: Path
    digest: str | None = None
    """Of the file's bytes when it was listed: what a write that replaces it names in If-Match."""
    production: bool = False


def issue_dict(issue: ProfileIssue) -> dict[str, str]:
    return {"file": issue.file, "key": issue.key, "rule": issue.rule, "severity": issue.severity}


class ProfileLibrary:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._writing = threading.Lock()
        """Check and write are one step: two writes naming the same version cannot both pass."""

    def path_of(self, name: str) -> Path:
        if not _NAME.fullmatch(name) or name.endswith(".toml"):
            raise ProfileError(
                [
                    ProfileIssue(
                        name, "name", "a profile name is 1-64 letters, digits, '.', '_' or '-' (no path)"
                    )
                ]
            )
        return self.directory / f"{name}.toml"

    def list(self) -> list[ProfileFile]:
        if not self.directory.is_dir():
            return []
        out = []
        for p in sorted(self.directory.glob("*.toml")):
            if not (p.is_file() and _NAME.fullmatch(p.stem)):
                continue
            try:
                data = read_regular_file(p)
            except OSError:  # a link or a FIFO named *.toml too: listed, its read says why
                out.append(ProfileFile(p.stem, p))
                continue
            out.append(ProfileFile(p.stem, p, profile_digest(data), WriteGuard.is_production(data)))
        return out

    def load(self, name: str) -> Profile:
        """A saved profile, checked against SGLang's rules as well as the schema (errors raise)."""
        path = self.path_of(name)
        if not os.path.lexists(path):
            raise ProfileError([ProfileIssue(str(path), "", "no such profile")])
        profile = load_profile(
            path, follow_links=False
        )  # a link, a directory or a FIFO there: refused, saying which
        errors = rules.errors_of(rules.check_profile(profile, str(path)))
        if errors:
            raise ProfileError(errors)
        return profile

    def read(self, name: str) -> dict[str, Any]:
        path = self.path_of(name)
        data = _read_or_none(path)
        if data is None:
            raise UnknownProfile(name)
        text = data.decode("utf-8", errors="replace")
        digest = profile_digest(data)
        try:
            profile = parse_profile(text, str(path))
        except ProfileError as exc:
            return {
                "name": name,
                "digest": digest,
                "toml": shown_text(text, None),
                "profile": None,
                "warnings": [],
                "issues": [issue_dict(i) for i in exc.issues],
            }
        found = rules.check_profile(profile, str(path))
        return {
            "name": name,
            "digest": digest,
            "toml": shown_text(text, profile),
            "profile": shown_profile(profile),
            "warnings": [issue_dict(i) for i in found if i.severity != "error"],
            "issues": [issue_dict(i) for i in found if i.severity == "error"],
        }

    def save(
        self, name: str, text: str, guard: WriteGuard | None = None, running: Profile | None = None
    ) -> Saved:
        """Check the write's guard against the file, validate (schema, SGLang rules, the name, the
        production confirmation), keep the file it replaces among its versions, then write the text as
        it was sent (comments kept) atomically; returns the new digest and whether the comments were
        kept. A value that is the hidden mark (the API never shows env values or secret flag values) is
        put back from the file it replaces, else from ``running``.
        Raises ProfileError (422), ProfileNotWritten (503: the disk refused it), PreconditionRequired (428) or PreconditionFailed (412), and then
        writes nothing."""
        path = self.path_of(name)
        guard = guard or WriteGuard()
        with self._writing:
            current = _read_or_none(path)
            guard.check(name, current)  # before the content, as HTTP evaluates preconditions
            profile = parse_profile(text, str(path))
            errors = rules.errors_of(rules.check_profile(profile, str(path)))
            if profile.identity.name != name:
                errors.append(
                    ProfileIssue(
                        str(path),
                        "identity.name",
                        f"must be the file's name, {given_words(name)} (the profile is saved as "
                        f"{name}.toml); got {given_words(profile.identity.name)}",
                    )
                )
            if errors:
                raise ProfileError(errors)
            refused = production_issue(str(path), name, current, guard.confirm_production)
            if refused is not None:
                raise ProfileError([refused])
            filled = fill_hidden(profile, str(path), _parsed_or_none(current, str(path)), running)
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise not_written(path, exc) from exc
            kept = save_profile_text(text, filled, path, fill=filled_keys(profile, filled))
            return Saved(profile_digest(read_regular_file(path)), kept)

    def delete(self, name: str, guard: WriteGuard) -> None:
        """Remove a profile file, kept first among its versions; the same guard as a save (a delete
        always names the version it removes). Raises UnknownProfile, ProfileError, PreconditionRequired
        or PreconditionFailed, and then removes nothing."""
        path = self.path_of(name)
        with self._writing:
            current = _read_or_none(path)
            if current is None:
                raise UnknownProfile(name)
            guard.check(name, current, deleting=True)
            refused = production_issue(str(path), name, current, guard.confirm_production, deleting=True)
            if refused is not None:
                raise ProfileError([refused])
            try:
                keep_version(path)
                path.unlink()
            except OSError as exc:
                why = exc.strerror or type(exc).__name__
                raise ProfileNotWritten(
                    [ProfileIssue(str(path), "", f"not deleted, the file is intact: {why}")]
                ) from exc

    def changed_keys(self, name: str, running: Profile) -> builtins.list[str]:
        """Keys where what runs differs from the saved file ``name`` (empty when it cannot be read:
        its own read says why)."""
        try:
            saved = self.load(name)
        except (UnknownProfile, ProfileError):
            return []
        return [c.key for c in diff_profiles(saved, running) if not c.key.startswith("identity.")]

    def diff(self, name: str, running: Profile, launched: Profile | None = None) -> dict[str, Any]:
        """What loading ``name`` changes against ``running`` (live values included), and whether the
        server, launched with ``launched``, takes it live."""
        path = self.path_of(name)
        if not os.path.lexists(path):
            raise UnknownProfile(name)
        other = load_profile(path, follow_links=False)
        plan = rules.classify_change(running, other, launched)
        return {
            "changes": [
                shown_change({"key": c.key, "old": c.old, "new": c.new})
                for c in diff_profiles(running, other)
            ],
            "plan": {
                "mode": plan.mode,
                "reasons": redact_reasons(plan.reasons, running.server.env, other.server.env),
            },
        }


def _read_or_none(path: Path) -> bytes | None:
    """The profile file's bytes, None when there is none; anything but a plain file there (a link, a
    directory, a FIFO) or a file that cannot be read is a ProfileError naming the file and why."""
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        return None
    except NotAFile as exc:
        rule = (f"is {exc.what}, not a profile file; a profile is a plain file in the profiles folder: "
                "remove what is there or put a profile file in its place")  # fmt: skip
    except OSError as exc:
        rule = f"cannot be read ({exc.strerror or type(exc).__name__})"
    raise ProfileError([ProfileIssue(str(path), "", rule)])


def _parsed_or_none(data: bytes | None, file: str) -> Profile | None:
    if data is None:
        return None
    try:
        return parse_profile(data.decode("utf-8", errors="replace"), file)
    except ProfileError:
        return None
