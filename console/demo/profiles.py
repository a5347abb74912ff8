"""Finding the shipped profiles (profiles/*.toml) from a checkout or an installed package."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def profile_dirs() -> list[Path]:
    """Where shipped profiles may be, most specific first: $K25_PROFILES_DIR, the checkout, the install."""
    dirs: list[Path] = []
    env = os.environ.get("K25_PROFILES_DIR")
    if env:
        dirs.append(Path(env))
    dirs.append(Path(__file__).resolve().parents[2] / "profiles")  # a source checkout (editable install)
    dirs.append(Path(sys.prefix) / "share" / "k25console" / "profiles")  # data-files of a wheel install
    return dirs


def find_profile(name_or_path: str) -> Path:
    """A path as given when it exists, else ``<name>.toml`` in the first profile directory holding it."""
    direct = Path(name_or_path).expanduser()
    if direct.suffix == ".toml" and direct.is_file():
        return direct
    for directory in profile_dirs():
        candidate = directory / f"{name_or_path}.toml"
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in profile_dirs())
    raise FileNotFoundError(
        f"no profile {name_or_path!r}: not a file, and no {name_or_path}.toml in {searched}"
    )
