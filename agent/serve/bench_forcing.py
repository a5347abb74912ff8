"""A benchmark's forced live settings are a change like any other: written ahead, put back by whoever
comes next.

A compare forces the live threshold (and pins the step policy) on the engine for each arm and puts
the operator's values back at its end. Killed before that end (an agent killed with -9 mid-run, an
``agent bench compare`` killed the same way), it left the arm's value in force, and the next agent's
reconciliation took it for the operator's ("kept what is in force"). Now:

* before anything is forced, an intent (``bench_force``, fsynced) names the run, who forces (a pid
  and its start time) and the live values to put back; the run's own restore writes its outcome;
* the agent's own run: ``guard`` is the ``LiveGuard`` its compare calls (``agent.bench.guard``);
* a run of ``agent bench compare`` at this agent's engine: its start announce writes the intent with
  what the engine holds then; at its end announce the agent checks the engine and puts the values
  back where the run did not; a CLI that dies without an end (its pid gone) is put right the same way
  by the agent's watch;
* an intent found without an outcome at the agent's start (the agent, or a CLI, was killed): the
  next agent puts the values back before it reconciles (``put_back``), and audits it. One whose
  forcer still runs (a CLI run outliving an agent restart) is left to it and watched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from agent.control.audit import AuditLog
from agent.control.live import apply_live, readback_words
from agent.engine import proc
from agent.sglang.client import EngineClient, EngineError
from agent.sglang.info_view import LiveSpec
from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY, READBACK_OF, RELEASE_PINNED_STEPS

log = logging.getLogger(__name__)

KIND = "bench_force"
WATCH_INTERVAL_S = 1.0
"""How often the agent looks whether a forcing ``agent bench`` process still runs."""
Emit = Callable[[str, str, dict[str, Any]], None]


def forcings(pending: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``bench_force`` intents among intents left without an outcome."""
    return [i for i in pending if (i.get("action") or {}).get("kind") == KIND]


def forcer_alive(action: dict[str, Any]) -> bool:
    """Whether the process that forces (``pid`` started at ``start_ticks``) still runs."""
    pid, ticks = action.get("pid"), action.get("start_ticks")
    if not isinstance(pid, int) or not isinstance(ticks, int):
        return False
    return pid != os.getpid() and proc.is_same_process(pid, ticks)


def shows(live: LiveSpec | None, restore: dict[str, int]) -> bool:
    """Whether the engine's read-back holds ``restore`` (a released pin reads as released or none)."""
    if live is None:
        return False
    if LIVE_THRESHOLD_KEY in restore and live.threshold != restore[LIVE_THRESHOLD_KEY]:
        return False
    steps = restore.get(LIVE_STEPS_KEY)
    if steps == RELEASE_PINNED_STEPS:
        return not live.pinned
    return steps is None or live.pinned_steps == steps


def _values(args: dict[str, int]) -> dict[str, int]:
    """Live keys as the audit and the read-back name them."""
    return {READBACK_OF.get(k, k): v for k, v in args.items()}


class ForcingLedger:
    """The intents and outcomes of benchmarks' forced settings, and putting the values back."""

    def __init__(
        self,
        *,
        http: httpx.AsyncClient,
        headers: Callable[[], dict[str, str]],
        audit: AuditLog,
        emit: Emit,
    ) -> None:
        self.http, self.headers, self.audit, self.emit = http, headers, audit, emit

    def begin(
        self,
        bench_id: str,
        restore: dict[str, int],
        *,
        operator: str | None,
        source: dict[str, Any] | None,
        pid: int | None = None,
    ) -> dict[str, Any]:
        """The intent (fsynced; ``AuditUnavailable`` when it cannot be: force nothing then)."""
        pid = os.getpid() if pid is None else pid
        stat = proc.read_stat(pid)
        action = {
            "kind": KIND,
            "action_id": f"force-{bench_id}",
            "bench_id": bench_id,
            "args": restore,
            "pid": pid,
            "start_ticks": None if stat is None else stat.start_ticks,
        }
        after = _values(restore)
        message = f"benchmark {bench_id} forces the live settings; to put back: {readback_words(after)}"
        self.audit.append(operator=operator, action=action, before=None, after=after, phase="intent",
                          result={"status": "intent", "message": message}, source=source)  # fmt: skip
        return {"action": action, "operator": operator, "source": source}

    def end(self, op: dict[str, Any], ok: bool, message: str, live: dict[str, Any] | None = None) -> None:
        """The outcome: the values are back (``ok``) or not; a full disk only delays the line."""
        action = op["action"]
        after = _values(action["args"])
        self.audit.append_or_later(f"the outcome of {action['action_id']}", operator=op["operator"],
                                   action=action, before=None, after=after, phase="outcome",
                                   result={"status": "applied" if ok else "failed", "message": message},
                                   source=op["source"], live=live if ok else None)  # fmt: skip

    def guard(self, bench_id: str, operator: str | None, source: dict[str, Any] | None) -> RunGuard:
        return RunGuard(self, bench_id, operator, source)

    async def read(self, url: str) -> LiveSpec | None:
        """The engine's live read-back; None without one or when it does not answer."""
        client = EngineClient(url, self.http, headers=self.headers(), timeout_s=10.0)
        try:
            return await client.live_state()
        except EngineError:
            return None

    async def put_back(self, op: dict[str, Any], url: str | None, why: str) -> bool:
        """Put the values of ``op``'s intent back on the engine at ``url`` where it does not show
        them, and write the outcome; True when the engine holds them after."""
        action = op["action"]
        args: dict[str, int] = dict(action.get("args") or {})
        want = _values(args)
        bench_id = action.get("bench_id")
        if url is None:
            self.end(
                op, False, f"{why}; no engine answers, so nothing could be put back ({readback_words(want)})"
            )
            return False
        live = await self.read(url)
        if live is not None and shows(live, args):
            found = {
                READBACK_OF[LIVE_THRESHOLD_KEY]: live.threshold,
                READBACK_OF[LIVE_STEPS_KEY]: live.pinned_steps,
            }
            said = f"{why}; the engine already holds the operator's values: {readback_words(want)}"
            self.end(op, True, said, found)
            return True
        outcome = await apply_live(self.http, url, args, self.headers())
        if outcome.ok:
            said = f"{why}; the operator's values are put back: {outcome.message}"
            self.end(op, True, said, outcome.readback)
            self.emit("engine.live_restored", f"Benchmark {bench_id} was cut short: {said}", want)
            return True
        said = f"{why}; the operator's values could not be put back ({outcome.message}): set them again"
        self.end(op, False, said)
        self.emit("engine.live_restore_failed", f"Benchmark {bench_id} was cut short: {said}", want)
        return False


class RunGuard:
    """The ``LiveGuard`` of one run of this agent: intent before it forces, outcome after it restores."""

    def __init__(
        self, ledger: ForcingLedger, bench_id: str, operator: str | None, source: dict[str, Any] | None
    ) -> None:
        self.ledger, self.bench_id, self.operator, self.source = ledger, bench_id, operator, source
        self.op: dict[str, Any] | None = None

    def forcing(self, restore: dict[str, int]) -> None:
        self.op = self.ledger.begin(self.bench_id, restore, operator=self.operator, source=self.source)

    def restored(self, ok: bool, message: str) -> None:
        if self.op is not None:
            self.ledger.end(self.op, ok, message)
            self.op = None


class ForcingWatch:
    """Forcings of ``agent bench`` processes this agent heard of: put right when the process ends
    without its end announce (killed), checked when it ends with one."""

    def __init__(
        self, ledger: ForcingLedger, url: Callable[[], str | None], gone: Callable[[str], None]
    ) -> None:
        self.ledger, self.url, self.gone = ledger, url, gone
        self.open: dict[str, dict[str, Any]] = {}
        """bench_id → the op of its intent."""
        self._task: asyncio.Task[None] | None = None

    async def announced(
        self, bench_id: str, *, operator: str | None, source: dict[str, Any] | None, pid: int | None
    ) -> None:
        """An ``agent bench compare`` at this agent's engine starts: what the engine holds now is the
        operator's, written ahead before the run forces anything (it waits for this answer).
        ``AuditUnavailable`` when the intent cannot be written."""
        url = self.url()
        live = None if url is None else await self.ledger.read(url)
        if live is None or live.threshold is None:
            return  # no live control: the run cannot force anything
        steps = live.pinned_steps if live.pinned and live.pinned_steps is not None else RELEASE_PINNED_STEPS
        restore = {LIVE_THRESHOLD_KEY: live.threshold, LIVE_STEPS_KEY: steps}
        self.watch(self.ledger.begin(bench_id, restore, operator=operator, source=source, pid=pid or -1))

    def watch(self, op: dict[str, Any]) -> None:
        self.open[str(op["action"]["bench_id"])] = op
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="bench-forcing-watch")

    async def ended(self, bench_id: str, state: str) -> None:
        op = self.open.pop(bench_id, None)
        if op is not None:
            await self.ledger.put_back(op, self.url(), f"benchmark {bench_id} ended ({state})")

    async def _loop(self) -> None:
        while self.open:
            await asyncio.sleep(WATCH_INTERVAL_S)
            for bench_id, op in list(self.open.items()):
                if op["action"].get("start_ticks") is None or forcer_alive(op["action"]):
                    continue  # a process this host cannot see is judged by its end announce only
                self.open.pop(bench_id, None)
                pid = op["action"].get("pid")
                why = f"benchmark {bench_id}: its agent bench process (pid {pid}) ended without saying how its run ended"
                try:
                    await self.ledger.put_back(op, self.url(), why)
                except Exception:
                    log.exception("putting back what benchmark %s forced failed", bench_id)
                self.gone(bench_id)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
