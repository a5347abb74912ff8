"""The simulated SGLang 0.5.23 server: its HTTP surface over the engine model.

Served by uvicorn (httptools when installed) with a small Starlette app; routes are thin and hand
requests to the engine through ``agent.sim.runner``. Authentication follows ``srt/utils/auth.py``:
``/health*``, ``/ready``, ``/metrics`` always open; NORMAL routes need the API key when one is set;
ADMIN_OPTIONAL routes (``/set_internal_state``, ``/flush_cache``) need the admin key when set,
else the API key when set, else nothing. Unauthorized → 401 ``{"error": "Unauthorized"}``.

In-process use (tests, the demo)::

    async with run_sim(profile, port=0, speedup=20, seed=1) as sim:
        sim.url, sim.engine
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from agent.profile.schema import Profile
from agent.sglang import live_control, rules
from agent.sglang.server_info import SGLANG_SET_INTERNAL_STATE_KEYS
from agent.sim import metrics, responses, text
from agent.sim.config import sim_config
from agent.sim.engine import Engine, SimRequest
from agent.sim.info import ServerInfo
from agent.sim.protocol import BadRequest, GenerationRequest, parse_chat, parse_completion, parse_generate
from agent.sim.runner import EngineRunner

Handler = Callable[[Request], Awaitable[Response]]


class Auth(Enum):
    OPEN = "open"
    NORMAL = "normal"
    ADMIN_OPTIONAL = "admin_optional"


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _sse(obj: Any) -> bytes:
    return b"data: " + _dumps(obj) + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def _error(status: int, message: str, err_type: str | None = None) -> JSONResponse:
    """0.5.23's ``ErrorResponse`` shape (``openai/protocol.py``)."""
    return JSONResponse(
        {
            "object": "error",
            "message": message,
            "type": err_type or "BadRequestError",
            "param": None,
            "code": status,
        },
        status_code=status,
    )


class SimServer:
    def __init__(
        self,
        profile: Profile,
        *,
        port: int,
        speedup: float = 1.0,
        seed: int = 0,
        api_key: str | None = None,
        admin_api_key: str | None = None,
    ) -> None:
        self.config = sim_config(profile, api_key=api_key, admin_api_key=admin_api_key)
        self.engine = Engine(self.config, seed=seed)
        self.runner = EngineRunner(self.engine, speedup)
        self.info = ServerInfo(self.engine, port, seed)
        self.registry = metrics.registry_for(self.engine)
        self.accept_thresholds = {
            "speculative_accept_threshold_single": 1.0,
            "speculative_accept_threshold_acc": 1.0,
        }
        routes = [
            self._route("/health", self.health, ["GET"], Auth.OPEN),
            self._route("/health_generate", self.health, ["GET"], Auth.OPEN),
            self._route("/ready", self.ready, ["GET"], Auth.OPEN),
            self._route("/metrics", self.metrics, ["GET"], Auth.OPEN),
            self._route("/model_info", self.model_info, ["GET"], Auth.NORMAL),
            self._route("/get_model_info", self.model_info, ["GET"], Auth.NORMAL),
            self._route("/server_info", self.server_info, ["GET"], Auth.NORMAL),
            self._route("/get_server_info", self.server_info, ["GET"], Auth.NORMAL),
            self._route("/v1/models", self.models, ["GET"], Auth.NORMAL),
            self._route("/set_internal_state", self.set_internal_state, ["POST", "PUT"], Auth.ADMIN_OPTIONAL),
            self._route("/flush_cache", self.flush_cache, ["GET", "POST"], Auth.ADMIN_OPTIONAL),
            self._route("/generate", self.generate, ["POST", "PUT"], Auth.NORMAL),
            self._route("/v1/chat/completions", self.chat, ["POST"], Auth.NORMAL),
            self._route("/v1/completions", self.completions, ["POST"], Auth.NORMAL),
        ]
        self.app = Starlette(routes=routes)

    # ------------------------------------------------------------------ auth

    def _allowed(self, request: Request, level: Auth) -> bool:
        if level is Auth.OPEN or request.method == "OPTIONS":
            return True
        key = self.config.api_key
        admin = self.config.admin_api_key
        expected = (admin or key) if level is Auth.ADMIN_OPTIONAL else key
        if not expected:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(token.encode(), expected.encode())

    def _route(self, path: str, handler: Handler, methods: list[str], level: Auth) -> Route:
        async def endpoint(request: Request) -> Response:
            if not self._allowed(request, level):
                return JSONResponse({"error": "Unauthorized"}, status_code=401)
            return await handler(request)

        return Route(path, endpoint, methods=methods)

    # ------------------------------------------------------------------ plain routes

    async def health(self, request: Request) -> Response:
        return Response(status_code=200)

    async def ready(self, request: Request) -> Response:
        return Response(status_code=200)

    async def metrics(self, request: Request) -> Response:
        return Response(metrics.render(self.registry), media_type=metrics.CONTENT_TYPE)

    async def model_info(self, request: Request) -> Response:
        return JSONResponse(self.info.model_info())

    async def server_info(self, request: Request) -> Response:
        return JSONResponse(self.info.server_info())

    async def models(self, request: Request) -> Response:
        return JSONResponse(self.info.models())

    async def flush_cache(self, request: Request) -> Response:
        if self.engine.flush():
            return PlainTextResponse(
                "Cache flushed.\nPlease check backend logs for more details. "
                "(When there are running or waiting requests, the operation will not be performed.)\n"
            )
        return PlainTextResponse("Flush cache failed.\n", status_code=400)

    # ------------------------------------------------------------------ /set_internal_state

    async def set_internal_state(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request body is not valid JSON", "Bad Request")
        server_args = body.get("server_args") if isinstance(body, dict) else None
        if not isinstance(server_args, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in server_args.values()
        ):
            return _error(
                400, "server_args must be an object of numbers (Dict[str, Union[int, float]])", "Bad Request"
            )
        return JSONResponse([self.apply_internal_state(server_args)])

    def apply_internal_state(self, server_args: dict[str, int | float]) -> bool:
        """Validate every key first (one bad key rejects the whole request), then apply all."""
        for key, value in server_args.items():
            if self._reject_reason(key, value) is not None:
                return False
        controller = self.engine.controller
        for key, value in server_args.items():
            if key == live_control.LIVE_THRESHOLD_KEY and controller is not None:
                controller.threshold = int(value)
            elif key == live_control.LIVE_STEPS_KEY and controller is not None:
                controller.pinned_steps = int(value)
            elif key in self.accept_thresholds:
                # Acceptance statistics describe the previous threshold: start over, as 0.5.23 does.
                self.engine.stats.reset_spec_totals()
                self.info.overrides[key] = value
            else:
                self.info.overrides[key] = value
        return True

    def _reject_reason(self, key: str, value: int | float) -> str | None:
        if key in live_control.LIVE_KEYS:
            if self.engine.controller is None:
                return "adaptive speculation is not running"
            return rules.validate_live_value(self.config.profile, key, value)
        if key not in SGLANG_SET_INTERNAL_STATE_KEYS:
            return f"Updating {key} is not supported."
        if key == "pp_max_micro_batch_size":
            upper = self.config.max_running_requests
            return None if 1 <= value <= upper else f"out of the valid range [1, {upper}]"
        if key.startswith("dspark_"):
            return f"{key} requires a DSpark draft worker."
        return None

    # ------------------------------------------------------------------ generation

    async def _body(self, request: Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            raise BadRequest("the request body is not valid JSON") from None

    async def generate(self, request: Request) -> Response:
        try:
            gen = parse_generate(
                await self._body(request), self.config.context_length, self.config.served_model_name
            )
        except BadRequest as exc:
            return JSONResponse({"error": {"message": str(exc)}}, status_code=400)
        return await self._serve(gen)

    async def chat(self, request: Request) -> Response:
        return await self._openai(request, parse_chat)

    async def completions(self, request: Request) -> Response:
        return await self._openai(request, parse_completion)

    async def _openai(self, request: Request, parse: Callable[[Any, int], GenerationRequest]) -> Response:
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return _error(400, "Unsupported Media Type: Only 'application/json' is allowed", "Bad Request")
        try:
            gen = parse(await self._body(request), self.config.context_length)
        except BadRequest as exc:
            return _error(400, str(exc))
        return await self._serve(gen)

    def _new_request(self, gen: GenerationRequest, wake: asyncio.Event) -> SimRequest:
        eng = self.engine
        rid = gen.rid or eng.new_rid()
        max_new = gen.max_new_tokens
        if max_new is None:
            max_new = self.config.context_length - gen.input_len
        natural = None if gen.ignore_eos else max(1, int(eng.rng.lognormvariate(5.4, 0.6)))
        return SimRequest(
            rid=rid,
            input_len=gen.input_len,
            max_new_tokens=max_new,
            ignore_eos=gen.ignore_eos,
            stream=gen.stream,
            natural_len=natural,
            notify=lambda _req: wake.set(),
        )

    async def _serve(self, gen: GenerationRequest) -> Response:
        wake = asyncio.Event()
        req = self._new_request(gen, wake)
        if req.max_new_tokens == 0:
            return JSONResponse({"error": {"message": "max_new_tokens must be at least 1"}}, status_code=400)
        self.runner.submit(req)
        if gen.stream:
            return StreamingResponse(self._stream(gen, req, wake), media_type="text/event-stream")
        try:
            while not req.finished:
                await wake.wait()
                wake.clear()
        except asyncio.CancelledError:
            self.runner.abort(req)
            raise
        draft = self.config.draft_tokens
        if gen.kind == "generate":
            return JSONResponse(responses.generate_body(req, True, draft))
        return JSONResponse(responses.openai_response(gen, req, int(time.time()), draft))

    async def _stream(
        self, gen: GenerationRequest, req: SimRequest, wake: asyncio.Event
    ) -> AsyncIterator[bytes]:
        created = int(time.time())
        draft = self.config.draft_tokens
        sent = 0
        text_so_far = ""
        ids_so_far: list[int] = []
        try:
            if gen.kind == "chat":
                yield _sse(responses.content_chunk(gen, req, created, 0, 0, role=True))
            while True:
                await wake.wait()
                wake.clear()
                now = req.output_len
                final = req.finished
                if now > sent or final:
                    if gen.kind == "generate":
                        text_so_far += text.words(req.rid, sent, now)
                        ids_so_far += text.token_ids(req.rid, sent, now)
                        body = {
                            "text": text_so_far,
                            "output_ids": ids_so_far,
                            "meta_info": responses.meta_info(req, final, draft),
                        }
                        yield _sse(body)
                    elif now > sent:
                        yield _sse(responses.content_chunk(gen, req, created, sent, now))
                    sent = now
                if final:
                    break
            if gen.kind != "generate":
                if req.aborted:
                    yield _sse(
                        {"error": {"message": "The request was aborted.", "type": "abort", "code": 499}}
                    )
                else:
                    yield _sse(responses.finish_chunk(gen, req, created))
                    if gen.return_spec_details:
                        yield _sse(responses.sglext_chunk(gen, req, created, draft))
                    if gen.include_usage:
                        yield _sse(responses.usage_chunk(gen, req, created))
            yield SSE_DONE
        finally:
            if not req.finished:
                self.runner.abort(req)

    def abort_all(self) -> None:
        eng = self.engine
        for req in [*eng.running, *eng.waiting, *([eng.chunked] if eng.chunked else [])]:
            eng.abort(req)
            if req.notify is not None:
                req.notify(req)


@dataclass
class RunningSim:
    url: str
    port: int
    server: SimServer

    @property
    def engine(self) -> Engine:
        return self.server.engine

    @property
    def runner(self) -> EngineRunner:
        return self.server.runner


def _http_impl() -> str:
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


@asynccontextmanager
async def run_sim(
    profile: Profile,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    speedup: float = 1.0,
    seed: int = 0,
    api_key: str | None = None,
    admin_api_key: str | None = None,
) -> AsyncIterator[RunningSim]:
    """Serve a simulated engine for ``profile`` on ``host:port`` (0 = any free port) until the block exits."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    actual_port = int(sock.getsockname()[1])
    server = SimServer(
        profile, port=actual_port, speedup=speedup, seed=seed, api_key=api_key, admin_api_key=admin_api_key
    )
    config = uvicorn.Config(
        server.app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http=_http_impl(),
        ws="none",
        timeout_graceful_shutdown=2,
        backlog=2048,
    )
    config.load()
    uv = uvicorn.Server(config)
    uv.lifespan = config.lifespan_class(config)
    await uv.startup(sockets=[sock])
    main_loop = asyncio.create_task(uv.main_loop())
    server.runner.start()
    url_host = f"[{host}]" if ":" in host else host
    try:
        yield RunningSim(url=f"http://{url_host}:{actual_port}", port=actual_port, server=server)
    finally:
        await server.runner.stop()
        server.abort_all()
        uv.should_exit = True
        await main_loop
        await uv.shutdown(sockets=[sock])
        sock.close()
