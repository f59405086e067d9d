"""``POST /tokenize`` and ``POST /detokenize``, with llama.cpp server's names and shapes.

``/tokenize``: ``{"content": str, "add_special": bool, "with_pieces": bool}`` ->
``{"tokens": [id, ...]}``, or with pieces ``{"tokens": [{"id": id, "piece": str}, ...]}``
(a piece that is not whole UTF-8 is given as its list of byte values). ``/detokenize``:
``{"tokens": [id, ...]}`` -> ``{"content": str}``. Both also answer under ``/v1``.
Special tokens in the content are parsed as such, and render as their text.
"""

from __future__ import annotations

import asyncio
import ctypes
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.native.model import llama
from engine.server.errors import ApiError, bad
from engine.server.generation import GenContext
from engine.server.openai_schema import boolean
from engine.server.request_model import shown

ReadJson = Callable[[Request], Awaitable[Any]]


@dataclass(frozen=True)
class TokenizeLimits:
    """The largest text to tokenize and the most tokens to detokenize in one request."""

    max_content_chars: int = 4 << 20
    max_tokens: int = 1 << 20


DEFAULT_TOKENIZE_LIMITS = TokenizeLimits()


@runtime_checkable
class Tokenizing(Protocol):
    """The part of an engine these routes use."""

    def tokenize(self, text: str, add_special: bool = True) -> list[int]: ...

    @property
    def native_model(self) -> Any: ...


def tokenizer_of(engine: object) -> Tokenizing:
    """The engine as a tokenizer (every engine Loadout loads is one)."""
    if not isinstance(engine, Tokenizing):
        raise ApiError(501, "this engine cannot tokenize", code="not_implemented")
    return engine


def piece(vocab: Any, token: int) -> bytes:
    """The bytes of one token, special tokens rendered as their text (as llama.cpp's
    server shows them)."""
    buf = ctypes.create_string_buffer(64)
    n = llama().llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    if n < 0:
        buf = ctypes.create_string_buffer(-n)
        n = llama().llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
    return buf.raw[:n]


def check_encodable(text: str, what: str, param: str) -> None:
    """A 400 for text that is not valid Unicode (a lone surrogate from a JSON escape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise bad(f"{what} holds a lone surrogate at character {exc.start}; send valid "
                  "Unicode", param, "invalid_text") from exc


def parse_tokenize(body: Any, limits: TokenizeLimits) -> tuple[str, bool, bool]:
    """``(content, add_special, with_pieces)`` of a checked ``/tokenize`` body."""
    if not isinstance(body, Mapping):
        raise bad("the request body must be a JSON object", None, "invalid_type")
    content = body.get("content")
    if content is None:
        raise bad("'content' is required", "content", "missing_required_parameter")
    if not isinstance(content, str):
        raise bad("'content' must be a string", "content", "invalid_type")
    if len(content) > limits.max_content_chars:
        raise bad(f"'content' is {len(content)} characters long; at most "
                  f"{limits.max_content_chars}", "content", "input_too_long")
    check_encodable(content, "'content'", "content")
    return content, boolean(body, "add_special"), boolean(body, "with_pieces")


def parse_detokenize(body: Any, n_vocab: int, limits: TokenizeLimits) -> list[int]:
    """The checked token ids of a ``/detokenize`` body (each within the vocabulary)."""
    if not isinstance(body, Mapping):
        raise bad("the request body must be a JSON object", None, "invalid_type")
    tokens = body.get("tokens")
    if tokens is None:
        raise bad("'tokens' is required", "tokens", "missing_required_parameter")
    if not isinstance(tokens, list):
        raise bad("'tokens' must be a list of token ids", "tokens", "invalid_type")
    if len(tokens) > limits.max_tokens:
        raise bad(f"'tokens' holds {len(tokens)} ids; at most {limits.max_tokens}", "tokens",
                  "too_many_tokens")
    for i, t in enumerate(tokens):
        if not isinstance(t, int) or isinstance(t, bool):
            raise bad(f"tokens[{i}] must be an integer token id", "tokens", "invalid_type")
        if not 0 <= t < n_vocab:
            raise bad(f"tokens[{i}] is {shown(t)}, outside this model's vocabulary (0 to "
                      f"{n_vocab - 1})", "tokens", "invalid_token")
    return tokens


def _pieces(vocab: Any, ids: Sequence[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in ids:
        raw = piece(vocab, t)
        try:
            shown: str | list[int] = raw.decode("utf-8")
        except UnicodeDecodeError:  # part of a character: its bytes, as llama.cpp does
            shown = list(raw)
        out.append({"id": t, "piece": shown})
    return out


def tokenize_routes(ctx: GenContext, read_json: ReadJson,
                    limits: TokenizeLimits = DEFAULT_TOKENIZE_LIMITS) -> list[Route]:
    """``/tokenize`` and ``/detokenize``, with and without ``/v1``."""
    state = ctx.state

    async def tokenize(request: Request) -> Response:
        body = await read_json(request)
        engine, _ = state.require()
        tok = tokenizer_of(engine)
        content, add_special, with_pieces = parse_tokenize(body, limits)

        def work() -> dict[str, Any]:
            ids = tok.tokenize(content, add_special=add_special)
            if with_pieces:
                return {"tokens": _pieces(tok.native_model.vocab, ids)}
            return {"tokens": ids}

        return JSONResponse(await asyncio.to_thread(work))

    async def detokenize(request: Request) -> Response:
        body = await read_json(request)
        engine, _ = state.require()
        tok = tokenizer_of(engine)
        ids = parse_detokenize(body, int(tok.native_model.n_vocab), limits)

        def work() -> str:
            vocab = tok.native_model.vocab
            return b"".join(piece(vocab, t) for t in ids).decode("utf-8", "replace")

        return JSONResponse({"content": await asyncio.to_thread(work)})

    routes: list[Route] = []
    for prefix in ("", "/v1"):
        routes += [Route(f"{prefix}/tokenize", tokenize, methods=["POST"]),
                   Route(f"{prefix}/detokenize", detokenize, methods=["POST"])]
    return routes
