"""The ASGI application of ``loadout serve``: OpenAI-compatible routes over one Engine.

Routes: ``GET /health``, ``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/completions``, ``GET /metrics`` (Prometheus text) and ``GET /v1/loadout/status``
(live state for the GUI), and for the desktop app's own engine ``POST /v1/loadout/access``
(``{"public": bool}``: serve clients other than the app, or only the app). The engine
owns the model on its own thread; handlers only parse, submit, and stream the chunks back
(``async for`` over the request handle, no thread per request). The app answers while the
model loads: ``/health`` says 503 ``loading`` with the progress, and model routes answer
503 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from engine.errors import EngineError
from engine.server import messages_api as messages_routes
from engine.server import openai_responses as docs
from engine.server import openai_schema as oa
from engine.server import responses_api as responses_routes
from engine.server import sse
from engine.server import tools as toolcalls
from engine.server.api_common import RouteKit
from engine.server.body_check import BodyChecker
from engine.server.chat_choices import chat_choices
from engine.server.connections import BodyTimeout, BodyTimeoutMiddleware, ConnectionLimits
from engine.server.embeddings_api import embedding_routes
from engine.server.generation import GenContext, Generation, chat_events, completion_events
from engine.server.grammar_budget import BudgetExceeded
from engine.server.images import fetch_image_urls
from engine.server.llamacpp.cors import origin_regex
from engine.server.llamacpp.options import DEFAULT_LLAMA_OPTIONS, LlamaOptions
from engine.server.llamacpp.routes import NATIVE_PATHS, llama_routes
from engine.server.llamacpp.server_info import rendered_prompt
from engine.server.offloop import run_bounded
from engine.server.openai_schema import ApiError, ParsedRequest, ServedModel
from engine.server.prevalidate import grammar_field_of, prevalidate
from engine.server.public_docs import public_status
from engine.server.request_model import DEFAULT_REQUEST_LIMITS, RequestLimits
from engine.server.router_metrics import RouterMetrics
from engine.server.security import (
    ACCESS_PATH,
    AppAccess,
    AuthMiddleware,
    BodyLimitMiddleware,
    BodyTooLarge,
    JsonCORSMiddleware,
    LocalGuardMiddleware,
    SecurityPolicy,
)
from engine.server.server_metrics import ServerMetrics
from engine.server.state import (
    RETRY_AFTER_S,
    EngineLike,
    RouteRequests,
    ServerState,
    template_renders_tools,
)
from engine.server.tokenize_api import tokenize_routes

log = logging.getLogger(__name__)

ENDPOINTS = frozenset({"/health", "/v1/models", "/v1/chat/completions", "/v1/completions",
                       "/metrics", "/v1/loadout/status", ACCESS_PATH,
                       *responses_routes.PATHS, *messages_routes.PATHS,
                       "/v1/embeddings", "/v1/tokenize", "/v1/detokenize", *NATIVE_PATHS})


class _JSONResponse(JSONResponse):
    """JSON that always encodes: a lone surrogate a client sent (and an error message
    quotes back) is written as a JSON escape instead of failing the answer."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def _json(doc: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return _JSONResponse(doc, status_code=status, headers=dict(headers or {}))


async def _read_json(request: Request) -> Any:
    """The request's JSON body, checked off the event loop (:mod:`.body_check`); with a
    router, the body is checked as a request for the model it names before that model is
    chosen (and loaded)."""
    try:
        raw = await request.body()
    except BodyTooLarge as exc:
        raise ApiError(413, "request body too large", code="request_too_large") from exc
    except BodyTimeout as exc:
        raise ApiError(408, "the request body did not arrive in time",
                       code="request_timeout") from exc
    except ClientDisconnect as exc:  # nobody reads the answer; counted, not logged as a fault
        raise ApiError(499, "client closed the request", code="client_closed") from exc
    checker: BodyChecker = request.app.state.body_checker
    doc = await checker.read(raw)
    state: ServerState = request.app.state.server
    if state.router is not None:
        await prevalidate(request.url.path, doc, state, checker.limits, _parse)
    await state.select(doc, request.headers)  # a router: its model
    return doc


Parser = Callable[[Any, ServedModel, RequestLimits], ParsedRequest]


async def _parse(parser: Parser, body: Any, served: ServedModel,
                 limits: RequestLimits) -> ParsedRequest:
    """Check a body off the event loop (a JSON schema's grammar is built here), in bounded
    time: past ``compile_timeout_s`` the request is refused, the loop never waited and
    the work is stopped (:func:`.offloop.run_bounded`)."""
    timeout = limits.grammar.compile_timeout_s
    try:
        return await run_bounded(functools.partial(parser, body, served, limits), timeout)
    except TimeoutError as exc:
        field = grammar_field_of(body)
        if field is None:
            raise ApiError(400, f"checking the request took longer than {timeout:g} s "
                                "(compile_timeout_s)", code="request_too_complex") from exc
        raise ApiError(400, f"the grammar of '{field}' took longer than {timeout:g} s to "
                            "build (compile_timeout_s)", param=field,
                       code="grammar_too_large") from exc


async def _probe_grammar(state: ServerState, parsed: ParsedRequest) -> None:
    """Try the request's grammar in the checker process before the engine thread sees it."""
    grammar = parsed.generation.params.grammar
    probe = state.grammar_probe
    if grammar is None or probe is None:
        return
    try:
        await asyncio.to_thread(probe.check, grammar, parsed.grammar_field)
    except BudgetExceeded as exc:
        raise oa.over_budget(exc) from exc
    except ValueError as exc:
        raise ApiError(400, str(exc), param=parsed.grammar_field,
                       code="invalid_grammar") from exc
    except (OSError, RuntimeError):  # the checker itself failed: the engine still copes
        log.warning("the grammar checker failed; using the grammar unchecked", exc_info=True)


def _routes(ctx: GenContext, limits: RequestLimits, access: AppAccess) -> list[Route]:
    state = ctx.state

    async def health(request: Request) -> Response:
        if state.state == "ready":
            return _json({"status": "ok"})
        if state.state == "error":  # the reason (it may name paths) is in the log only
            return _json({"status": "error", "error": "the model failed to load"}, 500)
        return _json({"status": "loading", "progress": state.load_progress}, 503,
                     {"Retry-After": RETRY_AFTER_S})

    async def models(request: Request) -> Response:
        return _json(public_status(state.models_document()))

    async def chat(request: Request) -> Response:
        body = await _read_json(request)
        _, served = state.require()
        body = await fetch_image_urls(body, limits.images, served.vision_refusal)
        parsed = await _parse(oa.parse_chat, body, served, limits)
        await _probe_grammar(state, parsed)
        if parsed.n > 1:
            return _json(await chat_choices(ctx, parsed, request))
        gen = await Generation.start(ctx, parsed, "messages")
        if parsed.stream:
            return sse.EventStreamResponse(chat_events(gen), gen.close)
        text, last = await gen.collect(request)
        content: str | None = text
        calls: tuple[toolcalls.ToolCall, ...] = ()
        if parsed.tools:
            content, calls = toolcalls.parse_tool_calls(text, parsed.tools)
        doc = docs.chat_response(docs.new_id("chatcmpl"), gen.created, served.id,
                                 content, calls, last.finish_reason, last.metrics,
                                 last.loop_guard, gen.chat_logprobs())
        if parsed.verbose:  # llama-server's debug echo of the rendered prompt
            doc["__verbose"] = await rendered_prompt(gen.engine, parsed.generation)
        return _json(doc)

    async def completions(request: Request) -> Response:
        body = await _read_json(request)
        _, served = state.require()
        parsed = await _parse(oa.parse_completion, body, served, limits)
        await _probe_grammar(state, parsed)
        gen = await Generation.start(ctx, parsed, "prompt")
        if parsed.stream:
            return sse.EventStreamResponse(completion_events(gen), gen.close)
        text, last = await gen.collect(request)
        if parsed.echo:
            text = gen.prompt_text + text
        return _json(docs.completion_response(docs.new_id("cmpl"), gen.created, served.id,
                                              text, last.finish_reason, last.metrics,
                                              last.loop_guard, gen.completion_logprobs()))

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(ctx.metrics.render(),
                                 media_type=ctx.metrics.registry.CONTENT_TYPE)

    async def status(request: Request) -> Response:
        served = state.served
        return _json(public_status({
            "state": state.state, "load_progress": state.load_progress,
            "load_error": state.load_error, "model": served.id if served else None,
            "uptime_s": time.time() - state.started, "requests_in_flight": state.in_flight,
            "template_tools": served.template_tools if served else None,
            "engine": state.engine_status(),
        }))

    async def app_access(request: Request) -> Response:
        # only the app's key reaches here (AuthMiddleware)
        body = await _read_json(request)
        public = body.get("public") if isinstance(body, dict) else None
        if not isinstance(public, bool):
            raise ApiError(400, "send {\"public\": true} or {\"public\": false}",
                           param="public", code="invalid_value")
        access.public = public
        log.info("the server is now %s", "public" if public else "private to the app")
        return _json({"public": access.public})

    routes = [
        Route("/health", health, methods=["GET"]),
        Route(ACCESS_PATH, app_access, methods=["POST"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/v1/loadout/status", status, methods=["GET"]),
    ]
    for prefix in ("/v1", ""):  # llama.cpp's server answers without the /v1 prefix too
        routes += [Route(f"{prefix}/models", models, methods=["GET"]),
                   Route(f"{prefix}/chat/completions", chat, methods=["POST"]),
                   Route(f"{prefix}/completions", completions, methods=["POST"])]
    routes += embedding_routes(ctx, _read_json) + tokenize_routes(ctx, _read_json)
    kit = RouteKit(_read_json, _parse, _probe_grammar, _json)
    return routes + responses_routes.routes(ctx, limits, kit) + \
        messages_routes.routes(ctx, limits, kit)


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
    # the details go to the log under a reference; the client sees the reference only
    ref = secrets.token_hex(4)
    log.error("unexpected error %s on %s %s", ref, request.method, request.url.path,
              exc_info=exc)
    err = ApiError(500, f"internal error (reference {ref} in the server log)",
                   code="engine_error" if isinstance(exc, EngineError) else "internal_error")
    return _json(err.to_json(), 500)


def build_app(state: ServerState, policy: SecurityPolicy,
              limits: RequestLimits = DEFAULT_REQUEST_LIMITS,
              connections: ConnectionLimits | None = None,
              access: AppAccess | None = None,
              llama: LlamaOptions = DEFAULT_LLAMA_OPTIONS) -> Starlette:
    """The ASGI app serving ``state``'s engine under ``policy`` (and, for the desktop
    app's own engine, ``access``: its private key and whether others are served).

    Middleware, outermost first: CORS (only with origins), request counting, the local
    guard (Host, Origin, content type), body read timeout, body size limit, API key.
    """
    access = access or AppAccess()
    metrics = ServerMetrics(state.engine_status)
    ctx = GenContext(state=state, metrics=metrics)
    if state.router is not None:
        RouterMetrics(metrics.registry).attach(state)
    middleware = []
    if policy.cors_origins:
        middleware.append(Middleware(
            JsonCORSMiddleware, allow_origins=list(policy.cors_origins),
            allow_origin_regex=origin_regex(policy.cors_origins),
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-Api-Key", "Anthropic-Version"]))
    middleware.append(Middleware(messages_routes.AnthropicErrors))
    middleware += [Middleware(_CountRequests, metrics=metrics),
                   Middleware(LocalGuardMiddleware, policy=policy),
                   Middleware(BodyTimeoutMiddleware,
                              timeout_s=(connections or ConnectionLimits()).body_timeout_s),
                   Middleware(BodyLimitMiddleware, limit=policy.max_body_bytes),
                   Middleware(AuthMiddleware, policy=policy, access=access),
                   Middleware(RouteRequests, state=state)]
    # llama.cpp's native routes first: /completions and /metrics are theirs
    kit = RouteKit(_read_json, _parse, _probe_grammar, _json)
    routes = llama_routes(ctx, limits, kit, llama) + _routes(ctx, limits, access)
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={ApiError: _api_error, HTTPException: _http_error,
                                        Exception: _unexpected})
    app.state.server = state
    app.state.body_checker = BodyChecker(limits)
    app.state.metrics = metrics
    app.state.access = access
    return app


def metrics_of(app: Starlette) -> ServerMetrics:
    """The metrics object of an app made by :func:`build_app`."""
    m = app.state.metrics
    assert isinstance(m, ServerMetrics)
    return m


__all__ = ["EngineLike", "ServerState", "build_app", "metrics_of", "template_renders_tools"]
