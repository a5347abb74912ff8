"""The window each number covers, in the words its label carries ("over 10 s", "last 1 s").

The agent computes every Snapshot number over a stated window (``Throughput.window_s``, its
``raw_window_s``, ``Latency.window_s``, ``Speculation.accept_window_s``) and says where the accept
length came from (``accept_source``). The console writes those windows next to the numbers, so a
figure, a chart legend and the badge are read against the same window, never one assumed here.
"""

from __future__ import annotations

from agent.wire import Speculation, Throughput
from agent.wire.snapshot import OutputCounter
from console.widgets.format import span


def over(seconds: float | None) -> str:
    """ " over 10 s", or nothing while the agent states no window (no data in it yet)."""
    return "" if seconds is None else f" over {span(seconds)}"


def raw_label(t: Throughput) -> str:
    """ "raw, last 1 s": the one-tick rate the ``r`` key shows beside the smoothed one."""
    return "raw" if t.raw_window_s is None else f"raw, last {span(t.raw_window_s)}"


ACCEPT_SOURCE_WORDS = {
    "gauge": " (SGLang's gauge: its last decode-log window)",
    "server_info": " (lifetime average from /server_info)",
}
"""Said beside an accept length that is not the window's own counters."""


def accept_note(spec: Speculation) -> str:
    """ " over 10 s" for the window's counters; otherwise where the number came from."""
    if spec.accept_source in ACCEPT_SOURCE_WORDS:
        return ACCEPT_SOURCE_WORDS[spec.accept_source]
    return over(spec.accept_window_s)


COUNTER_WORDS: dict[OutputCounter | None, str] = {
    "decode": (
        "Output tok/s here is SGLang's decode-token counter: the tokens its scheduler decodes for "
        "every client (other traffic too), advanced every few decode batches"
    ),
    "generation": (
        "Output tok/s here is SGLang's generation-token counter: the output tokens of every client's "
        "requests (other traffic too), counted when each request finishes"
    ),
    None: "Output tok/s here counts the tokens every client generates (other traffic too)",
}
"""What the Overview's output tok/s counts (``Throughput.output_counter``), for the note that says
why it differs from a benchmark's table."""
