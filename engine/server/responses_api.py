"""``POST /v1/responses`` (the OpenAI Responses API) over the chat path, with stored
responses for ``previous_response_id``, and ``GET`` / ``DELETE /v1/responses/{id}``.

The answer is a ``response`` document (message and function-call output items, ``usage``
and the same ``timings`` as the chat route), or with ``stream: true`` the API's typed
events, each with its ``sequence_number``: ``response.created``, ``response.in_progress``,
the output items' added / delta / done events, then ``response.completed`` (or
``response.incomplete`` when ``max_output_tokens`` cut it, ``response.failed`` when the
engine failed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine.metrics import Metrics
from engine.requests import Chunk
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
    named_event,
)
from engine.server.api_images import fetch_images
from engine.server.errors import ApiError
from engine.server.generation import GenContext, Generation
from engine.server.request_model import RequestLimits, shown
from engine.server.response_store import ResponseStore, default_folder
from engine.server.responses_input import (
    ResponsesRequest,
    assistant_message,
    conversation_json,
    to_chat,
)

log = logging.getLogger(__name__)

PATHS = ("/v1/responses",)


def new_id(prefix: str) -> str:
    """A fresh id like ``resp_9f...`` (the API's ids join with an underscore)."""
    return docs.new_id(prefix).replace("-", "_")


def usage_json(m: Metrics) -> dict[str, Any]:
    """``ResponseUsage``: input, output and total tokens with their details."""
    return {"input_tokens": m.prompt_tokens,
            "input_tokens_details": {"cached_tokens": m.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": m.generated_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": m.prompt_tokens + m.generated_tokens}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, text: str | None, status: str = "completed") -> dict[str, Any]:
    """An assistant ``message`` output item (no content while in progress)."""
    content = [] if text is None else [text_part(text)]
    return {"id": item_id, "type": "message", "status": status, "role": "assistant",
            "content": content}


def call_item(item_id: str, call: toolcalls.ToolCall, status: str = "completed",
              arguments: str | None = None) -> dict[str, Any]:
    """A ``function_call`` output item."""
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call.id,
            "name": call.name, "arguments": call.arguments if arguments is None else arguments}


def output_items(text: str | None, calls: Sequence[toolcalls.ToolCall]
                 ) -> list[dict[str, Any]]:
    """The output items of a whole answer: its text (if any), then its calls."""
    items = [message_item(new_id("msg"), text)] if text else []
    return items + [call_item(new_id("fc"), c) for c in calls]


def response_doc(rid: str, created: int, model: str, req: ResponsesRequest, status: str,
                 output: list[dict[str, Any]], last: Chunk | None = None,
                 error: ApiError | None = None) -> dict[str, Any]:
    """A ``response`` document (``Response`` in the OpenAI schemas)."""
    doc: dict[str, Any] = {
        "id": rid, "object": "response", "created_at": created, "status": status,
        "completed_at": int(time.time()) if status == "completed" else None,
        "error": None if error is None else {
            "code": "server_error" if error.status >= 500 else "invalid_prompt",
            "message": error.message},
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete"
        else None,
        "model": model, "output": output, "reasoning": None, "store": req.store,
        "truncation": "disabled", **req.echo,
    }
    if last is not None:
        doc["usage"] = usage_json(last.metrics)
        doc["timings"] = docs.timings_json(last.metrics, last.loop_guard)
    return doc


def status_of(last: Chunk) -> str:
    return "incomplete" if last.finish_reason == "length" else "completed"


class _Events:
    """The numbered events of one streamed response."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, kind: str, **fields: Any) -> bytes:
        doc = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return named_event(kind, doc)


def _text_events(ev: _Events, index: int, item_id: str, pieces: Sequence[str]
                 ) -> list[bytes]:
    """Opening a message item and its text part, then one delta per piece."""
    out = [ev("response.output_item.added", output_index=index,
              item=message_item(item_id, None, "in_progress")),
           ev("response.content_part.added", item_id=item_id, output_index=index,
              content_index=0, part=text_part(""))]
    out += [ev("response.output_text.delta", item_id=item_id, output_index=index,
               content_index=0, delta=p, logprobs=[]) for p in pieces]
    return out


def _text_done(ev: _Events, index: int, item_id: str, text: str) -> list[bytes]:
    return [ev("response.output_text.done", item_id=item_id, output_index=index,
               content_index=0, text=text, logprobs=[]),
            ev("response.content_part.done", item_id=item_id, output_index=index,
               content_index=0, part=text_part(text)),
            ev("response.output_item.done", output_index=index,
               item=message_item(item_id, text))]


def _call_events(ev: _Events, index: int, item_id: str, call: toolcalls.ToolCall
                 ) -> list[bytes]:
    return [ev("response.output_item.added", output_index=index,
               item=call_item(item_id, call, "in_progress", "")),
            ev("response.function_call_arguments.delta", item_id=item_id,
               output_index=index, delta=call.arguments),
            ev("response.function_call_arguments.done", item_id=item_id,
               output_index=index, name=call.name, arguments=call.arguments),
            ev("response.output_item.done", output_index=index, item=call_item(item_id, call))]


async def response_events(gen: Generation, rid: str, req: ResponsesRequest,
                          store: ResponseStore) -> AsyncIterator[bytes]:
    """The SSE events of a streamed response (stored at the end unless ``store`` is off)."""
    ev, model = _Events(), gen.served.id
    yield ev("response.created",
             response=response_doc(rid, gen.created, model, req, "in_progress", []))
    yield ev("response.in_progress",
             response=response_doc(rid, gen.created, model, req, "in_progress", []))
    msg_id, streamed = new_id("msg"), list[str]()
    end: AnswerEnd | None = None

    def text_events(piece: str) -> list[bytes]:
        if streamed:
            return [ev("response.output_text.delta", item_id=msg_id, output_index=0,
                       content_index=0, delta=piece, logprobs=[])]
        return _text_events(ev, 0, msg_id, [piece])

    async with contextlib.aclosing(answer_pieces(gen)) as pieces:
        async for piece in pieces:
            if isinstance(piece, AnswerEnd):
                end = piece
            elif isinstance(piece, str):
                for event in text_events(piece):
                    yield event
                streamed.append(piece)
    assert end is not None
    failure = engine_failure(end.last, gen.parsed.user_grammar)
    if failure is not None:
        yield ev("response.failed", response=response_doc(
            rid, gen.created, model, req, "failed", [], end.last, failure))
        return
    if end.text:  # text held back while it might have been a call
        for event in text_events(end.text):
            yield event
        streamed.append(end.text)
    output: list[dict[str, Any]] = []
    text = "".join(streamed)
    if streamed:
        for event in _text_done(ev, 0, msg_id, text):
            yield event
        output.append(message_item(msg_id, text))
    for call in end.calls:
        item_id = new_id("fc")
        for event in _call_events(ev, len(output), item_id, call):
            yield event
        output.append(call_item(item_id, call))
    status = status_of(end.last)
    doc = response_doc(rid, gen.created, model, req, status, output, end.last)
    if req.store:
        await asyncio.to_thread(_keep, store, doc, req, text or None, end.calls)
    yield ev(f"response.{status}", response=doc)


def _keep(store: ResponseStore, doc: Mapping[str, Any], req: ResponsesRequest,
          text: str | None, calls: Sequence[toolcalls.ToolCall]) -> None:
    conversation = [*req.conversation, assistant_message(text, calls)]
    store.put(str(doc["id"]), {"response": doc,
                               "conversation": conversation_json(conversation)})


def routes(ctx: GenContext, limits: RequestLimits, kit: RouteKit,
           store: ResponseStore | None = None) -> list[Route]:
    """The Responses routes, under ``/v1`` and without the prefix."""
    state = ctx.state
    kept = store or ResponseStore(default_folder())

    async def create(request: Request) -> Response:
        body = await kit.read_json(request)
        previous = None
        pid = body.get("previous_response_id") if isinstance(body, Mapping) else None
        if isinstance(pid, str):
            record = await asyncio.to_thread(kept.get, pid)
            if record is None:
                raise ApiError(404, f"no stored response has the id '{shown(pid, 60)}'",
                               param="previous_response_id", code="not_found")
            previous = record.get("conversation") or []
        req = to_chat(body, previous, limits)
        _, served = state.require()
        if req.images is not None:
            await fetch_images(req.images, served)
        parsed = await kit.parse(oa.parse_chat, req.chat, served, limits)
        await kit.probe_grammar(state, parsed)
        sampling = parsed.generation.params  # the values used, defaults included
        req.echo.update(temperature=sampling.temperature, top_p=sampling.top_p)
        gen = await Generation.start(ctx, parsed, "input")
        rid = new_id("resp")
        if req.stream:
            return sse.EventStreamResponse(response_events(gen, rid, req, kept), gen.close)
        text, calls, last = await collect_answer(gen, request)
        doc = response_doc(rid, gen.created, served.id, req, status_of(last),
                           output_items(text, calls), last)
        if req.store:
            await asyncio.to_thread(_keep, kept, doc, req, text, calls)
        return kit.json(doc)

    async def fetch(request: Request) -> Response:
        rid = request.path_params["rid"]
        record = await asyncio.to_thread(kept.get, rid)
        if record is None or not isinstance(record.get("response"), Mapping):
            raise ApiError(404, f"no stored response has the id '{shown(rid, 60)}'",
                           code="not_found")
        return kit.json(record["response"])

    async def delete(request: Request) -> Response:
        rid = request.path_params["rid"]
        if not await asyncio.to_thread(kept.delete, rid):
            raise ApiError(404, f"no stored response has the id '{shown(rid, 60)}'",
                           code="not_found")
        return kit.json({"id": rid, "object": "response", "deleted": True})

    out = []
    for prefix in ("/v1", ""):
        out += [Route(f"{prefix}/responses", create, methods=["POST"]),
                Route(f"{prefix}/responses/{{rid}}", fetch, methods=["GET"]),
                Route(f"{prefix}/responses/{{rid}}", delete, methods=["DELETE"])]
    return out
