"""The ASGI application of ``loadout serve``: OpenAI-compatible routes over one Engine.

Routes: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/completions``, ``GET /metrics`` (Prometheus text) and ``GET /v1/loadout/status``
(live state for the GUI). The engine owns the model on its own thread; handlers only
parse, submit, and stream the chunks back (``async for`` over the request handle, no
thread per request). The app answers while the model loads: ``/health`` says 503
``loading`` with the progress, and model routes answer 503 with ``Retry-After``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from engine.errors import (
    ChatTemplateError,
    ContextOverflowError,
    EngineClosedError,
    EngineError,
    QueueFullError,
)
from engine.metrics import Metrics
from engine.requests import Chunk, GenerationRequest, RequestHandle
from engine.server import openai_schema as oa
from engine.server import sse
from engine.server import tools as toolcalls
from engine.server.openai_schema import ApiError, ParsedRequest, ServedModel
from engine.server.security import (
    AuthMiddleware,
    BodyLimitMiddleware,
    BodyTooLarge,
    SecurityPolicy,
)
from engine.server.server_metrics import ServerMetrics

log = logging.getLogger(__name__)

RETRY_AFTER_S = "1"
ENDPOINTS = frozenset({"/health", "/v1/models", "/v1/chat/completions", "/v1/completions",
                       "/metrics", "/v1/loadout/status"})


class EngineLike(Protocol):
    """The part of :class:`engine.runtime.Engine` the server uses."""

    def submit(self, request: GenerationRequest) -> RequestHandle: ...
    def render_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None,
                    add_generation_prompt: bool = True) -> str: ...
    def status(self) -> dict[str, Any]: ...
    @property
    def model_name(self) -> str: ...
    @property
    def n_ctx_per_seq(self) -> int: ...


def template_renders_tools(engine: EngineLike) -> bool:
    """Whether the model's chat template shows declared tools to the model."""
    try:
        text = engine.render_chat([{"role": "user", "content": "hi"}],
                                  tools=toolcalls.probe_tools())
    except Exception:  # a template that chokes on tools does not support them
        log.debug("chat template failed with tools", exc_info=True)
        return False
    return toolcalls.PROBE_TOOL_NAME in text


class ServerState:
    """What the app serves: the engine once loaded, or the load's progress or failure."""

    def __init__(self, model_id: str | None = None, aliases: Sequence[str] = ()) -> None:
        self.engine: EngineLike | None = None
        self.served: ServedModel | None = None
        self.model_id = model_id
        self.aliases = frozenset(aliases)
        self.load_progress = 0.0
        self.load_error: str | None = None
        self.started = time.time()
        self.in_flight = 0
        self._lock = threading.Lock()

    def attach(self, engine: EngineLike) -> None:
        """Serve ``engine`` from now on (called once it has loaded).

        The model id is ``model_id`` (the file's stem for ``loadout serve``) or else the
        model's own name; the other names are accepted as aliases.
        """
        name = self.model_id or engine.model_name
        aliases = {a for a in self.aliases if a} | {engine.model_name}
        self.served = ServedModel(id=name, aliases=frozenset(aliases - {name}),
                                  n_ctx_per_seq=engine.n_ctx_per_seq,
                                  template_tools=template_renders_tools(engine))
        self.load_progress = 1.0
        self.engine = engine

    def fail(self, message: str) -> None:
        self.load_error = message

    @property
    def state(self) -> str:
        if self.engine is not None:
            return "ready"
        return "error" if self.load_error else "loading"

    def require(self) -> tuple[EngineLike, ServedModel]:
        """The engine and model, or a 503 while loading / 500 after a failed load."""
        if self.engine is not None and self.served is not None:
            return self.engine, self.served
        if self.load_error:
            raise ApiError(500, f"the model failed to load: {self.load_error}",
                           code="model_load_failed")
        raise ApiError(503, f"the model is loading ({self.load_progress:.0%})",
                       code="model_loading", headers={"Retry-After": RETRY_AFTER_S})

    def engine_status(self) -> dict[str, Any] | None:
        """The engine's status with the three summary keys the metrics read."""
        if self.engine is None:
            return None
        status = dict(self.engine.status())
        slots = status.get("slots") or []
        status.setdefault("slots_total", len(slots))
        status.setdefault("slots_active", sum(
            1 for s in slots if isinstance(s, Mapping) and s.get("state") not in (None, "idle")))
        queued = status.get("queue_length", status.get("queued", 0))
        status.setdefault("queued", queued)
        return status


@dataclass
class _Ctx:
    state: ServerState
    metrics: ServerMetrics


def _json(doc: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse(doc, status_code=status, headers=dict(headers or {}))


async def _read_json(request: Request) -> Any:
    try:
        raw = await request.body()
    except BodyTooLarge as exc:
        raise ApiError(413, "request body too large", code="request_too_large") from exc
    if not raw:
        raise ApiError(400, "empty request body; send a JSON object", code="invalid_json")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"malformed JSON: {exc}", code="invalid_json") from exc


def _submit(engine: EngineLike, generation: GenerationRequest, param: str) -> RequestHandle:
    try:
        return engine.submit(generation)
    except QueueFullError as exc:
        raise ApiError(503, "the server is busy: every slot and the queue are full; "
                            "retry shortly", code="queue_full",
                       headers={"Retry-After": RETRY_AFTER_S}) from exc
    except ContextOverflowError as exc:
        raise ApiError(400, f"the prompt is {exc.prompt_tokens} tokens long but the context "
                            f"of one sequence is {exc.n_ctx_seq} tokens", param=param,
                       code="context_length_exceeded") from exc
    except ChatTemplateError as exc:
        raise ApiError(400, f"the chat template could not render these messages: {exc}",
                       param="messages", code="template_error") from exc
    except EngineClosedError as exc:
        raise ApiError(503, "the engine is shutting down", code="engine_closed") from exc
    except (ValueError, TypeError) as exc:
        raise ApiError(400, str(exc), param=param) from exc


class _Generation:
    """One request in flight: submits it, counts it, and records its figures at the end."""

    def __init__(self, ctx: _Ctx, parsed: ParsedRequest, param: str) -> None:
        engine, self.served = ctx.state.require()
        self.ctx = ctx
        self.parsed = parsed
        self.handle = _submit(engine, parsed.generation, param)
        self.created = int(time.time())
        self._recorded = False
        ctx.state.in_flight += 1
        ctx.metrics.in_flight.set(ctx.state.in_flight)

    def finished(self, chunk: Chunk | None) -> None:
        if self._recorded:
            return
        self._recorded = True
        self.ctx.state.in_flight -= 1
        self.ctx.metrics.in_flight.set(self.ctx.state.in_flight)
        if chunk is not None:
            self.ctx.metrics.generation_done(chunk.finish_reason or "cancelled", chunk.metrics)
        else:  # the client left: the engine's last chunk goes to nobody
            self.ctx.metrics.finished.inc(labels=("cancelled",))

    async def collect(self, request: Request) -> tuple[str, Chunk]:
        """The whole text and the last chunk; cancels if the client leaves first."""

        async def drain() -> tuple[str, Chunk]:
            parts: list[str] = []
            last: Chunk | None = None
            async for chunk in self.handle:
                parts.append(chunk.text)
                last = chunk
            assert last is not None
            return "".join(parts), last

        try:
            ok, result = await sse.race_disconnect(drain(), request.receive, self.handle.cancel)
        finally:
            if not self.handle.done:
                self.handle.cancel()
        if not ok:
            self.finished(None)
            raise ApiError(499, "client closed the request", code="client_closed")
        text, last = result
        self.finished(last)
        _raise_for_engine_failure(last)
        return text, last


def _raise_for_engine_failure(chunk: Chunk) -> None:
    if chunk.finish_reason == "error":
        raise ApiError(500, f"the engine failed on this request: {chunk.error or 'unknown'}",
                       code="engine_error")
    if chunk.finish_reason == "cancelled":
        raise ApiError(503, "the request was cancelled by the server", code="cancelled")


def _error_event(chunk: Chunk) -> bytes:
    try:
        _raise_for_engine_failure(chunk)
    except ApiError as err:
        return sse.encode_event(err.to_json())
    return b""


async def _chat_events(gen: _Generation) -> AsyncIterator[bytes]:
    model, rid, created = gen.served.id, oa.new_id("chatcmpl"), gen.created
    tools = gen.parsed.tools
    parts: list[str] = []
    last: Chunk | None = None
    content_event = sse.DeltaEvents(oa.chat_chunk(rid, created, model,
                                                  {"content": sse.DeltaEvents.PLACEHOLDER}))
    try:
        yield sse.encode_event(oa.chat_chunk(rid, created, model,
                                             {"role": "assistant", "content": ""}))
        async for chunk in gen.handle:
            last = chunk
            if chunk.text:
                if tools:  # a tool call is only known once the answer is whole
                    parts.append(chunk.text)
                else:
                    yield content_event.event(chunk.text)
        assert last is not None
        if last.finish_reason in ("error", "cancelled"):
            yield _error_event(last)
            yield sse.DONE
            return
        calls: tuple[toolcalls.ToolCall, ...] = ()
        if tools:
            content, calls = toolcalls.parse_tool_calls("".join(parts), tools)
            if content:
                yield sse.encode_event(oa.chat_chunk(rid, created, model, {"content": content}))
            if calls:
                deltas = [{"index": i, **c.to_json()} for i, c in enumerate(calls)]
                yield sse.encode_event(oa.chat_chunk(rid, created, model,
                                                     {"tool_calls": deltas}))
        final = oa.chat_chunk(rid, created, model, {},
                              oa.finish_reason(last.finish_reason, bool(calls)))
        final["usage"] = oa.usage_json(last.metrics)
        final["timings"] = oa.timings_json(last.metrics, last.loop_guard)
        yield sse.encode_event(final)
        if gen.parsed.include_usage:
            yield sse.encode_event(oa.chat_usage_chunk(rid, created, model, last.metrics))
        yield sse.DONE
    finally:
        if last is None or last.finish_reason is None:
            gen.handle.cancel()
        gen.finished(last if last is not None and last.finish_reason else None)


async def _completion_events(gen: _Generation) -> AsyncIterator[bytes]:
    model, rid, created = gen.served.id, oa.new_id("cmpl"), gen.created
    last: Chunk | None = None
    prefix = (gen.parsed.generation.prompt or "") if gen.parsed.echo else ""
    text_event = sse.DeltaEvents(oa.completion_response(
        rid, created, model, sse.DeltaEvents.PLACEHOLDER, None, None))
    try:
        async for chunk in gen.handle:
            last = chunk
            if chunk.finish_reason is None and (chunk.text or prefix):
                yield text_event.event(prefix + chunk.text)
                prefix = ""
        assert last is not None
        if last.finish_reason in ("error", "cancelled"):
            yield _error_event(last)
        else:
            yield sse.encode_event(oa.completion_response(
                rid, created, model, prefix + last.text, last.finish_reason, last.metrics,
                last.loop_guard))
        yield sse.DONE
    finally:
        if last is None or last.finish_reason is None:
            gen.handle.cancel()
        gen.finished(last if last is not None and last.finish_reason else None)


def _routes(ctx: _Ctx) -> list[Route]:
    state = ctx.state

    async def health(request: Request) -> Response:
        if state.state == "ready":
            return _json({"status": "ok"})
        if state.state == "error":
            return _json({"status": "error", "error": state.load_error}, 500)
        return _json({"status": "loading", "progress": state.load_progress}, 503,
                     {"Retry-After": RETRY_AFTER_S})

    async def models(request: Request) -> Response:
        _, served = state.require()
        return _json(oa.models_list(served))

    async def chat(request: Request) -> Response:
        body = await _read_json(request)
        _, served = state.require()
        parsed = oa.parse_chat(body, served)
        gen = _Generation(ctx, parsed, "messages")
        if parsed.stream:
            return sse.EventStreamResponse(_chat_events(gen), gen.handle.cancel)
        text, last = await gen.collect(request)
        content: str | None = text
        calls: tuple[toolcalls.ToolCall, ...] = ()
        if parsed.tools:
            content, calls = toolcalls.parse_tool_calls(text, parsed.tools)
        return _json(oa.chat_response(oa.new_id("chatcmpl"), gen.created, served.id, content,
                                      calls, last.finish_reason, last.metrics,
                                      last.loop_guard))

    async def completions(request: Request) -> Response:
        body = await _read_json(request)
        _, served = state.require()
        parsed = oa.parse_completion(body, served)
        gen = _Generation(ctx, parsed, "prompt")
        if parsed.stream:
            return sse.EventStreamResponse(_completion_events(gen), gen.handle.cancel)
        text, last = await gen.collect(request)
        if parsed.echo:
            text = (parsed.generation.prompt or "") + text
        return _json(oa.completion_response(oa.new_id("cmpl"), gen.created, served.id, text,
                                            last.finish_reason, last.metrics, last.loop_guard))

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(ctx.metrics.render(),
                                 media_type=ctx.metrics.registry.CONTENT_TYPE)

    async def status(request: Request) -> Response:
        served = state.served
        return _json({
            "state": state.state, "load_progress": state.load_progress,
            "load_error": state.load_error, "model": served.id if served else None,
            "uptime_s": time.time() - state.started, "requests_in_flight": state.in_flight,
            "template_tools": served.template_tools if served else None,
            "engine": state.engine_status(),
        })

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/v1/loadout/status", status, methods=["GET"]),
    ]
    for prefix in ("/v1", ""):  # llama.cpp's server answers without the /v1 prefix too
        routes += [Route(f"{prefix}/models", models, methods=["GET"]),
                   Route(f"{prefix}/chat/completions", chat, methods=["POST"]),
                   Route(f"{prefix}/completions", completions, methods=["POST"])]
    return routes


class _CountRequests:
    """Counts every answered request by endpoint and status code."""

    def __init__(self, app: Any, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if not path.startswith("/v1") and path not in ("/health", "/metrics"):
            path = "/v1" + path
        endpoint = path if path in ENDPOINTS else "other"
        status = [500]

        async def counting_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            self.metrics.request_done(endpoint, status[0])


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    if exc.status >= 500:
        log.warning("%s %s -> %d %s", request.method, request.url.path, exc.status, exc)
    return _json(exc.to_json(), exc.status, exc.headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return _json(ApiError(exc.status_code, message, code=code).to_json(), exc.status_code,
                 exc.headers)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    err = ApiError(500, f"internal error: {type(exc).__name__}: {exc}", code="internal_error")
    if isinstance(exc, EngineError):
        err.code = "engine_error"
    return _json(err.to_json(), 500)


def build_app(state: ServerState, policy: SecurityPolicy) -> Starlette:
    """The ASGI app serving ``state``'s engine under ``policy``.

    Middleware, outermost first: CORS (only with origins), request counting, body size
    limit, API key.
    """
    metrics = ServerMetrics(state.engine_status)
    ctx = _Ctx(state=state, metrics=metrics)
    middleware = []
    if policy.cors_origins:
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=list(policy.cors_origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-Api-Key"]))
    middleware += [Middleware(_CountRequests, metrics=metrics),
                   Middleware(BodyLimitMiddleware, limit=policy.max_body_bytes),
                   Middleware(AuthMiddleware, policy=policy)]
    app = Starlette(routes=_routes(ctx), middleware=middleware,
                    exception_handlers={ApiError: _api_error, HTTPException: _http_error,
                                        Exception: _unexpected})
    app.state.server = state
    app.state.metrics = metrics
    return app


def metrics_of(app: Starlette) -> ServerMetrics:
    """The metrics object of an app made by :func:`build_app`."""
    m = app.state.metrics
    assert isinstance(m, ServerMetrics)
    return m


__all__ = ["EngineLike", "Metrics", "ServerState", "build_app", "metrics_of",
           "template_renders_tools"]
