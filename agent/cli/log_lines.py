"""The agent's log (its stderr): one record, one line, whatever a record quotes.

A log record may quote what a client sent (a profile name, a benchmark's error, a URL) or what an
exception says about it. Were a newline or a terminal escape in it written as it is, a client could
forge a line ("2026-12-07 16:00:00,000 INFO a: FORGED") or recolour an operator's terminal. So the one
formatter of every handler ``agent serve`` installs writes each record's message, its arguments put
in, through ``printable_words`` (``\\n``, ``\\x1b``, ``\\u202e`` as their escapes), and indents every
line of a traceback below the record's own, so that no line of the log that starts at the margin
comes from anything but a record. The checks on input (``PRINTABLE`` in the request models) refuse
such characters where they cannot mean anything; this is the floor beneath them, for every record.
"""

from __future__ import annotations

import logging
import sys

from agent.profile.words import printable_words

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _indented(text: str) -> str:
    """A traceback's lines (written below the record's own), each escaped but for its line breaks and
    each indented."""
    return "\n".join("  " + printable_words(line) for line in text.split("\n"))


class OneLineFormatter(logging.Formatter):
    """A record's message on one line, escaped; its traceback, if any, indented below it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable_words(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indented(super().formatStack(stack_info))


def setup_logging(level: str) -> None:
    """The agent's log on stderr, every record through :class:`OneLineFormatter` (uvicorn's too: its
    loggers propagate here, ``log_config=None``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(LOG_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
