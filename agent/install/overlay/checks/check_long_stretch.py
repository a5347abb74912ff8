"""A long 0-step stretch with thousands of arrivals and finishes keeps every structure bounded (issue 46).

On the real engine "off" held parity at c=64 for about a minute and then slowed; the candidates were
state of the plain path that grows while requests come and go at 0 steps. Here 8 request slots serve
2,400 requests back to back: each arrives as a plain prefill that joins the 0-step batch, decodes a
few 0-step plain rounds and finishes, its slot taken by the next; now and then the batch drops below
the threshold for one drafting round (the catch-up). Every size the read-back reports
(``ZeroStepController.state_sizes``) must be the same late in the run as early, and the Python heap
must not grow with the requests served.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from .stand_ins import ForwardMode, Overlay
from .world import World

SLOTS = 8
REQUESTS = 2400
CHECKPOINT = 1200
"""Sizes and the heap are first read after this many requests: by then every buffer has its working
size and torch's own caches are warm (on CPU the heap grows about 70 KB over the first 1,200 requests,
then stays within a few KB)."""
HEAP_GROWTH_BYTES = 64 * 1024
"""What the Python heap may grow over the last 1,200 requests: less than one pointer kept per slot of
every plain round (a list of them grows about 110 KB there; a dict entry per request more)."""


def _length(request: int) -> tuple[int, int]:
    """A request's prompt and how many 0-step rounds it decodes (deterministic, spread)."""
    return 2 + request % 7, 3 + (request * 7) % 11


class Stretch:
    """The slots' requests: each slot's length now and how many rounds it has left."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.lens: dict[int, int] = {}
        self.left: dict[int, int] = {}
        self.served = 0
        self.rounds = 0
        self.resumes = 0

    def arrive(self, slot: int) -> None:
        prompt, rounds = _length(self.served)
        self.served += 1
        plain, _ = self.world.hooked_prefill([slot], [prompt], [prompt])
        assert plain, "an arrival while the batch decodes at 0 steps is prefilled plainly"
        self.lens[slot], self.left[slot] = prompt, rounds

    def round(self) -> None:
        slots = sorted(self.lens)
        self.world.zero_round(slots, [self.lens[s] for s in slots])
        self.rounds += 1
        for s in slots:
            self.lens[s] += 1
            self.left[s] -= 1

    def resume(self) -> None:
        """One drafting round of the batch less its last request (below the threshold): the catch-up."""
        slots = sorted(self.lens)[:3]
        batch = self.world.batch(slots, [self.lens[s] for s in slots], ForwardMode.DECODE)
        self.world.ctl.maybe_catch_up(batch)
        self.resumes += 1

    def finish(self) -> None:
        for s in [s for s, n in self.left.items() if n <= 0]:
            del self.lens[s], self.left[s]

    def until(self, served: int) -> None:
        while self.served < served:
            self.finish()
            for slot in range(SLOTS):
                if slot not in self.lens and self.served < served:
                    self.arrive(slot)
            self.round()
            if self.rounds % 97 == 0:
                self.resume()
        self.finish()


def _heap(world: World) -> tracemalloc.Snapshot:
    """The traced heap, less what the world itself keeps for other checks (its forwards and extends)."""
    world.forwards.clear()
    world.extends.clear()
    world.last_round = None
    gc.collect()
    return tracemalloc.take_snapshot()


def _sizes(world: World) -> dict[str, Any]:
    sizes: dict[str, Any] = world.ctl.state_sizes()
    return sizes


def test_thousands_of_arrivals_and_finishes_at_0_steps_keep_every_structure_bounded(zero: Overlay) -> None:
    """2,400 requests through 8 slots at 0 steps: the plain path's state sizes and the heap stay flat"""
    world = World(zero, cpu_lens=False)
    world.forwards = []  # the world keeps every forward for other checks; this one needs none
    stretch = Stretch(world)
    # The first requests fill the batch up to the threshold with plain rounds (as plain_rounds does).
    for slot in range(4):
        world.prefill([slot], [4], [4])
        stretch.lens[slot], stretch.left[slot] = 4, 2
    stretch.round()
    tracemalloc.start()  # from the start: a heap compared between two traced snapshots, both whole
    try:
        stretch.until(CHECKPOINT)
        early, before = _sizes(world), _heap(world)
        stretch.until(REQUESTS)
        after = _heap(world)
    finally:
        tracemalloc.stop()
    late = _sizes(world)
    counters = world.ctl.counters
    assert stretch.served == REQUESTS and counters.plain_prefills >= REQUESTS - 4, counters.plain_prefills
    assert counters.errors == 0 and counters.last_error is None, counters.last_error
    assert stretch.resumes >= 10 and counters.catchups >= 10, (stretch.resumes, counters.catchups)
    assert late == early, f"a structure grew with the requests served: {early} -> {late}"
    assert late["missed_slots"] <= SLOTS and late["ring_slots"] == SLOTS, late
    assert late["ring_held"] <= SLOTS * late["ring_width"], late
    grew = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    top = after.compare_to(before, "lineno")[:3]
    assert grew < HEAP_GROWTH_BYTES, (
        f"the Python heap grew {grew} bytes over {REQUESTS - CHECKPOINT} requests: {top}"
    )
