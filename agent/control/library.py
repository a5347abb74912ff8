"""The profiles directory as the API sees it: list, read, save (validated, atomic), diff against what runs.

Names are file stems checked against the profile name rule, so a name can never be a path.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.profile import (
    Profile,
    ProfileError,
    ProfileIssue,
    diff_profiles,
    load_profile,
    parse_profile,
    save_profile,
)
from agent.sglang import rules

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class UnknownProfile(Exception):
    pass


@dataclass(frozen=True)
class ProfileFile:
    name: str
    path: Path


def issue_dict(issue: ProfileIssue) -> dict[str, str]:
    return {"file": issue.file, "key": issue.key, "rule": issue.rule, "severity": issue.severity}


class ProfileLibrary:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path_of(self, name: str) -> Path:
        if not _NAME.match(name) or name.endswith(".toml"):
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
        return [
            ProfileFile(p.stem, p)
            for p in sorted(self.directory.glob("*.toml"))
            if p.is_file() and _NAME.match(p.stem)
        ]

    def load(self, name: str) -> Profile:
        """A saved profile, checked against SGLang's rules as well as the schema (errors raise)."""
        path = self.path_of(name)
        if not path.is_file():
            raise ProfileError([ProfileIssue(str(path), "", "no such profile")])
        profile = load_profile(path)
        errors = rules.errors_of(rules.check_profile(profile, str(path)))
        if errors:
            raise ProfileError(errors)
        return profile

    def read(self, name: str) -> dict[str, Any]:
        path = self.path_of(name)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UnknownProfile(name) from None
        try:
            profile = parse_profile(text, str(path))
        except ProfileError as exc:
            return {
                "name": name,
                "toml": text,
                "profile": None,
                "warnings": [],
                "issues": [issue_dict(i) for i in exc.issues],
            }
        found = rules.check_profile(profile, str(path))
        return {
            "name": name,
            "toml": text,
            "profile": profile.model_dump(mode="json"),
            "warnings": [issue_dict(i) for i in found if i.severity != "error"],
            "issues": [issue_dict(i) for i in found if i.severity == "error"],
        }

    def save(self, name: str, text: str) -> Path:
        """Validate (schema and SGLang rules) then write atomically; raises ProfileError and writes nothing."""
        path = self.path_of(name)
        profile = parse_profile(text, str(path))
        errors = rules.errors_of(rules.check_profile(profile, str(path)))
        if errors:
            raise ProfileError(errors)
        self.directory.mkdir(parents=True, exist_ok=True)
        return save_profile(profile, path)

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
        if not path.is_file():
            raise UnknownProfile(name)
        other = load_profile(path)
        plan = rules.classify_change(running, other, launched)
        return {
            "changes": [{"key": c.key, "old": c.old, "new": c.new} for c in diff_profiles(running, other)],
            "plan": {"mode": plan.mode, "reasons": plan.reasons},
        }
