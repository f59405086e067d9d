"""The request model: every field a generation request may carry, with its JSON type and
range, checked before any of it is used.

One table serves ``/v1/chat/completions`` and ``/v1/completions`` (and any later endpoint
that takes the same sampling fields): :func:`check_body` refuses a wrong type or an
out-of-range value with a 400 naming the field, so the parsers after it (in
:mod:`engine.server.openai_schema`) only ever see values of the type they expect. The
nested shapes whose contents reach the chat template (messages, tool calls, tools,
``tool_choice``) are checked here too. Fields the table does not name are ignored, as
OpenAI's own API ignores what it does not use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.server.errors import ApiError, bad
from engine.server.grammar_budget import DEFAULT_LIMITS, GrammarLimits
from engine.server.images import DEFAULT_IMAGE_LIMITS, ImageLimits

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (Mapping,), "array": (list,)}


@dataclass(frozen=True)
class RequestLimits:
    """Sizes a request may not exceed (besides the grammar budget).

    Attributes:
        max_json_depth: how deeply the body's JSON may nest.
        max_json_elements: JSON values (numbers, strings, arrays ...) in one body.
        max_array_items: items of one array (or members of one object) in a body.
        body_check_s: the time the body's check may take (off the event loop).
        max_messages: messages in one chat request.
        max_tools: tools declared in one request.
        max_stop_sequences: stop strings in one request.
        max_stop_chars: the length of one stop string.
        max_tokens: the largest ``max_tokens`` accepted, and the default when a request
            names none (the context caps both too).
        grammar: the budget of grammars and JSON schemas.
        images: what images a chat request may carry (count, bytes, pixels, URLs).
        sampling_defaults: the server's defaults for a request that names none
            (``temperature``, ``seed``: llama-server's ``--temp`` and ``--seed``).
        cap_tokens: answers asking more tokens get this many (llama-server's
            ``-n``: a cap, where ``max_tokens`` refuses); None: no cap.
        echo_prompt: every chat answer carries the prompt it was rendered to, as
            ``__verbose`` (llama-server's ``--verbose``; a request asks with ``verbose``).
    """

    max_json_depth: int = 64
    max_json_elements: int = 1 << 18
    max_array_items: int = 1 << 17
    body_check_s: float = 2.0
    max_messages: int = 2048
    max_tools: int = 128
    max_stop_sequences: int = 8
    max_stop_chars: int = 128
    max_tokens: int = 1 << 31
    grammar: GrammarLimits = DEFAULT_LIMITS
    images: ImageLimits = DEFAULT_IMAGE_LIMITS
    sampling_defaults: Mapping[str, Any] = field(default_factory=dict)
    echo_prompt: bool = False
    cap_tokens: int | None = None


DEFAULT_REQUEST_LIMITS = RequestLimits()


@dataclass(frozen=True)
class Field:
    """One request field: the JSON types it may have, and its range when a number.

    ``lo_open``: the lower bound itself is refused (``repeat_penalty`` must be above 0).
    """

    types: tuple[str, ...]
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False


_SAMPLING = {
    "model": Field(("string",)),
    "stream": Field(("boolean",)),
    "stream_options": Field(("object",)),
    "temperature": Field(("number",), 0.0, 2.0),
    "top_p": Field(("number",), 0.0, 1.0),
    "top_k": Field(("integer",), 0, 1 << 20),
    "min_p": Field(("number",), 0.0, 1.0),
    "repeat_penalty": Field(("number",), 0.0, 10.0, lo_open=True),
    "presence_penalty": Field(("number",), -2.0, 2.0),
    "frequency_penalty": Field(("number",), -2.0, 2.0),
    "seed": Field(("integer",), -(2.0**63), 2.0**64 - 1),
    "max_tokens": Field(("integer",), 1, 1 << 31),
    "stop": Field(("string", "array")),
    "n": Field(("integer",), 1, 128),
    "best_of": Field(("integer",), 1, 128),
    "logprobs": Field(("boolean", "integer")),
    "top_logprobs": Field(("integer",), 0, 20),
    "logit_bias": Field(("object",)),
    "user": Field(("string",)),
    "response_format": Field(("object",)),
    "grammar": Field(("string",)),
    "loop_guard": Field(("string",)),
    "cache_prompt": Field(("boolean",)),
    "speculative": Field(("object",)),
}
CHAT_FIELDS: dict[str, Field] = {
    **_SAMPLING,
    "messages": Field(("array",)),
    "tools": Field(("array",)),
    "tool_choice": Field(("string", "object")),
    "parallel_tool_calls": Field(("boolean",)),
    "max_completion_tokens": Field(("integer",), 1, 1 << 31),
}
COMPLETION_FIELDS: dict[str, Field] = {
    **_SAMPLING,
    "prompt": Field(("string", "array")),
    "max_tokens": Field(("integer",), 0, 1 << 31),  # 0: score the prompt (echo, logprobs)
    "echo": Field(("boolean",)),
    "suffix": Field(("string",)),
}


def json_depth_ok(doc: Any, limit: int) -> bool:
    """Whether ``doc`` nests no deeper than ``limit`` (iterative: any depth is safe)."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            if depth >= limit:
                return False
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            if depth >= limit:
                return False
            stack.extend((v, depth + 1) for v in node)
    return True


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is past the range of a double")
    return value


def loads(raw: bytes) -> Any:
    """A request body decoded as JSON (RFC 8259): Python's own ``NaN``, ``Infinity`` and
    numbers past the double range (``1e400``, read as infinity) are refused, so nothing
    a request carries can make an answer that is not JSON (an echo of it failed to
    encode: a 500).

    Raises:
        ValueError: not JSON (the message says why).
        RecursionError: it nests too deeply.
    """
    return json.loads(raw, parse_constant=_not_a_number, parse_float=_finite_float)


def lone_surrogate_at(doc: Any) -> str | None:
    """Where a decoded JSON document holds a lone surrogate (a ``\\ud800`` escape that
    pairs with nothing, which is not Unicode text and which no tokenizer encodes): the
    path of the first such string or key, or None. Iterative: any depth is safe."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return path or "the body"
        elif isinstance(node, Mapping):
            for key, value in node.items():
                where = f"{path}.{key}" if path else str(key)
                stack.append((value, where))
                stack.append((key, where))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def check_unicode(doc: Any) -> None:
    """Refuse a body holding a lone surrogate anywhere, naming where (every route, before
    any of it reaches a tokenizer, a file name or a log).

    Raises:
        ApiError: 400 ``invalid_text``.
    """
    where = lone_surrogate_at(doc)
    if where is not None:
        raise bad(f"'{shown(where, 80)}' holds a lone surrogate (an unpaired \\ud800-\\udfff "
                  "escape), which is not Unicode text; send valid Unicode", where,
                  "invalid_text")


def _type_ok(value: Any, types: tuple[str, ...]) -> bool:
    for name in types:
        if name in ("integer", "number") and isinstance(value, bool):
            continue
        if name == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _JSON_TYPES[name]):
            return True
    return False


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a JSON number that is not NaN or infinite. An integer of any
    size is finite (``math.isfinite`` would overflow converting one past 1e308 to float)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def shown(value: Any, limit: int = 40) -> str:
    """A client's number or text as an error message quotes it: at most ``limit``
    characters (an integer of thousands of digits is cut, and never formatted as a float,
    which overflows past 1e308)."""
    if isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 15:
        digits = len(str(abs(value)))
        text = f"{'-' if value < 0 else ''}an integer of {digits} digits" if digits > limit \
            else str(value)
    else:
        text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _bound(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check_field(body: Mapping[str, Any], name: str, spec: Field, prefix: str = "") -> None:
    """Refuse ``body[name]`` unless it has one of ``spec``'s types and lies in its range.

    Raises:
        ApiError: 400 naming the field.
    """
    value = body.get(name)
    if value is None:
        return
    param = prefix + name
    if not _type_ok(value, spec.types):
        raise bad(f"'{param}' must be {' or '.join(_article(t) for t in spec.types)}", param,
                  "invalid_type")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not is_finite(value):
            raise bad(f"'{param}' must be a finite number", param, "invalid_value")
        low_fails = spec.lo is not None and (value <= spec.lo if spec.lo_open
                                             else value < spec.lo)
        if low_fails or (spec.hi is not None and value > spec.hi):
            lo = "" if spec.lo is None else f"{'above' if spec.lo_open else 'at least'} " \
                f"{_bound(spec.lo)}"
            hi = "" if spec.hi is None else f"at most {_bound(spec.hi)}"
            raise bad(f"'{param}' must be {' and '.join(p for p in (lo, hi) if p)}, "
                      f"not {shown(value)}", param, "invalid_value")


def _article(name: str) -> str:
    return ("an " if name[0] in "aeiou" else "a ") + name


def check_body(body: Any, fields: Mapping[str, Field],
               limits: RequestLimits = DEFAULT_REQUEST_LIMITS) -> Mapping[str, Any]:
    """Check every named field of a request body (types, ranges, nesting, sizes).

    Returns:
        the body, now known to be a JSON object.

    Raises:
        ApiError: 400 with the OpenAI error shape, naming the field.
    """
    if not isinstance(body, Mapping):
        raise bad("the request body must be a JSON object", code="invalid_json")
    if not json_depth_ok(body, limits.max_json_depth):
        raise bad(f"the request nests deeper than {limits.max_json_depth} levels",
                  code="json_too_deep")
    for name, spec in fields.items():
        check_field(body, name, spec)
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop or []
    if len(stops) > limits.max_stop_sequences:
        raise bad(f"'stop' takes at most {limits.max_stop_sequences} sequences", "stop")
    for i, s in enumerate(stops):
        if not isinstance(s, str):
            raise bad(f"'stop' must be a string or a list of strings (stop[{i}] is not)",
                      "stop", "invalid_type")
        if len(s) > limits.max_stop_chars:
            raise bad(f"a stop sequence may be at most {limits.max_stop_chars} characters "
                      f"(stop[{i}] has {len(s)})", "stop")
    if "messages" in fields:
        _check_messages(body.get("messages"), limits)
        _check_tools(body.get("tools"), body.get("tool_choice"), limits)
    return body


_MESSAGE_FIELDS = {"role": Field(("string",)), "name": Field(("string",)),
                   "tool_call_id": Field(("string",)), "tool_calls": Field(("array",)),
                   "content": Field(("string", "array")), "refusal": Field(("string",))}


def _check_messages(messages: Any, limits: RequestLimits) -> None:
    if not isinstance(messages, list):
        return  # absent or of the wrong type: the parser says which
    if len(messages) > limits.max_messages:
        raise bad(f"at most {limits.max_messages} messages per request", "messages")
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise bad("each message must be an object", f"messages[{i}]", "invalid_type")
        for name, spec in _MESSAGE_FIELDS.items():
            check_field(msg, name, spec, f"messages[{i}].")
        for j, call in enumerate(msg.get("tool_calls") or ()):
            _check_tool_call(call, f"messages[{i}].tool_calls[{j}]")


def _check_tool_call(call: Any, where: str) -> None:
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise bad("a tool call must be {'type': 'function', 'function': {'name': ..., "
                  "'arguments': ...}}", where, "invalid_type")
    args = fn.get("arguments")
    if args is not None and not isinstance(args, str | Mapping):
        raise bad("a tool call's 'arguments' must be a JSON text", f"{where}.function."
                  "arguments", "invalid_type")
    if call.get("id") is not None and not isinstance(call.get("id"), str):
        raise bad("a tool call's 'id' must be a string", f"{where}.id", "invalid_type")
    if call.get("type") not in (None, "function"):
        raise bad("a tool call's 'type' must be 'function'", f"{where}.type")


def _check_tools(tools: Any, choice: Any, limits: RequestLimits) -> None:
    if isinstance(tools, list) and len(tools) > limits.max_tools:
        raise bad(f"at most {limits.max_tools} tools per request", "tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else ()):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping):
            check_field(fn, "description", Field(("string",)), f"tools[{i}].function.")
    if isinstance(choice, Mapping):
        fn = choice.get("function")
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise bad("'tool_choice' must be none, auto, required or {'type': 'function', "
                      "'function': {'name': ...}}", "tool_choice", "invalid_type")
    elif isinstance(choice, str) and choice not in ("none", "auto", "required"):
        raise bad("'tool_choice' must be none, auto, required or a function", "tool_choice")


__all__ = ["CHAT_FIELDS", "COMPLETION_FIELDS", "DEFAULT_REQUEST_LIMITS", "ApiError", "Field",
           "RequestLimits", "check_body", "check_field", "check_unicode", "is_finite",
           "json_depth_ok", "loads",
           "lone_surrogate_at", "shown"]
