"""OpenAI API response documents built from the engine's chunks and metrics.

Responses carry ``usage`` and a ``timings`` object with the speed figures of docs/speed-figures.md
(the OpenAI schemas allow extra properties on the response objects).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from engine.metrics import Metrics
from engine.server import tools as toolcalls
from engine.server.llamacpp.native_docs import llama_timings
from engine.server.openai_schema import ServedModel


def new_id(prefix: str) -> str:
    """A fresh response id like ``chatcmpl-9f...``."""
    return f"{prefix}-{secrets.token_hex(12)}"


def finish_reason(engine_reason: str | None, has_tool_calls: bool = False) -> str | None:
    """The OpenAI finish reason for the engine's (a stopped loop is a stop)."""
    if engine_reason is None:
        return None
    if has_tool_calls:
        return "tool_calls"
    return "length" if engine_reason == "length" else "stop"


def usage_json(m: Metrics) -> dict[str, Any]:
    """``usage`` (``CompletionUsage``): token counts with the cached prompt tokens."""
    return {"prompt_tokens": m.prompt_tokens, "completion_tokens": m.generated_tokens,
            "total_tokens": m.prompt_tokens + m.generated_tokens,
            "prompt_tokens_details": {"cached_tokens": m.cached_tokens}}


def timings_json(m: Metrics, loop_guard: str | None = None) -> dict[str, Any]:
    """The figures of docs/speed-figures.md, named as there (``acceptance`` when speculating)."""
    doc: dict[str, Any] = {
        "ttft_s": m.ttft_s, "prefill_tps": m.prefill_tps, "decode_tps": m.decode_tps,
        "e2e_tps": m.e2e_tps, "prompt_tokens": m.prompt_tokens,
        "cached_tokens": m.cached_tokens, "generated_tokens": m.generated_tokens,
        "prefill_s": m.prefill_s,
    }
    if m.drafted_tokens:
        doc.update(acceptance=m.acceptance, drafted_tokens=m.drafted_tokens,
                   accepted_tokens=m.accepted_tokens, tokens_per_step=m.tokens_per_step)
    if m.images:
        doc.update(images=m.images, image_tokens=m.image_tokens,
                   image_encode_s=m.image_encode_s, image_decode_s=m.image_decode_s)
    if loop_guard:
        doc["loop_guard"] = loop_guard
    doc.update(llama_timings(m))  # llama-server's names for the same figures
    return doc


def chat_response(rid: str, created: int, model: str, content: str | None,
                  calls: Sequence[toolcalls.ToolCall], reason: str | None, metrics: Metrics,
                  loop_guard: str | None = None, logprobs: Mapping[str, Any] | None = None
                  ) -> dict[str, Any]:
    """A whole ``chat.completion`` document (``logprobs``: the choice's, when asked)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [c.to_json() for c in calls]
    return {"id": rid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message,
                         "logprobs": dict(logprobs) if logprobs is not None else None,
                         "finish_reason": finish_reason(reason, bool(calls)) or "stop"}],
            "usage": usage_json(metrics), "timings": timings_json(metrics, loop_guard)}


def chat_chunk(rid: str, created: int, model: str, delta: Mapping[str, Any],
               reason: str | None = None, logprobs: Mapping[str, Any] | None = None
               ) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice."""
    return {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": dict(delta),
                         "logprobs": dict(logprobs) if logprobs is not None else None,
                         "finish_reason": reason}]}


def chat_usage_chunk(rid: str, created: int, model: str, metrics: Metrics) -> dict[str, Any]:
    """The last chunk when ``stream_options.include_usage``: no choices, the usage."""
    return {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [], "usage": usage_json(metrics), "timings": timings_json(metrics)}


def completion_response(rid: str, created: int, model: str, text: str, reason: str | None,
                        metrics: Metrics | None, loop_guard: str | None = None,
                        logprobs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``text_completion`` document (also each streamed piece, without usage)."""
    doc: dict[str, Any] = {
        "id": rid, "object": "text_completion", "created": created, "model": model,
        "choices": [{"index": 0, "text": text,
                     "logprobs": dict(logprobs) if logprobs is not None else None,
                     "finish_reason": finish_reason(reason)}],
    }
    if metrics is not None:
        doc["usage"] = usage_json(metrics)
        doc["timings"] = timings_json(metrics, loop_guard)
    return doc


def models_list(model: ServedModel) -> dict[str, Any]:
    """The ``/v1/models`` document: the one model this server serves."""
    entry: dict[str, Any] = {"id": model.id, "object": "model", "created": model.created,
                             "owned_by": "loadout",
                             # llama-server's: every name the model answers to, and its tags
                             "aliases": sorted(model.alias_names),
                             "tags": list(model.tags)}
    return {"object": "list", "data": [entry]}
