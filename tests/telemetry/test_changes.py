"""Events derived from consecutive snapshots."""

from __future__ import annotations

from agent.telemetry.changes import telemetry_events
from agent.wire import Finding, Load, Snapshot, Speculation

FINDING = Finding(
    code="queueing", severity="info", title="40 requests wait", explanation="x" * 90, action="y" * 40
)


def snap(seq: int, **spec: object) -> Snapshot:
    return Snapshot(
        seq=seq, time=float(seq), speculation=Speculation(configured=True, **spec), load=Load(running=12)
    )  # type: ignore[arg-type]


def test_on_off_steps_threshold() -> None:
    on = snap(1, on=True, steps=3, threshold=4, threshold_available=True)
    off = snap(
        2,
        on=False,
        steps=0,
        threshold=4,
        threshold_available=True,
        off_reason="above_threshold",
        off_detail="12 running",
    )
    assert telemetry_events(None, on) == []
    (event,) = telemetry_events(on, off)
    assert (event.kind, event.name, event.message) == (
        "speculation",
        "speculation.off",
        "speculation off: 12 running",
    )
    assert event.data == {"reason": "above_threshold", "running": 12}
    assert [e.name for e in telemetry_events(off, on)] == ["speculation.on"]
    two = snap(3, on=True, steps=2, threshold=8, threshold_available=True)
    assert [e.message for e in telemetry_events(on, two)] == [
        "live speculation threshold 4 → 8",
        "speculation steps 3 → 2",
    ], "the cause (a moved threshold) before what it brings"
    unknown = snap(4, on=None)
    assert telemetry_events(on, unknown) == [] and telemetry_events(unknown, off) == []


def test_findings_raised_and_cleared() -> None:
    quiet = Snapshot(seq=1, time=1.0)
    loud = Snapshot(seq=2, time=2.0, findings=[FINDING])
    (raised,) = telemetry_events(quiet, loud)
    assert (raised.kind, raised.name, raised.message) == (
        "finding",
        "finding.raised",
        "info: 40 requests wait",
    )
    assert telemetry_events(loud, loud) == []
    (cleared,) = telemetry_events(loud, quiet)
    assert cleared.name == "finding.cleared" and cleared.data == {"code": "queueing"}


REPRS = ("{'", "None", "True", "False", "[]")


def test_every_message_is_in_operator_words() -> None:
    on = snap(1, on=True, steps=3, threshold=4, threshold_available=True)
    assert [e.message for e in telemetry_events(snap(0, on=False), on)] == [
        "speculation on: 3 draft steps, 12 requests running"
    ]
    unknown_steps = Snapshot(seq=2, time=2.0, speculation=Speculation(configured=True, on=True))
    assert [e.message for e in telemetry_events(snap(0, on=False), unknown_steps)] == [
        "speculation on: step count unknown"
    ]
    bare_off = snap(3, on=False, off_reason="adaptive_chose_zero")
    assert telemetry_events(on, bare_off)[0].message == (
        "speculation off: SGLang's adaptive policy chose 0 draft steps"
    )
    no_reason = snap(4, on=False)
    assert telemetry_events(on, no_reason)[0].message == "speculation off: reason unknown"
    unset = snap(5, on=True, steps=3, threshold=None, threshold_available=True)
    none = snap(6, on=True, steps=3, threshold=0, threshold_available=True)
    assert [e.message for e in telemetry_events(unset, on)] == ["live speculation threshold unknown → 4"]
    assert [e.message for e in telemetry_events(on, none)] == [
        "live speculation threshold 4 → none (speculate at every batch size)"
    ]
    states = [on, unknown_steps, bare_off, no_reason, unset, none, snap(7, on=None)]
    messages = [e.message for a in states for b in states for e in telemetry_events(a, b)]
    assert messages and not [m for m in messages if any(r in m for r in REPRS)]
