"""``POST /completion`` (and ``/completions``, llama-server's alias): llama.cpp's native
completion API.

The body is read and checked as ``/v1/completions`` reads and checks it (the same reader,
parser, limits and grammar check), after :mod:`.native_request` has translated its
llama-server names; the answer is llama-server's document (``content``, ``tokens``,
``stop``, ``timings``, ``completion_probabilities`` ...), streamed as llama-server streams
it: one event per piece, ``prompt_progress`` events when asked, a last event with
``"stop": true`` and no ``[DONE]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine.metrics import Metrics
from engine.requests import Chunk
from engine.server import openai_schema as oa
from engine.server import sse
from engine.server.api_common import RouteKit
from engine.server.errors import ApiError, bad
from engine.server.generation import GenContext, Generation, _raise_for_engine_failure
from engine.server.llamacpp import native_docs as nd
from engine.server.llamacpp.infill import INFILL_ONLY, fim_tokens, infill_prompt
from engine.server.llamacpp.native_request import NativeOptions, native_options, openai_bodies
from engine.server.openai_schema import ParsedRequest
from engine.server.request_model import RequestLimits
from engine.server.tokenize_api import tokenizer_of


def _with_native(parsed: ParsedRequest, opts: NativeOptions) -> ParsedRequest:
    """The parsed request with what only the native API asks (``n_probs`` above the
    OpenAI completions' 5, ``ignore_eos``)."""
    changes: dict[str, Any] = {}
    if opts.n_probs:
        changes["logprobs"] = opts.n_probs
    if opts.ignore_eos:
        changes["ignore_eos"] = True
    if not changes:
        return parsed
    params = dataclasses.replace(parsed.generation.params, **changes)
    generation = dataclasses.replace(parsed.generation, params=params)
    return dataclasses.replace(parsed, generation=generation)


class NativeAnswer:
    """Builds the documents of one native request's answer."""

    def __init__(self, gen: Generation, opts: NativeOptions, n_ctx: int) -> None:
        self.gen = gen
        self.opts = opts
        self.n_ctx = n_ctx

    def piece(self, text: str, tokens: tuple[int, ...], m: Any,
              probs: list[dict[str, Any]] | None) -> dict[str, Any]:
        doc: dict[str, Any] = {"index": 0, "content": text, "tokens": list(tokens),
                               "stop": False, "id_slot": self.opts.id_slot,
                               "tokens_predicted": m.generated_tokens,
                               "tokens_evaluated": m.prompt_tokens}
        if probs is not None:
            doc["completion_probabilities"] = probs
        if self.opts.timings_per_token:
            doc["timings"] = nd.llama_timings(m)
        return doc

    def final(self, text: str, last: Chunk, tokens: tuple[int, ...], streamed: bool
              ) -> dict[str, Any]:
        m, gen, opts = last.metrics, self.gen, self.opts
        params = gen.parsed.generation.params
        settings = nd.generation_settings(params, gen.served.id, self.n_ctx, opts.n_probs)
        settings["stream"] = streamed
        doc: dict[str, Any] = {
            "index": 0, "content": text,
            "tokens": list(tokens) if opts.return_tokens and not streamed else [],
            "id_slot": opts.id_slot, "stop": True, "model": gen.served.id,
            "tokens_predicted": m.generated_tokens, "tokens_evaluated": m.prompt_tokens,
            "generation_settings": settings, "prompt": gen.prompt_text,
            "has_new_line": "\n" in text, "truncated": False,
            "stop_type": nd.stop_type(last.finish_reason), "stopping_word": "",
            "tokens_cached": m.prompt_tokens + m.generated_tokens,
            "timings": nd.llama_timings(m),
        }
        if opts.n_probs and not streamed:
            doc["completion_probabilities"] = nd.probabilities(
                gen.logprobs, opts.n_probs, opts.post_sampling_probs)
        if opts.response_fields:
            return nd.pick_fields(doc, opts.response_fields)
        return doc

    def progress(self, m: Any, total: int, done: bool) -> dict[str, Any]:
        """A ``prompt_progress`` event: at the prompt's start, then once it is processed
        (Loadout's engine reports the prompt whole, not batch by batch)."""
        timings = nd.llama_timings(m) if done else nd.llama_timings(
            dataclasses.replace(m, prefill_s=0.0, generated_tokens=0, decode_tps=None,
                                cached_tokens=0, prompt_tokens=0))
        cache = m.cached_tokens if done else 0
        return {"index": 0, "content": "", "tokens": [], "stop": False,
                "id_slot": self.opts.id_slot,
                "prompt_progress": {"total": total, "cache": cache,
                                    "processed": total if done else cache,
                                    "time_ms": timings["prompt_ms"]},
                "timings": timings}


async def _native_events(answer: NativeAnswer, total: int) -> AsyncIterator[bytes]:
    """llama-server's stream: pieces, then the last document with ``stop: true``."""
    gen, opts = answer.gen, answer.opts
    last: Chunk | None = None
    parts: list[str] = []
    try:
        if opts.return_progress:
            empty = Metrics(None, None, None, None, 0, 0, 0)
            yield sse.encode_event(answer.progress(empty, total, False))
        async for chunk in gen.handle:
            if last is None and opts.return_progress:
                yield sse.encode_event(answer.progress(chunk.metrics, chunk.metrics.
                                                       prompt_tokens, True))
            last = chunk
            if chunk.finish_reason is not None:
                break
            parts.append(chunk.text)
            for doc in _pieces(answer, chunk):
                yield sse.encode_event(doc)
        assert last is not None
        if last.finish_reason in ("error", "cancelled"):
            try:
                _raise_for_engine_failure(last, gen.parsed.user_grammar)
            except ApiError as err:
                yield sse.encode_event(err.to_json())
            return
        if last.text:
            parts.append(last.text)
            for doc in _pieces(answer, last):
                yield sse.encode_event(doc)
        yield sse.encode_event(answer.final("", last, (), True))
    finally:
        if last is None or last.finish_reason is None:
            gen.handle.cancel()
        gen.finished(last if last is not None and last.finish_reason else None)


def _pieces(answer: NativeAnswer, chunk: Chunk) -> list[dict[str, Any]]:
    """The events of one engine chunk: one per token when probabilities are asked (each
    carries its token's), else one."""
    opts, m = answer.opts, chunk.metrics
    if not opts.n_probs or not chunk.logprobs:
        if not chunk.text and not chunk.token_ids:
            return []
        return [answer.piece(chunk.text, chunk.token_ids, m, None)]
    docs = []
    lps = chunk.logprobs
    for i, lp in enumerate(lps):
        text = chunk.text if i == len(lps) - 1 else ""
        probs = nd.probabilities([lp], opts.n_probs, opts.post_sampling_probs)
        docs.append(answer.piece(text, (lp.token,), m, probs))
    return docs


def completion_routes(ctx: GenContext, limits: RequestLimits, kit: RouteKit) -> list[Route]:
    """``POST /completion``, ``POST /completions`` and ``POST /infill``."""
    state = ctx.state

    async def answer(request: Request, body: Mapping[str, Any], engine: Any,
                     served: Any) -> Response:
        n_slots = len((engine.status() or {}).get("slots") or ()) or 1
        opts = native_options(body, n_slots)

        def tokenize(text: str) -> list[int]:
            return list(tokenizer_of(engine).tokenize(text, add_special=False))

        bodies, many = openai_bodies(body, served, tokenize, opts)
        if opts.stream and many:
            raise bad("stream one prompt per request", "prompt")
        parsed = [_with_native(await kit.parse(oa.parse_completion, b, served, limits), opts)
                  for b in bodies]
        for p in parsed:
            await kit.probe_grammar(state, p)
        if opts.stream:
            gen = await Generation.start(ctx, parsed[0], "prompt")
            total = len(parsed[0].generation.prompt_tokens or ()) or len(
                tokenize(parsed[0].generation.prompt or ""))
            native = NativeAnswer(gen, opts, served.n_ctx_per_seq)
            return sse.EventStreamResponse(_native_events(native, total), gen.close)
        gens: list[Generation] = []
        try:
            for p in parsed:
                gens.append(await Generation.start(ctx, p, "prompt"))
            docs = []
            for gen in gens:
                text, last = await gen.collect(request)
                native = NativeAnswer(gen, opts, served.n_ctx_per_seq)
                docs.append(native.final(text, last, gen.handle.token_ids, False))
        finally:
            for gen in gens:
                gen.close()
        return kit.json(docs if many else docs[0])

    async def completion(request: Request) -> Response:
        body = await kit.read_json(request)
        engine, served = state.require()
        if not isinstance(body, Mapping):
            raise bad("the request body must be a JSON object", code="invalid_json")
        return await answer(request, body, engine, served)

    async def infill(request: Request) -> Response:
        body = await kit.read_json(request)
        engine, served = state.require()

        def tokenize(text: str) -> list[int]:
            return list(tokenizer_of(engine).tokenize(text, add_special=False))

        tokens = infill_prompt(body, fim_tokens(engine), tokenize)
        rest = {k: v for k, v in body.items() if k not in INFILL_ONLY}
        return await answer(request, {**rest, "prompt": tokens}, engine, served)

    return [Route("/completion", completion, methods=["POST"]),
            Route("/completions", completion, methods=["POST"]),
            Route("/infill", infill, methods=["POST"])]
