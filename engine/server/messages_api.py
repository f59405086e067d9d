"""``POST /v1/messages`` (the Anthropic Messages API) and ``POST
/v1/messages/count_tokens`` over the chat path.

The answer is a ``message`` document (``text`` and ``tool_use`` blocks, ``stop_reason``,
``usage``, and the same ``timings`` as the chat route), or with ``stream: true`` the API's
events: ``message_start``, ``ping``, ``content_block_start`` / ``content_block_delta``
(``text_delta``, ``input_json_delta``) / ``content_block_stop``, ``message_delta`` (stop
reason and usage) and ``message_stop``. Every error on these paths, the security
middleware's included, has Anthropic's shape (:class:`AnthropicErrors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import ChatTemplateError, ImageInputError
from engine.metrics import Metrics
from engine.requests import Chunk, GenerationRequest
from engine.server import openai_responses as docs
from engine.server import openai_schema as oa
from engine.server import sse
from engine.server import tools as toolcalls
from engine.server.api_common import (
    AnswerEnd,
    RouteKit,
    answer_pieces,
    collect_answer,
    engine_failure,
    matched_stop,
    named_event,
)
from engine.server.api_images import fetch_images
from engine.server.errors import ApiError
from engine.server.generation import GenContext, Generation
from engine.server.messages_input import MessagesRequest, to_chat
from engine.server.request_model import RequestLimits
from engine.server.state import EngineLike, ServerState

log = logging.getLogger(__name__)

PATHS = ("/v1/messages", "/v1/messages/count_tokens")
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error",
               429: "rate_limit_error", 503: "overloaded_error", 504: "timeout_error"}


def error_doc(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error document for an HTTP status."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _anthropic_body(status: int, body: bytes) -> bytes:
    try:
        doc = json.loads(body)
        message = str(doc["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = body.decode("utf-8", "replace") or f"HTTP {status}"
    return json.dumps(error_doc(status, message)).encode("utf-8")


class AnthropicErrors:
    """Rewrites every error answer on the Messages paths into Anthropic's shape
    ``{"type": "error", "error": {"type": ..., "message": ...}}`` (the security
    middleware and the app's handlers write OpenAI's)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if ("/v1" + path if not path.startswith("/v1") else path) not in PATHS:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        parts: list[bytes] = []
        sent = False

        async def rewriting_send(message: Message) -> None:
            nonlocal start, sent
            sent = True
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return
            data = _anthropic_body(start["status"], b"".join(parts))
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() not in (b"content-length", b"content-type")]
            headers += [(b"content-type", b"application/json"),
                        (b"content-length", str(len(data)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": data})

        try:
            await self.app(scope, receive, rewriting_send)
        except Exception:
            # the app's handler of unexpected errors sits outside this middleware and would
            # answer in OpenAI's shape: answer here, the details in the log under a reference
            if sent:
                raise
            ref = secrets.token_hex(4)
            log.exception("unexpected error %s on %s %s", ref, scope.get("method"), path)
            data = json.dumps(error_doc(500, f"internal error (reference {ref} in the server "
                                             "log)")).encode("utf-8")
            await send({"type": "http.response.start", "status": 500, "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data})


def usage_json(m: Metrics) -> dict[str, Any]:
    """``usage``: new input tokens apart from those read from the prompt cache."""
    return {"input_tokens": max(0, m.prompt_tokens - m.cached_tokens),
            "output_tokens": m.generated_tokens,
            "cache_read_input_tokens": m.cached_tokens, "cache_creation_input_tokens": 0}


def tool_use_block(call: toolcalls.ToolCall) -> dict[str, Any]:
    """A ``tool_use`` content block (its input as an object, as the API carries it)."""
    return {"type": "tool_use", "id": "toolu_" + secrets.token_hex(12), "name": call.name,
            "input": json.loads(call.arguments)}


def stop_reason(last: Chunk, calls: Sequence[toolcalls.ToolCall], stop: str | None) -> str:
    if calls:
        return "tool_use"
    if last.finish_reason == "length":
        return "max_tokens"
    return "stop_sequence" if stop is not None else "end_turn"


def message_doc(mid: str, model: str, content: list[dict[str, Any]], reason: str | None,
                stop: str | None, metrics: Metrics) -> dict[str, Any]:
    """A ``message`` document (``anthropic.types.Message``)."""
    return {"id": mid, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": reason, "stop_sequence": stop,
            "usage": usage_json(metrics)}


def _new_id() -> str:
    return "msg_" + secrets.token_hex(12)


def _block(index: int, block: dict[str, Any], delta: dict[str, Any]) -> list[bytes]:
    return [named_event("content_block_start", {"type": "content_block_start",
                                                "index": index, "content_block": block}),
            named_event("content_block_delta", {"type": "content_block_delta",
                                                "index": index, "delta": delta})]


def _stop(index: int) -> bytes:
    return named_event("content_block_stop", {"type": "content_block_stop", "index": index})


async def message_events(gen: Generation, req: MessagesRequest, state: ServerState
                         ) -> AsyncIterator[bytes]:
    """The SSE events of a streamed message."""
    mid, model = _new_id(), gen.served.id
    blocks = 0  # content blocks opened so far
    text_open = started = False
    end: AnswerEnd | None = None

    def start(metrics: Metrics) -> bytes:
        doc = message_doc(mid, model, [], None, None, metrics)
        doc["usage"]["output_tokens"] = 0
        return named_event("message_start", {"type": "message_start", "message": doc}) + \
            named_event("ping", {"type": "ping"})

    async with contextlib.aclosing(answer_pieces(gen)) as pieces:
        async for piece in pieces:
            if isinstance(piece, Metrics):
                started = True
                yield start(piece)
            elif isinstance(piece, str):
                delta = {"type": "text_delta", "text": piece}
                if not text_open:
                    text_open, blocks = True, blocks + 1
                    for event in _block(0, {"type": "text", "text": ""}, delta):
                        yield event
                else:
                    yield named_event("content_block_delta", {
                        "type": "content_block_delta", "index": 0, "delta": delta})
            else:
                end = piece
    assert end is not None
    if not started:
        yield start(end.last.metrics)
    failure = engine_failure(end.last, gen.parsed.user_grammar)
    if failure is not None:
        yield named_event("error", error_doc(failure.status, failure.message))
        return
    if end.text:
        delta = {"type": "text_delta", "text": end.text}
        if text_open:
            yield named_event("content_block_delta", {"type": "content_block_delta",
                                                      "index": 0, "delta": delta})
        else:
            text_open, blocks = True, blocks + 1
            for event in _block(0, {"type": "text", "text": ""}, delta):
                yield event
    if text_open:
        yield _stop(0)
    for call in end.calls:
        block = {**tool_use_block(call), "input": {}}
        for event in _block(blocks, block, {"type": "input_json_delta",
                                            "partial_json": call.arguments}):
            yield event
        yield _stop(blocks)
        blocks += 1
    stop = matched_stop(state, end.visible, end.tokens, req.stops)
    usage = usage_json(end.last.metrics)
    yield named_event("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(end.last, end.calls, stop), "stop_sequence": stop},
        "usage": usage, "timings": docs.timings_json(end.last.metrics, end.last.loop_guard)})
    yield named_event("message_stop", {"type": "message_stop"})


def count_tokens(engine: EngineLike, generation: GenerationRequest) -> int:
    """Tokens of the prompt ``generation`` renders to, with the model's own chat template
    and tokenizer, as the engine counts it (a BOS the template leaves out is added). An
    image counts the tokens the projector makes of it: it is preprocessed (decoded and
    resized) to know that, not encoded.

    Raises:
        ApiError: the template cannot render these messages, or an image cannot be read
            (400), or this engine cannot tokenize (501).
    """
    tokenize = getattr(engine, "tokenize", None)
    if tokenize is None:
        raise ApiError(501, "this engine cannot count tokens", code="not_implemented")
    try:
        text = engine.render_chat(generation.messages or (), generation.tools) + \
            generation.assistant_prefix
    except ChatTemplateError as exc:
        raise ApiError(400, f"the chat template could not render these messages: {exc}",
                       param="messages", code="template_error") from exc
    if generation.images:
        tokens = _media_tokens(engine, text, generation.images)
    else:
        tokens = list(tokenize(text, add_special=False))
    bos = list(tokenize("", add_special=True))
    if bos and (not tokens or tokens[0] != bos[0]):
        tokens.insert(0, bos[0])
    return max(1, len(tokens))


def _media_tokens(engine: EngineLike, text: str, images: Sequence[bytes]) -> list[int]:
    """The prompt's tokens with each image's run of positions (placeholders, -1)."""
    projector = getattr(engine, "projector", None)
    refusal = getattr(engine, "vision_refusal", "this engine takes no images")
    if projector is None or refusal is not None:
        raise ApiError(400, f"this model cannot take images: {refusal}", param="messages",
                       code="images_not_supported")
    try:
        parts = projector.tokenize(text, images)
    except ImageInputError as exc:
        raise ApiError(400, str(exc), param="messages", code="invalid_image") from exc
    tokens: list[int] = []
    for part in parts:
        if isinstance(part, list):
            tokens += part
        else:
            tokens += [-1] * int(part.n_tokens)
            part.free()
    return tokens


def _prefilled(parsed: oa.ParsedRequest, req: MessagesRequest) -> oa.ParsedRequest:
    """``parsed`` whose answer continues the request's trailing assistant text."""
    if not req.prefill:
        return parsed
    return dataclasses.replace(parsed, generation=dataclasses.replace(
        parsed.generation, assistant_prefix=req.prefill))


def routes(ctx: GenContext, limits: RequestLimits, kit: RouteKit) -> list[Route]:
    """The Messages routes, under ``/v1`` and without the prefix."""
    state = ctx.state

    async def create(request: Request) -> Response:
        body = await kit.read_json(request)
        req = to_chat(body, limits)
        _, served = state.require()
        if req.images is not None:
            await fetch_images(req.images, served)
        parsed = _prefilled(await kit.parse(oa.parse_chat, req.chat, served, limits), req)
        await kit.probe_grammar(state, parsed)
        gen = await Generation.start(ctx, parsed, "messages")
        if req.stream:
            return sse.EventStreamResponse(message_events(gen, req, state), gen.close)
        text, calls, last = await collect_answer(gen, request)
        content = ([{"type": "text", "text": text}] if text else []) + \
            [tool_use_block(c) for c in calls]
        stop = matched_stop(state, last.text, last.token_ids, req.stops)
        doc = message_doc(_new_id(), served.id, content, stop_reason(last, calls, stop), stop,
                          last.metrics)
        doc["timings"] = docs.timings_json(last.metrics, last.loop_guard)
        return kit.json(doc)

    async def count(request: Request) -> Response:
        body = await kit.read_json(request)
        req = to_chat(body, limits, counting=True)
        engine, served = state.require()
        if req.images is not None:
            await fetch_images(req.images, served)
        parsed = _prefilled(await kit.parse(oa.parse_chat, req.chat, served, limits), req)
        n = await asyncio.to_thread(count_tokens, engine, parsed.generation)
        return kit.json({"input_tokens": n})

    out = []
    for prefix in ("/v1", ""):
        out += [Route(f"{prefix}/messages", create, methods=["POST"]),
                Route(f"{prefix}/messages/count_tokens", count, methods=["POST"])]
    return out
