"""Seeded hostile requests for every route of ``loadout serve``: a valid body per route,
then one to three of its fields (or a nested field, or an unknown one) replaced by a value
of the wrong type, out of range, huge, deeply nested or not Unicode; now and then a body
that is not JSON at all. ``requests(seed, n)`` gives the same requests for the same seed.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MODEL = "demo"
USER = [{"role": "user", "content": "hi"}]
BIG_INT = int("9" * 400)  # past the float range: math.isfinite() overflows on it
NAN, INF = float("nan"), float("inf")  # sent as NaN / Infinity (Python's json does)


@dataclass(frozen=True)
class Attack:
    """One request: ``body`` is sent as is (bytes)."""

    method: str
    path: str
    body: bytes
    note: str


def _schema(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}


# values of every JSON type, edge and hostile; a callable builds a fresh (large) one
HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1, 2**31, 2**63, 2**64, 2**70, -(2**70), BIG_INT, -BIG_INT,
    0.5, -0.0, 1e308, -1e308, 1e-320, NAN, INF, -INF, "", "0", "1e9", "true", "null",
    "\ud800", "a\udfffb", "\x00", "a\x00b", "\u202e\ufeff", "\U0001f600" * 3, "x" * 5000,
    [], [None], [1, "a", None], [[[]]], {}, {"a": 1}, {"type": None}, {"": {"": {}}},
    {"type": "function"}, {"type": "image_url", "image_url": {"url": "data:,"}},
    {"type": "input_image", "image_url": "data:image/png;base64,%%%"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                 "data": "AAAA"}},
    {"type": "bogus", "text": 5}, [{"type": "text", "text": "\ud800"}],
    {"type": "object", "properties": [1]}, {"type": "object", "properties": {"a": 5}},
    {"type": "array", "items": [1]}, {"oneOf": [5]}, {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"type": "integer", "minimum": BIG_INT}, {"type": "string", "maxLength": 10**7},
    {"type": "string", "pattern": "^[z-a]$"}, {"enum": list(range(3000))},
    'root ::= [z-a]', 'root ::= "\\UFFFFFFFF"', 'root ::= <[99999999]>', 'root ::= (',
    'root ::= "a"{5,2}', 'root ::= [0-9]', {"9" * 30: 1}, {"5": BIG_INT}, {"abc": 1},
    {"5": -100, "6": NAN}, {"mode": "zzz"}, {"draft_tokens": -1},
    lambda: ["x"] * 10_000, lambda: [[1, 2, 99_999_999]], lambda: list(range(5000)),
    lambda: {f"k{i}": i for i in range(3000)},
    # past the body's budgets (max_array_items, max_json_elements): refused before the
    # route looks at them, in bounded time, off the event loop
    lambda: list(range(140_000)), lambda: {f"k{i}": 0 for i in range(140_000)},
    lambda: [[0] * 1000 for _ in range(270)],
]

GRAMMAR = "root ::= [0-9]"
DIGIT_BANS = {str(t): -100 for t in range(32, 42)}  # the demo model's digit tokens


def _bases() -> dict[str, tuple[str, dict[str, Any], list[str]]]:
    """route -> (method, a valid body, the fields to attack (dotted for nested ones))."""
    chat = {"model": MODEL, "messages": USER, "max_tokens": 2, "temperature": 0.5,
            "grammar": GRAMMAR, "logit_bias": DIGIT_BANS, "stop": ["\n\n"], "seed": 1}
    return {
        "/v1/chat/completions": ("POST", chat, [
            "model", "messages", "messages.0", "messages.0.role", "messages.0.content",
            "messages.0.name", "max_tokens", "max_completion_tokens", "temperature",
            "top_p", "top_k", "min_p", "seed", "stop", "n", "logprobs", "top_logprobs",
            "logit_bias", "grammar", "response_format", "tools", "tool_choice", "stream",
            "stream_options", "speculative", "loop_guard", "user", "unknown_field"]),
        "/v1/completions": ("POST", {"model": MODEL, "prompt": "x", "max_tokens": 2,
                                     "logprobs": 2, "echo": True}, [
            "model", "prompt", "max_tokens", "logprobs", "echo", "suffix", "best_of",
            "logit_bias", "grammar", "response_format", "stream", "seed", "unknown"]),
        "/v1/responses": ("POST", {"model": MODEL, "input": "hi", "max_output_tokens": 2,
                                   "instructions": "be brief", "store": False}, [
            "model", "input", "instructions", "max_output_tokens", "temperature",
            "top_logprobs", "tools", "tool_choice", "text", "text.format",
            "text.format.schema", "metadata", "previous_response_id", "store", "stream",
            "truncation", "background", "seed", "unknown"]),
        "/v1/messages": ("POST", {"model": MODEL, "max_tokens": 2, "messages": USER,
                                  "system": "be brief"}, [
            "model", "messages", "messages.0.content", "messages.0.role", "system",
            "max_tokens", "stop_sequences", "temperature", "top_k", "tools",
            "tool_choice", "metadata", "thinking", "stream", "seed", "unknown"]),
        "/v1/messages/count_tokens": ("POST", {"model": MODEL, "messages": USER}, [
            "model", "messages", "messages.0.content", "system", "tools", "unknown"]),
        "/v1/embeddings": ("POST", {"model": MODEL, "input": "hi"}, [
            "model", "input", "encoding_format", "dimensions", "user", "unknown"]),
        "/tokenize": ("POST", {"content": "hi", "with_pieces": True}, [
            "content", "add_special", "with_pieces", "unknown"]),
        "/detokenize": ("POST", {"tokens": [1, 2, 3]}, ["tokens", "unknown"]),
    }


def _dumps(doc: Any) -> bytes:
    # lone surrogates go out as JSON escapes, as a broken client writes them
    return json.dumps(doc, ensure_ascii=True).encode("ascii")


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """``doc[a][b]... = value`` for the dotted path (list items by index); where an
    earlier replacement left no such place, the field itself is replaced."""
    node: Any = doc
    keys = dotted.split(".")
    try:
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(keys[-1])] = value
        else:
            node[keys[-1]] = value
    except (KeyError, IndexError, TypeError, ValueError):
        doc[keys[0]] = value


def _raw(rng: random.Random) -> bytes:
    """A body that is not a JSON object: junk bytes, deep nesting, bad UTF-8, cut JSON."""
    depth = rng.choice([100, 5000, 100_000])
    return rng.choice([
        b"", b"{", b"[]", b"null", b'"x"', b"\xff\xfe{}", b'{"model": "\xc3\x28"}',
        b'{"a": 1, "a": {"b": [' + b"[" * depth + b"]" * depth + b"]}}",
        b'{"model": "demo", "max_tokens": ' + b"9" * 5000 + b"}",
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
    ])


def requests(seed: int, n: int) -> Iterator[Attack]:
    """``n`` hostile requests over every route, the same ones for the same ``seed``."""
    rng = random.Random(seed)
    bases = _bases()
    routes = sorted(bases)
    for _ in range(n):
        path = rng.choice(routes)
        method, base, fields = bases[path]
        if rng.random() < 0.08:
            yield Attack(method, path, _raw(rng), "not a JSON object")
            continue
        doc = json.loads(json.dumps(base))
        notes = []
        for field in rng.sample(fields, k=rng.randint(1, min(3, len(fields)))):
            value = rng.choice(HOSTILE)
            value = value() if callable(value) else copy.deepcopy(value)
            _set(doc, field, value)
            notes.append(f"{field}={str(value)[:30]!r}")
        yield Attack(method, path, _dumps(doc), ", ".join(notes))
