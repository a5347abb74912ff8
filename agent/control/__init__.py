"""Operator actions: request → plan (live | restart | rejected | noop) → confirm → apply → audit."""
