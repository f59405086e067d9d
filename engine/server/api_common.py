"""What the Responses and Messages routes share: the app's request helpers, one answer
read as text pieces then tool calls, named SSE events, and the image-part refusal.

Both APIs are translations over the chat path: a body becomes the chat request
:func:`engine.server.openai_schema.parse_chat` already checks, runs through
:class:`engine.server.generation.Generation`, and comes back as that API's own documents.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from engine.metrics import Metrics
from engine.requests import Chunk
from engine.server import generation as genmod
from engine.server import request_model as rm
from engine.server import tools as toolcalls
from engine.server.errors import ApiError, bad
from engine.server.generation import Generation
from engine.server.openai_schema import ParsedRequest, ServedModel
from engine.server.request_model import RequestLimits
from engine.server.state import ServerState

log = logging.getLogger(__name__)

Parser = Callable[[Any, ServedModel, RequestLimits], ParsedRequest]


@dataclass(frozen=True)
class RouteKit:
    """The app's own request helpers (``engine.server.app``), handed to other route
    modules so every route reads, checks and answers a request the same way."""

    read_json: Callable[[Request], Awaitable[Any]]
    parse: Callable[[Parser, Any, ServedModel, RequestLimits], Awaitable[ParsedRequest]]
    probe_grammar: Callable[[ServerState, ParsedRequest], Awaitable[None]]
    json: Callable[..., Response]


def image_content(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A chat content part for an image part of a request.

    The models served today read no images, so this refuses with a 400; a server that
    serves a vision model replaces this one function.

    Raises:
        ApiError: always (400, ``unsupported_content``).
    """
    raise bad("this model does not read images (only text content is supported)", where,
              "unsupported_content")


def check_fields(body: Any, fields: Mapping[str, rm.Field], limits: RequestLimits
                 ) -> Mapping[str, Any]:
    """The body as a JSON object whose named fields have their types and ranges.

    Raises:
        ApiError: 400 naming the field (or the nesting depth).
    """
    if not isinstance(body, Mapping):
        raise bad("the request body must be a JSON object", code="invalid_json")
    if not rm.json_depth_ok(body, limits.max_json_depth):
        raise bad(f"the request nests deeper than {limits.max_json_depth} levels",
                  code="json_too_deep")
    for name, spec in fields.items():
        rm.check_field(body, name, spec)
    return body


def require(body: Mapping[str, Any], name: str) -> Any:
    """``body[name]``, or a 400 saying it is required."""
    value = body.get(name)
    if value is None:
        raise bad(f"'{name}' is required", name, "missing_required_parameter")
    return value


def text_of(value: Any, where: str, kinds: Sequence[str]) -> str:
    """The text of a string or of a list of text parts of the given ``type`` names.

    Raises:
        ApiError: 400 for another type of part (images go through :func:`image_content`).
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise bad(f"'{where}' must be a string or a list of text parts", where,
                  "invalid_type")
    texts: list[str] = []
    for i, part in enumerate(value):
        here = f"{where}[{i}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("input_image", "image"):
            image_content(part, here)
        if kind not in kinds:
            raise bad(f"'{here}' must be a part of type {' or '.join(kinds)}"
                      f"{'' if kind is None else f', not {kind!r}'}", here,
                      "unsupported_content")
        assert isinstance(part, Mapping)
        text = part.get("text")
        if not isinstance(text, str):
            raise bad(f"'{here}.text' must be a string", f"{here}.text", "invalid_type")
        texts.append(text)
    return "".join(texts)


def named_event(name: str, doc: Mapping[str, Any]) -> bytes:
    """One SSE event with an ``event:`` name and its JSON ``data:``."""
    data = json.dumps(doc, separators=(",", ":"))
    return f"event: {name}\ndata: {data}\n\n".encode()


@dataclass(frozen=True)
class AnswerEnd:
    """How a streamed answer ended, after its streamable text.

    Attributes:
        text: text held back while it might have been a tool call and released now (the
            text before the calls), or None.
        calls: the tool calls found in the held text.
        last: the engine's last chunk (finish reason and final metrics).
        visible: every character the engine emitted (for telling which stop matched).
        tokens: every generated token id.
    """

    text: str | None
    calls: tuple[toolcalls.ToolCall, ...]
    last: Chunk
    visible: str
    tokens: tuple[int, ...]


async def answer_pieces(gen: Generation) -> AsyncGenerator[str | Metrics | AnswerEnd, None]:
    """The answer: the first chunk's :class:`Metrics` (the prompt is counted by then),
    text pieces to stream, then one :class:`AnswerEnd`.

    With tools declared, the text is held back while it may still be a call (as the chat
    stream does); plain prose streams. The request is cancelled if the reader stops
    early, and counted when it ends.
    """
    tools = gen.parsed.tools
    holding = bool(tools)
    held: list[str] = []
    seen: list[str] = []
    tokens: list[int] = []
    last: Chunk | None = None
    try:
        async for chunk in gen.handle:
            if last is None:
                yield chunk.metrics
            last = chunk
            tokens.extend(chunk.token_ids)
            if not chunk.text:
                continue
            seen.append(chunk.text)
            if not holding:
                yield chunk.text
                continue
            held.append(chunk.text)
            holding = toolcalls.may_be_call("".join(held))
            if not holding:  # plain prose: stream it from now on
                yield "".join(held)
                held.clear()
        assert last is not None
        text: str | None = "".join(held) or None
        calls: tuple[toolcalls.ToolCall, ...] = ()
        if holding and text is not None and last.finish_reason not in ("error", "cancelled"):
            text, calls = toolcalls.parse_tool_calls(text, tools)
        yield AnswerEnd(text, calls, last, "".join(seen), tuple(tokens))
    finally:
        if last is None or last.finish_reason is None:
            gen.handle.cancel()
        gen.finished(last if last is not None and last.finish_reason else None)


async def collect_answer(gen: Generation, request: Request
                         ) -> tuple[str | None, tuple[toolcalls.ToolCall, ...], Chunk]:
    """The whole answer of a request that does not stream: (text, tool calls, final chunk
    with every token id). Cancels if the client leaves first.

    Raises:
        ApiError: the engine failed, or the client left.
    """
    text, last = await gen.collect(request)
    final = gen.handle.result(0)
    final = Chunk(text, final.token_ids, last.finish_reason, last.metrics, last.error,
                  last.loop_guard)
    if gen.parsed.tools:
        content, calls = toolcalls.parse_tool_calls(text, gen.parsed.tools)
        return content, calls, final
    return text or None, (), final


def engine_failure(chunk: Chunk, user_grammar: bool) -> ApiError | None:
    """The error a failed or cancelled final chunk stands for (None when it did not fail)."""
    try:
        genmod._raise_for_engine_failure(chunk, user_grammar)  # the chat routes' own rule
    except ApiError as err:
        return err
    return None


def matched_stop(state: ServerState, visible: str, tokens: Sequence[int],
                 stops: Sequence[str]) -> str | None:
    """Which stop string ended an answer, or None when it ended otherwise.

    The engine leaves the stop string out of the text; the generated tokens still hold
    it, so the stop that begins where the visible text ends is the one that matched.
    """
    if not stops or not tokens or state.engine is None:
        return None
    detokenize = getattr(state.engine, "detokenize", None)
    if detokenize is None:
        return None
    with contextlib.suppress(Exception):  # telling which stop matched is best effort
        raw = str(detokenize(list(tokens)))
        rest = raw[len(visible):] if raw.startswith(visible) else raw
        found = [(rest.find(s), len(s), s) for s in stops if s and s in rest]
        if found:
            return min(found)[2]
    return None
