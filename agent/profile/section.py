"""What every profile section shares: unknown keys refused, and the error that names a key.

Apart from ``schema`` so that a section may live in its own module (``health``) and still be one
of the profile's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class KeyedValueError(ValueError):
    """A cross-field rule broken by one key; carries that key so the error can name it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class _Section(BaseModel):
    """Every section refuses unknown keys: a typo must be an error, not a silently ignored setting."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, validate_default=True)
