"""Operator profiles: the schema and its TOML files. Importable by the console."""

from agent.profile.schema import Profile
from agent.profile.store import (
    ProfileChange,
    ProfileError,
    ProfileIssue,
    ProfileNotWritten,
    diff_profiles,
    dump_profile,
    load_profile,
    parse_profile,
    save_profile,
    save_profile_text,
)

__all__ = [
    "Profile",
    "ProfileChange",
    "ProfileError",
    "ProfileIssue",
    "ProfileNotWritten",
    "diff_profiles",
    "dump_profile",
    "load_profile",
    "parse_profile",
    "save_profile",
    "save_profile_text",
]
