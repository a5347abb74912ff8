"""What a benchmark run is asked to do: its options (a wire model, ``agent.wire.bench``) and the one
refusal the bench's own parts raise, naming a field.

A request's fields are checked by their model, ``agent.wire.bench_request.BenchRequest`` (the body of
``POST /v1/bench``, the console's request and ``agent bench``'s flags alike); what is left here is the
error type the command line and the run's refusals (``runner.BenchRefused``) share.
"""

from __future__ import annotations

from agent.wire.bench import DEFAULT_CONCURRENCY as DEFAULT_CONCURRENCY
from agent.wire.bench import DEFAULT_MIN_WINDOW_S as DEFAULT_MIN_WINDOW_S
from agent.wire.bench import DEFAULT_REPEATS as DEFAULT_REPEATS
from agent.wire.bench import BenchOptions as BenchOptions
from agent.wire.bench import default_requests_for as default_requests_for


class BenchOptionError(ValueError):
    """A bad option, naming the field and what is allowed."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name
