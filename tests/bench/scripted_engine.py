"""A scripted stand-in for SGLang's HTTP surface, for the benchmark's tests: every number is set.

Real HTTP on a real socket (uvicorn, as the simulator serves), but the engine is a few lines the
test controls: every ``step_s`` each running request receives ``tokens_per_step(request)`` tokens
(one when the live threshold stops speculation for the running batch), a request finishes at its
``max_new_tokens``, and ``/metrics`` counts what finished the way SGLang does (at the finish, the
whole output). ``foreign_tokens`` adds to the counter tokens no client of ours received (another
client on the server). ``max_running`` caps the running batch; the rest queue.

Only what the benchmark reads is served: ``/health``, ``/server_info`` (the real capture's fields,
with the live read-back kept current), ``/metrics``, ``/flush_cache``, ``/set_internal_state``
and streamed ``/generate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from agent.sglang.live_control import LIVE_STEPS_KEY, LIVE_THRESHOLD_KEY, READBACK_FIELD

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.23-real" / "server_info.json"


@dataclass
class Request:
    index: int
    max_new: int
    prompt_tokens: int
    generated: int = 0
    verifies: int = 0
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False
    aborted: bool = False


@dataclass
class ScriptedEngine:
    step_s: float = 0.002
    tokens_per_step: Callable[[Request, bool, int], int] = lambda req, speculating, batch: (
        3 if speculating else 1
    )
    """Tokens a running request gets per step, given whether the batch speculates (False at or above
    the threshold) and its size."""
    max_running: int = 256
    threshold: int = 0
    launch_steps: int = 3
    foreign_tokens_per_step: int = 0
    running: list[Request] = field(default_factory=list)
    waiting: list[Request] = field(default_factory=list)
    generation_tokens: int = 0
    verify_calls: int = 0
    requests_seen: int = 0
    active_steps: int = 3
    pinned: int = -1
    set_calls: list[dict[str, Any]] = field(default_factory=list)
    flushes: int = 0

    def speculating(self, batch: int) -> bool:
        return not (self.threshold > 0 and batch >= self.threshold)

    def step(self) -> None:
        self.waiting = [r for r in self.waiting if not r.aborted]
        while self.waiting and len(self.running) < self.max_running:
            self.running.append(self.waiting.pop(0))
        if not self.running:
            return
        batch = len(self.running)
        spec = self.speculating(batch)
        self.active_steps = self.launch_steps if spec else 0
        self.generation_tokens += self.foreign_tokens_per_step
        for req in list(self.running):
            if req.aborted:
                self.running.remove(req)
                continue
            req.generated = min(req.max_new, req.generated + max(1, self.tokens_per_step(req, spec, batch)))
            req.verifies += 1
            if req.generated >= req.max_new:
                req.finished = True
                self.generation_tokens += req.generated
                self.verify_calls += req.verifies
                self.running.remove(req)
            req.wake.set()

    async def run(self) -> None:
        while True:
            self.step()
            await asyncio.sleep(self.step_s)

    # ---------------------------------------------------------------- HTTP

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = copy.deepcopy(_FIXTURE_INFO)
        info["max_running_requests"] = self.max_running
        state = info["internal_states"][0]
        state["effective_max_running_requests_per_dp"] = self.max_running
        state[READBACK_FIELD] = {
            "threshold": self.threshold,
            "pinned_steps": self.pinned,
            "active_steps": self.active_steps,
            "prebuilt_steps": [0, 1, 2, 3],
            "ema_accept_len": 2.0,
            "slots": {},
        }
        return info

    def metrics(self) -> str:
        labels = 'model_name="tiny",engine_type="unified"'
        return (
            "# TYPE sglang:generation_tokens_total counter\n"
            f"sglang:generation_tokens_total{{{labels}}} {self.generation_tokens}\n"
            "# TYPE sglang:spec_verify_calls_total counter\n"
            f"sglang:spec_verify_calls_total{{{labels}}} {self.verify_calls}\n"
            "# TYPE sglang:num_running_reqs gauge\n"
            f'sglang:num_running_reqs{{{labels},tp_rank="0",pp_rank="0",moe_ep_rank="0"}} {len(self.running)}\n'
        )

    def apply(self, args: dict[str, Any]) -> bool:
        self.set_calls.append(dict(args))
        if LIVE_THRESHOLD_KEY in args:
            self.threshold = int(args[LIVE_THRESHOLD_KEY])
        if LIVE_STEPS_KEY in args:
            self.pinned = int(args[LIVE_STEPS_KEY])
        return True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if path == "/generate" and method == "POST":
            await self._generate(json.loads(body), send, receive)
            return
        if path == "/health":
            answer, kind = b"", "text/plain"
        elif path == "/server_info":
            answer, kind = json.dumps(self.server_info()).encode(), "application/json"
        elif path == "/metrics":
            answer, kind = self.metrics().encode(), "text/plain; version=0.0.4"
        elif path == "/flush_cache":
            self.flushes += 1
            answer, kind = b"Cache flushed.", "text/plain"
        elif path == "/set_internal_state":
            answer, kind = (
                json.dumps([self.apply(json.loads(body)["server_args"])]).encode(),
                "application/json",
            )
        else:
            await _respond(send, 404, b"not found", "text/plain")
            return
        await _respond(send, 200, answer, kind)

    async def _generate(self, body: dict[str, Any], send: Any, receive: Any) -> None:
        req = Request(
            self.requests_seen, int(body["sampling_params"]["max_new_tokens"]), len(body["input_ids"])
        )
        self.requests_seen += 1
        self.waiting.append(req)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        watch = asyncio.create_task(_disconnect(receive, req))
        try:
            sent = 0
            while not req.finished:
                await req.wake.wait()
                req.wake.clear()
                if req.aborted:
                    return
                if req.generated > sent:
                    sent = req.generated
                    meta = {"completion_tokens": sent, "prompt_tokens": req.prompt_tokens}
                    chunk = json.dumps({"text": "", "meta_info": meta}).encode()
                    await send(
                        {"type": "http.response.body", "body": b"data: " + chunk + b"\n\n", "more_body": True}
                    )
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
        finally:
            watch.cancel()
            req.aborted = not req.finished


async def _disconnect(receive: Any, req: Request) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            req.aborted = True
            req.wake.set()
            return


async def _respond(send: Any, status: int, body: bytes, kind: str) -> None:
    headers = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_FIXTURE_INFO: dict[str, Any] = json.loads(FIXTURE.read_text())


@contextlib.asynccontextmanager
async def serve(engine: ScriptedEngine) -> AsyncIterator[str]:
    """Serve ``engine`` on a free loopback port; yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    sock.setblocking(False)
    config = uvicorn.Config(engine, log_level="warning", access_log=False, lifespan="off", ws="none")
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    serving = asyncio.create_task(server.main_loop())
    stepping = asyncio.create_task(engine.run())
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stepping.cancel()
        for req in engine.running + engine.waiting:
            req.aborted = True
            req.wake.set()
        server.should_exit = True
        await serving
        await server.shutdown(sockets=[sock])
        sock.close()
