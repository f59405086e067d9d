"""``POST /v1/embeddings``: OpenAI's embeddings endpoint over the engine's embedder.

``input`` is a string, a list of strings, a list of token ids or a list of token-id lists;
every input is checked (count, total tokens, empty ones, ids in range, each within the
model's longest input) before any is embedded. Vectors are L2-normalised as OpenAI's are,
as JSON floats or, with ``encoding_format: "base64"``, the base64 of little-endian float32.
A chat model embeds only when ``loadout serve --embeddings`` asked for it.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.embedder import Embedder, EmbeddingResult
from engine.errors import EngineClosedError, QueueFullError
from engine.server.errors import ApiError, bad
from engine.server.generation import GenContext
from engine.server.openai_schema import ServedModel, check_model
from engine.server.request_model import shown
from engine.server.state import RETRY_AFTER_S, EngineLike
from engine.server.tokenize_api import check_encodable, tokenizer_of

log = logging.getLogger(__name__)

ReadJson = Callable[[Request], Awaitable[Any]]
FORMATS = ("float", "base64")


@dataclass(frozen=True)
class EmbeddingLimits:
    """What one embeddings request may hold (OpenAI's own limits by default)."""

    max_inputs: int = 2048
    max_total_tokens: int = 300_000
    max_input_chars: int = 1 << 20


DEFAULT_EMBEDDING_LIMITS = EmbeddingLimits()


@dataclass(frozen=True)
class EmbeddingRequest:
    """A checked request: texts or token lists (one kind), and the output format."""

    texts: tuple[str, ...] | None
    token_lists: tuple[tuple[int, ...], ...] | None
    encoding_format: str
    dimensions: int | None


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def parse_embedding_request(body: Any, served: ServedModel,
                            limits: EmbeddingLimits = DEFAULT_EMBEDDING_LIMITS
                            ) -> EmbeddingRequest:
    """Check an embeddings body (types, shapes, counts); tokens are checked later.

    Raises:
        ApiError: 400 naming the field at fault, 404 for another model's name.
    """
    if not isinstance(body, Mapping):
        raise bad("the request body must be a JSON object", None, "invalid_type")
    check_model(body, served)
    fmt = body.get("encoding_format", "float")
    if fmt is None:
        fmt = "float"
    if fmt not in FORMATS:
        raise bad("'encoding_format' must be \"float\" or \"base64\"", "encoding_format")
    dims = body.get("dimensions")
    if dims is not None and (not _is_int(dims) or dims < 1):
        raise bad("'dimensions' must be a positive integer", "dimensions", "invalid_type")
    if "user" in body and body["user"] is not None and not isinstance(body["user"], str):
        raise bad("'user' must be a string", "user", "invalid_type")
    if "input" not in body or body["input"] is None:
        raise bad("'input' is required", "input", "missing_required_parameter")
    texts, lists = _inputs(body["input"], limits)
    return EmbeddingRequest(texts, lists, fmt, dims)


def _inputs(value: Any, limits: EmbeddingLimits
            ) -> tuple[tuple[str, ...] | None, tuple[tuple[int, ...], ...] | None]:
    if isinstance(value, str | Mapping):
        value = [value]
    if isinstance(value, list) and any(isinstance(v, Mapping) for v in value) and \
            all(isinstance(v, str | Mapping) for v in value):
        value = [_object_text(v) if isinstance(v, Mapping) else v for v in value]
    if not isinstance(value, list):
        raise bad("'input' must be a string, a list of strings, a list of token ids or a "
                  "list of token-id lists", "input", "invalid_type")
    if not value:
        raise bad("'input' is an empty list; send at least one input", "input")
    if len(value) > limits.max_inputs:
        raise bad(f"'input' holds {len(value)} inputs; at most {limits.max_inputs} per "
                  "request", "input", "too_many_inputs")
    if all(isinstance(v, str) for v in value):
        for i, text in enumerate(value):
            if not text:
                raise bad(f"input[{i}] is an empty string; every input needs text", "input",
                          "empty_input")
            if len(text) > limits.max_input_chars:
                raise bad(f"input[{i}] is {len(text)} characters long; at most "
                          f"{limits.max_input_chars}", "input", "input_too_long")
            check_encodable(text, f"input[{i}]", "input")
        return tuple(value), None
    if all(_is_int(v) for v in value):
        return None, (tuple(value),)
    if all(isinstance(v, list) for v in value):
        for i, ids in enumerate(value):
            if not ids:
                raise bad(f"input[{i}] is an empty token list", "input", "empty_input")
            if not all(_is_int(t) for t in ids):
                raise bad(f"input[{i}] must hold token ids (integers) only", "input",
                          "invalid_type")
        return None, tuple(tuple(ids) for ids in value)
    raise bad("'input' must be a string, a list of strings, a list of token ids or a list "
              "of token-id lists (not a mix)", "input", "invalid_type")


def _object_text(item: Mapping[str, Any]) -> str:
    """The text of llama-server's input objects: ``{"prompt_string": text}`` or
    ``{"content": [{"type": "text", "text": ...}, ...]}`` (text parts only)."""
    if isinstance(item.get("prompt_string"), str):
        return str(item["prompt_string"])
    content = item.get("content")
    if isinstance(content, list) and content and all(
            isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
            for p in content):
        return "".join(p["text"] for p in content)
    raise bad("an input object must be {\"content\": [{\"type\": \"text\", \"text\": "
              "...}, ...]} or {\"prompt_string\": text}; embeddings take text only", "input",
              "invalid_type")


def embedder_of(engine: EngineLike, served: ServedModel) -> Embedder:
    """The engine's embedder, or a 400 that says why this model does not embed."""
    embedder: Embedder | None = getattr(engine, "embedder", None)
    if embedder is not None:
        return embedder
    refusal = getattr(engine, "embedding_refusal", None)
    if refusal:
        raise ApiError(400, f"'{served.id}' cannot embed: {refusal}", param="model",
                       code="pooling_unsupported")
    raise ApiError(400, f"'{served.id}' is a chat model, not an embedding model; start the "
                        "server with 'loadout serve MODEL --embeddings' to embed with it "
                        "(mean pooling over its hidden states)", param="model",
                   code="model_not_embedding")


def token_lists(engine: EngineLike, req: EmbeddingRequest, embedder: Embedder,
                limits: EmbeddingLimits) -> list[Sequence[int]]:
    """Every input as token ids, each checked against the vocabulary and the longest input.

    Raises:
        ApiError: 400 ``context_length_exceeded`` naming the first input that is too long,
            or an id out of range, or too many tokens in all.
    """
    tok = tokenizer_of(engine)
    if req.texts is not None:
        lists: list[Sequence[int]] = [tok.tokenize(text) for text in req.texts]
    else:
        assert req.token_lists is not None
        lists = list(req.token_lists)
        n_vocab = int(tok.native_model.n_vocab)
        for i, ids in enumerate(lists):
            bad_id = next((t for t in ids if not 0 <= t < n_vocab), None)
            if bad_id is not None:
                raise bad(f"input[{i}] holds token id {shown(bad_id)}, outside this model's "
                          f"vocabulary (0 to {n_vocab - 1})", "input", "invalid_token")
    longest = embedder.max_input_tokens
    total = 0
    for i, ids in enumerate(lists):
        if not ids:
            raise bad(f"input[{i}] has no tokens", "input", "empty_input")
        if len(ids) > longest:
            raise bad(f"input[{i}] is {len(ids)} tokens long, too large: this model embeds "
                      f"at most {longest} tokens per input", "input",
                      "context_length_exceeded")
        total += len(ids)
    if total > limits.max_total_tokens:
        raise bad(f"the inputs hold {total} tokens in all; at most {limits.max_total_tokens} "
                  "per request", "input", "too_many_tokens")
    return lists


def _encoded(vector: np.ndarray, fmt: str) -> list[float] | str:
    if fmt == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    out: list[float] = vector.tolist()
    return out


def embeddings_response(result: EmbeddingResult, fmt: str, model: str) -> dict[str, Any]:
    """OpenAI's ``CreateEmbeddingResponse`` for one answered request."""
    data = [{"object": "embedding", "index": i, "embedding": _encoded(row, fmt)}
            for i, row in enumerate(result.vectors)]
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": result.prompt_tokens,
                      "total_tokens": result.prompt_tokens}}


def embedding_routes(ctx: GenContext, read_json: ReadJson,
                     limits: EmbeddingLimits = DEFAULT_EMBEDDING_LIMITS) -> list[Route]:
    """``/v1/embeddings`` and ``/embeddings``, with their counters on the server's metrics."""
    state = ctx.state
    registry = ctx.metrics.registry
    inputs_total = registry.counter("loadout_embedding_inputs_total",
                                    "Inputs embedded by /v1/embeddings")
    tokens_total = registry.counter("loadout_embedding_tokens_total",
                                    "Tokens of the inputs embedded by /v1/embeddings")

    async def embeddings(request: Request) -> Response:
        body = await read_json(request)
        engine, served = state.require()
        req = parse_embedding_request(body, served, limits)
        embedder = embedder_of(engine, served)
        if req.dimensions is not None and req.dimensions != embedder.n_embd:
            raise bad(f"this model's embeddings have {embedder.n_embd} dimensions and it "
                      "cannot shorten them (it declares no Matryoshka training); leave "
                      f"'dimensions' out or set it to {embedder.n_embd}", "dimensions",
                      "dimensions_unsupported")
        lists = await asyncio.to_thread(token_lists, engine, req, embedder, limits)
        try:
            future = embedder.submit(lists)
        except QueueFullError as exc:
            raise ApiError(503, "the server is busy: the embedding queue is full; retry "
                                "shortly", code="queue_full",
                           headers={"Retry-After": RETRY_AFTER_S}) from exc
        except EngineClosedError as exc:
            raise ApiError(503, "the engine is shutting down", code="engine_closed") from exc
        result = await asyncio.wrap_future(future)
        inputs_total.inc(len(lists))
        tokens_total.inc(result.prompt_tokens)
        doc = await asyncio.to_thread(embeddings_response, result, req.encoding_format,
                                      served.id)
        return JSONResponse(doc)

    return [Route(f"{prefix}/embeddings", embeddings, methods=["POST"])
            for prefix in ("/v1", "")]
