"""llama-server's answer documents: ``timings``, ``completion_probabilities`` and the
``/completion`` response, built from the engine's chunks and metrics.

``timings`` carries llama-server's names beside Loadout's figures (docs/speed-figures.md):
``prompt_n`` is the prompt tokens processed (``cache_n`` the ones reused from the slot's
cache), ``prompt_ms`` the prompt's processing time, ``predicted_ms`` the time from the
first to the last generated token, and ``predicted_per_second`` the tokens after the first
per that time: Loadout's decode t/s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from engine.metrics import Metrics
from engine.requests import SamplingParams, TokenLogprob


def llama_timings(m: Metrics) -> dict[str, Any]:
    """llama-server's ``timings`` of one request's figures (zeros where none yet)."""
    prompt_n = max(0, m.prompt_tokens - m.cached_tokens)
    prompt_ms = (m.prefill_s or 0.0) * 1e3
    steps = max(0, m.generated_tokens - 1)  # the first token costs no decode step
    predicted_ms = steps / m.decode_tps * 1e3 if steps and m.decode_tps else 0.0
    return {
        "cache_n": m.cached_tokens,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
        "prompt_per_second": prompt_n / prompt_ms * 1e3 if prompt_ms > 0 else 0.0,
        "predicted_n": m.generated_tokens,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / steps if predicted_ms > 0 else 0.0,
        "predicted_per_second": 1e3 / predicted_ms * steps if predicted_ms > 0 else 0.0,
    }


def _token(token: int, piece: bytes, logprob: float, post: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": token, "token": piece.decode("utf-8", "replace"),
                           "bytes": list(piece)}
    if post:
        doc["prob"] = math.exp(logprob)
    else:
        doc["logprob"] = logprob
    return doc


def probabilities(tokens: Sequence[TokenLogprob], n: int, post: bool) -> list[dict[str, Any]]:
    """``completion_probabilities``: each generated token with the ``n`` most likely at
    its position (``post``: as probabilities, ``prob`` and ``top_probs``). The figures are
    the model's distribution before sampling (see docs/server.md)."""
    out = []
    for t in tokens:
        if t.logprob is None:
            continue
        doc = _token(t.token, t.piece, t.logprob, post)
        tops = [_token(tid, piece, lp, post) for tid, piece, lp in t.top[:n]]
        doc["top_probs" if post else "top_logprobs"] = tops
        out.append(doc)
    return out


def generation_settings(params: SamplingParams, model: str, n_ctx: int, n_probs: int
                        ) -> dict[str, Any]:
    """The sampling settings a request ran with, under llama-server's names."""
    return {"n_predict": params.max_tokens, "seed": params.seed, "model": model,
            "n_ctx": n_ctx, "temperature": params.temperature, "top_k": params.top_k,
            "top_p": params.top_p, "min_p": params.min_p,
            "repeat_penalty": params.repeat_penalty,
            "presence_penalty": params.presence_penalty,
            "frequency_penalty": params.frequency_penalty, "stop": list(params.stop),
            "n_probs": n_probs, "ignore_eos": params.ignore_eos,
            "grammar": params.grammar or "", "cache_prompt": params.cache_prompt,
            "logit_bias": [{"token": t, "bias": b} for t, b in params.logit_bias],
            "stream": False}


def stop_type(reason: str | None) -> str:
    """llama-server's ``stop_type``: ``limit`` (the length), ``eos`` or ``none``."""
    if reason == "length":
        return "limit"
    return "eos" if reason in ("stop", "loop") else "none"


def pick_fields(doc: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """Only ``fields`` of ``doc``, a nested one named by its path (``a/b``), as
    llama-server's ``response_fields`` does."""
    out: dict[str, Any] = {}
    for name in fields:
        node: Any = doc
        for part in name.split("/"):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            out[name] = node
    return out
