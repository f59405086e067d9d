"""One generation request in flight: submitted to the engine, streamed or collected back,
counted in the metrics, and cancelled when its client leaves."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from engine.errors import (
    ChatTemplateError,
    ContextOverflowError,
    EngineClosedError,
    ImageInputError,
    NotGenerativeError,
    QueueFullError,
)
from engine.native.sampler import GRAMMAR_DEAD_END
from engine.requests import Chunk, GenerationRequest, RequestHandle, TokenLogprob
from engine.server import openai_logprobs as oalp
from engine.server import openai_responses as docs
from engine.server import sse
from engine.server import tools as toolcalls
from engine.server.openai_schema import ApiError, ParsedRequest
from engine.server.server_metrics import ServerMetrics
from engine.server.state import RETRY_AFTER_S, EngineLike, ServerState

log = logging.getLogger(__name__)


@dataclass
class GenContext:
    """What every request handler shares: the served state and the metrics."""

    state: ServerState
    metrics: ServerMetrics


def _submit(engine: EngineLike, generation: GenerationRequest, param: str) -> RequestHandle:
    try:
        return engine.submit(generation)
    except QueueFullError as exc:
        raise ApiError(503, "the server is busy: every slot and the queue are full; "
                            "retry shortly", code="queue_full",
                       headers={"Retry-After": RETRY_AFTER_S}) from exc
    except ContextOverflowError as exc:
        # llama-server's error type and figures, with OpenAI's code
        raise ApiError(400, f"the prompt is {exc.prompt_tokens} tokens long; it exceeds the "
                            f"available context size of one sequence, {exc.n_ctx_seq} "
                            "tokens", param=param,
                       code="context_length_exceeded", err_type="exceed_context_size_error",
                       extra={"n_prompt_tokens": exc.prompt_tokens,
                              "n_ctx": exc.n_ctx_seq}) from exc
    except ChatTemplateError as exc:
        raise ApiError(400, f"the chat template could not render these messages: {exc}",
                       param="messages", code="template_error") from exc
    except EngineClosedError as exc:
        raise ApiError(503, "the engine is shutting down", code="engine_closed") from exc
    except NotGenerativeError as exc:
        raise ApiError(400, str(exc), param="model", code="model_not_generative") from exc
    except ImageInputError as exc:  # the header looked fine; the pixels do not decode
        raise ApiError(400, str(exc), param="messages", code="invalid_image") from exc
    except (ValueError, TypeError) as exc:
        raise ApiError(400, str(exc), param=param) from exc


class Generation:
    """One request in flight: submits it, counts it, and records its figures at the end.

    Raises (from the constructor):
        ApiError: the model is not loaded, the queue is full (503) or the prompt does not
            fit (400).
    """

    def __init__(self, ctx: GenContext, parsed: ParsedRequest, param: str,
                 handle: RequestHandle | None = None) -> None:
        engine, self.served = ctx.state.require()
        self.engine = engine
        self.ctx = ctx
        self.parsed = parsed
        self.handle = handle if handle is not None else _submit(engine, parsed.generation,
                                                                param)
        self.created = int(time.time())
        self.logprobs: list[TokenLogprob] = []  # collected by collect(), when asked
        self.prompt_logprobs: tuple[TokenLogprob, ...] = ()
        self._recorded = False
        ctx.state.in_flight += 1
        ctx.metrics.in_flight.set(ctx.state.in_flight)

    @classmethod
    async def start(cls, ctx: GenContext, parsed: ParsedRequest, param: str) -> Generation:
        """Submit off the event loop (rendering and tokenizing a prompt of megabytes takes
        a while), then count the request in flight on the loop."""
        engine, _ = ctx.state.require()
        handle = await asyncio.to_thread(_submit, engine, parsed.generation, param)
        return cls(ctx, parsed, param, handle)

    def finished(self, chunk: Chunk | None) -> None:
        if self._recorded:
            return
        self._recorded = True
        self.ctx.state.in_flight -= 1
        self.ctx.metrics.in_flight.set(self.ctx.state.in_flight)
        self.ctx.state.generation_done(self.served.id, chunk.metrics if chunk else None)
        if chunk is not None:
            self.ctx.metrics.generation_done(chunk.finish_reason or "cancelled", chunk.metrics)
        else:  # the client left: the engine's last chunk goes to nobody
            self.ctx.metrics.finished.inc(labels=("cancelled",))

    def close(self) -> None:
        """End the request early (its client left): cancel it and count it as cancelled.

        Idempotent, and a no-op once the request has finished normally.
        """
        if not self.handle.done:
            self.handle.cancel()
        self.finished(None)

    async def collect(self, request: Request) -> tuple[str, Chunk]:
        """The whole text and the last chunk; cancels if the client leaves first."""

        async def drain() -> tuple[str, Chunk]:
            parts: list[str] = []
            last: Chunk | None = None
            async for chunk in self.handle:
                parts.append(chunk.text)
                self.logprobs.extend(chunk.logprobs)
                if chunk.prompt_logprobs is not None:
                    self.prompt_logprobs = chunk.prompt_logprobs
                last = chunk
            assert last is not None
            return "".join(parts), last

        try:
            ok, result = await sse.race_disconnect(drain(), request.receive, self.handle.cancel)
        except BaseException:  # shutdown or a bug: the request must not keep its slot
            self.close()
            raise
        if not ok:
            self.finished(None)
            raise ApiError(499, "client closed the request", code="client_closed")
        text, last = result
        self.finished(last)
        _raise_for_engine_failure(last, self.parsed.user_grammar)
        return text, last

    @property
    def prompt_text(self) -> str:
        """The prompt as text (``echo`` returns it): a prompt of token ids decoded."""
        request = self.parsed.generation
        if request.prompt_tokens is not None:
            detokenize = getattr(self.engine, "detokenize", None)
            return str(detokenize(request.prompt_tokens)) if detokenize is not None else ""
        return request.prompt or ""

    @property
    def wants_logprobs(self) -> bool:
        return self.parsed.generation.params.logprobs is not None

    def chat_logprobs(self) -> dict[str, Any] | None:
        """The collected answer's chat ``logprobs`` (None when not asked)."""
        return oalp.chat_logprobs(self.logprobs) if self.wants_logprobs else None

    def completion_logprobs(self) -> dict[str, Any] | None:
        """The collected answer's legacy ``logprobs``, the prompt's first with ``echo``."""
        if not self.wants_logprobs:
            return None
        builder = _completion_builder(self)
        prompt = list(self.prompt_logprobs) if self.parsed.echo else []
        return builder.build(prompt + self.logprobs)


def _completion_builder(gen: Generation) -> oalp.CompletionLogprobs:
    # text_offset counts characters of the prompt and the answer
    return oalp.CompletionLogprobs(0 if gen.parsed.echo else len(gen.prompt_text))


def _raise_for_engine_failure(chunk: Chunk, user_grammar: bool) -> None:
    if chunk.finish_reason == "error" and user_grammar and not chunk.metrics.generated_tokens:
        raise ApiError(400, f"the grammar was refused: {chunk.error or 'invalid GBNF'}",
                       param="grammar", code="invalid_grammar")
    if chunk.finish_reason == "error" and (chunk.error or "").startswith(GRAMMAR_DEAD_END):
        # the request's grammar (or schema) and its biases left no token mid-answer
        raise ApiError(400, chunk.error or GRAMMAR_DEAD_END,
                       param="grammar" if user_grammar else "response_format",
                       code="invalid_grammar")
    if chunk.finish_reason == "error":
        raise ApiError(500, f"the engine failed on this request: {chunk.error or 'unknown'}",
                       code="engine_error")
    if chunk.finish_reason == "cancelled":
        raise ApiError(503, "the request was cancelled by the server", code="cancelled")


def _error_event(chunk: Chunk, user_grammar: bool) -> bytes:
    try:
        _raise_for_engine_failure(chunk, user_grammar)
    except ApiError as err:
        return sse.encode_event(err.to_json())
    return b""


async def chat_events(gen: Generation) -> AsyncIterator[bytes]:
    """The SSE events of a streamed chat answer, ending in ``[DONE]``.

    With tools declared, the text is held back while it may still be a call (see
    :func:`engine.server.tools.may_be_call`); an answer that is plainly prose streams.
    """
    model, rid, created = gen.served.id, docs.new_id("chatcmpl"), gen.created
    gen.handle.request_id = rid  # the slot status names the answer it serves
    tools = gen.parsed.tools
    holding = bool(tools)
    parts: list[str] = []
    last: Chunk | None = None
    content_event = sse.DeltaEvents(docs.chat_chunk(
        rid, created, model, {"content": sse.DeltaEvents.PLACEHOLDER}))
    want_lps = gen.wants_logprobs
    pending: list[TokenLogprob] = []  # tokens not yet sent with an event

    def lps() -> dict[str, Any] | None:
        if not want_lps:
            return None
        doc = oalp.chat_logprobs(pending)
        pending.clear()
        return doc

    def content(text: str) -> bytes:
        if not want_lps:
            return content_event.event(text)
        return sse.encode_event(docs.chat_chunk(rid, created, model, {"content": text},
                                                logprobs=lps()))
    try:
        # null, not "": no content yet (as llama-server and OpenAI send it)
        yield sse.encode_event(docs.chat_chunk(rid, created, model,
                                               {"role": "assistant", "content": None}))
        async for chunk in gen.handle:
            last = chunk
            pending.extend(chunk.logprobs)
            if chunk.text:
                if holding:
                    parts.append(chunk.text)
                    holding = toolcalls.may_be_call("".join(parts))
                    if not holding:  # plain prose: stream it from now on
                        yield content("".join(parts))
                        parts.clear()
                else:
                    yield content(chunk.text)
        assert last is not None
        if last.finish_reason in ("error", "cancelled"):
            yield _error_event(last, gen.parsed.user_grammar)
            yield sse.DONE
            return
        calls: tuple[toolcalls.ToolCall, ...] = ()
        if holding:
            text, calls = toolcalls.parse_tool_calls("".join(parts), tools)
            if text:
                yield content(text)
            if calls:
                deltas = [{"index": i, **c.to_json()} for i, c in enumerate(calls)]
                yield sse.encode_event(docs.chat_chunk(rid, created, model,
                                                       {"tool_calls": deltas}))
        final = docs.chat_chunk(rid, created, model, {},
                                docs.finish_reason(last.finish_reason, bool(calls)),
                                logprobs=lps() if pending else None)
        final["usage"] = docs.usage_json(last.metrics)
        final["timings"] = docs.timings_json(last.metrics, last.loop_guard)
        yield sse.encode_event(final)
        if gen.parsed.include_usage:
            yield sse.encode_event(docs.chat_usage_chunk(rid, created, model, last.metrics))
        yield sse.DONE
    finally:
        if last is None or last.finish_reason is None:
            gen.handle.cancel()
        gen.finished(last if last is not None and last.finish_reason else None)


async def completion_events(gen: Generation) -> AsyncIterator[bytes]:
    """The SSE events of a streamed completion, ending in ``[DONE]``."""
    model, rid, created = gen.served.id, docs.new_id("cmpl"), gen.created
    gen.handle.request_id = rid
    last: Chunk | None = None
    prefix = gen.prompt_text if gen.parsed.echo else ""
    text_event = sse.DeltaEvents(docs.completion_response(
        rid, created, model, sse.DeltaEvents.PLACEHOLDER, None, None))
    want_lps = gen.wants_logprobs
    builder = _completion_builder(gen)
    pending: list[TokenLogprob] = []  # tokens not yet sent with an event

    def lps() -> dict[str, Any] | None:
        if not want_lps:
            return None
        doc = builder.build(pending)
        pending.clear()
        return doc

    try:
        async for chunk in gen.handle:
            last = chunk
            if chunk.prompt_logprobs is not None and gen.parsed.echo:
                pending.extend(chunk.prompt_logprobs)
            pending.extend(chunk.logprobs)
            if chunk.finish_reason is None and (chunk.text or prefix):
                if want_lps:
                    yield sse.encode_event(docs.completion_response(
                        rid, created, model, prefix + chunk.text, None, None, logprobs=lps()))
                else:
                    yield text_event.event(prefix + chunk.text)
                prefix = ""
        assert last is not None
        if last.finish_reason in ("error", "cancelled"):
            yield _error_event(last, gen.parsed.user_grammar)
        else:
            yield sse.encode_event(docs.completion_response(
                rid, created, model, prefix + last.text, last.finish_reason, last.metrics,
                last.loop_guard, logprobs=lps()))
        yield sse.DONE
    finally:
        if last is None or last.finish_reason is None:
            gen.handle.cancel()
        gen.finished(last if last is not None and last.finish_reason else None)
