"""OpenAI Responses API requests turned into the chat request the server already checks.

A ``POST /v1/responses`` body (``input`` as a string or a list of items, ``instructions``,
function tools in the Responses shape, ``text.format``, sampling) becomes a
``/v1/chat/completions`` body for :func:`engine.server.openai_schema.parse_chat`. Every
field is checked here first (type and range, 400 naming the Responses field), so the chat
parser only ever sees a well-formed body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.server import request_model as rm
from engine.server.api_common import check_fields, content_of, not_here, text_of
from engine.server.api_images import ImageParts, responses_image
from engine.server.call_ids import known_ids
from engine.server.errors import bad
from engine.server.request_model import Field, RequestLimits

FIELDS: dict[str, Field] = {
    "model": Field(("string",)),
    "input": Field(("string", "array")),
    "instructions": Field(("string",)),
    "previous_response_id": Field(("string",)),
    "tools": Field(("array",)),
    "tool_choice": Field(("string", "object")),
    "parallel_tool_calls": Field(("boolean",)),
    "max_output_tokens": Field(("integer",), 1, 1 << 31),
    "temperature": Field(("number",), 0.0, 2.0),
    "top_p": Field(("number",), 0.0, 1.0),
    "stream": Field(("boolean",)),
    "store": Field(("boolean",)),
    "metadata": Field(("object",)),
    "text": Field(("object",)),
    "user": Field(("string",)),
    "background": Field(("boolean",)),
    "truncation": Field(("string",)),
    "top_logprobs": Field(("integer",), 0, 20),
}
# llama.cpp-style sampling extras the chat route takes too; passed through unchanged
EXTRAS = ("top_k", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty",
          "seed", "loop_guard", "cache_prompt", "speculative")
_ROLES = ("user", "assistant", "system", "developer")
_INPUT_PARTS = ("input_text", "output_text", "text")


@dataclass(frozen=True)
class ResponsesRequest:
    """A checked Responses request: the chat body to run and what the answer echoes.

    Attributes:
        chat: the ``/v1/chat/completions`` body.
        conversation: the chat messages of this turn and the turns before it, without
            the instructions (a continuation does not inherit them).
        images: this turn's ``input_image`` parts as chat parts (fetched before parsing).
        echo: the request's fields the response document repeats.
        store: keep the response for ``previous_response_id``.
        stream: answer with server-sent events.
    """

    chat: dict[str, Any]
    conversation: tuple[dict[str, Any], ...]
    echo: dict[str, Any] = field(default_factory=dict)
    store: bool = True
    stream: bool = False
    images: ImageParts | None = None


def _message(item: Mapping[str, Any], where: str, images: ImageParts | None
             ) -> dict[str, Any]:
    role = item.get("role")
    if role not in _ROLES:
        raise bad(f"'{where}.role' must be one of {', '.join(_ROLES)}", f"{where}.role")
    content = item.get("content")
    if content is None:
        raise bad(f"'{where}.content' is required", f"{where}.content",
                  "missing_required_parameter")
    kinds = (*_INPUT_PARTS, "refusal")
    if isinstance(content, list):  # refusals carry their text under 'refusal'
        content = [{"type": p["type"], "text": p.get("refusal")}
                   if isinstance(p, Mapping) and p.get("type") == "refusal" else p
                   for p in content]
    def image(part: Mapping[str, Any], here: str) -> dict[str, Any]:
        if role != "user" or images is None:
            raise not_here(here)
        return responses_image(part, here, images)

    text = content_of(content, f"{where}.content", kinds, image, "input_image")
    return {"role": "system" if role == "developer" else role, "content": text}


def _call(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    for name in ("call_id", "name", "arguments"):
        if not isinstance(item.get(name), str):
            raise bad(f"'{where}.{name}' must be a string", f"{where}.{name}",
                      "invalid_type")
    return {"id": item["call_id"], "type": "function",
            "function": {"name": item["name"], "arguments": item["arguments"]}}


def _call_output(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(item.get("call_id"), str):
        raise bad(f"'{where}.call_id' must be a string", f"{where}.call_id", "invalid_type")
    output = text_of(item.get("output"), f"{where}.output", _INPUT_PARTS)
    return {"role": "tool", "tool_call_id": item["call_id"], "content": output}


def input_messages(value: Any, images: ImageParts | None = None,
                   earlier: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The chat messages of an ``input`` (a string, or a list of input items); its
    ``input_image`` parts are checked and collected in ``images`` (None: refused).

    Consecutive ``function_call`` items join one assistant message (with the text that
    came just before them), as the chat API carries several calls of one turn. A
    ``function_call_output`` must answer a ``function_call`` of this input or of
    ``earlier`` (the conversation of ``previous_response_id``).

    Raises:
        ApiError: 400 naming the item at fault.
    """
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    out: list[dict[str, Any]] = []
    known = known_ids(earlier)
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, Mapping):
            raise bad(f"'{where}' must be an object", where, "invalid_type")
        kind = item.get("type", "message")
        if kind == "message":
            out.append(_message(item, where, images))
        elif kind == "function_call":
            call = _call(item, where)
            known.add(call["id"])
            prev = out[-1] if out else None
            if prev is not None and prev["role"] == "assistant":
                prev.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append(_call_output(item, where))
            if item["call_id"] not in known:
                raise bad(f"No tool call found for function call output with call_id "
                          f"{item['call_id']!r}: '{where}' answers no function_call of this "
                          "input or of the previous response", f"{where}.call_id",
                          "unknown_call_id")
        elif kind in ("input_image", "image"):
            raise bad(f"'{where}' is an image: put it in a user message's content "
                      "({'role': 'user', 'content': [{'type': 'input_image', ...}]})", where,
                      "unsupported_content")
        elif kind == "reasoning":
            continue  # this server writes no reasoning items; a client's copy is dropped
        else:
            raise bad(f"'{where}.type' {kind!r} is not supported (message, function_call "
                      "or function_call_output)", f"{where}.type", "unsupported_value")
    return out


def _tools(raw: Any) -> list[dict[str, Any]]:
    tools = []
    for i, tool in enumerate(raw or ()):
        where = f"tools[{i}]"
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, Mapping) else None
            raise bad(f"'{where}' must be a function tool {{'type': 'function', 'name': "
                      f"...}}{'' if kind is None else f'; {kind!r} tools are not supported'}",
                      where, "unsupported_value")
        rm.check_field(tool, "name", Field(("string",)), f"{where}.")
        rm.check_field(tool, "description", Field(("string",)), f"{where}.")
        rm.check_field(tool, "parameters", Field(("object",)), f"{where}.")
        if not isinstance(tool.get("name"), str):
            raise bad(f"'{where}.name' is required", f"{where}.name",
                      "missing_required_parameter")
        fn = {"name": tool["name"], "parameters": tool.get("parameters") or
              {"type": "object", "properties": {}}}
        if tool.get("description") is not None:
            fn["description"] = tool["description"]
        tools.append({"type": "function", "function": fn})
    return tools


def _tool_choice(raw: Any) -> Any:
    if raw is None or isinstance(raw, str):
        return raw  # none / auto / required: the chat parser checks the word
    if raw.get("type") == "function" and isinstance(raw.get("name"), str):
        return {"type": "function", "function": {"name": raw["name"]}}
    raise bad("'tool_choice' must be none, auto, required or {'type': 'function', "
              "'name': ...}", "tool_choice", "invalid_type")


def _text_format(text: Mapping[str, Any] | None) -> dict[str, Any] | None:
    fmt = (text or {}).get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping) or not isinstance(fmt.get("type"), str):
        raise bad("'text.format' must be an object with a 'type'", "text.format",
                  "invalid_type")
    if fmt["type"] not in ("text", "json_object", "json_schema"):
        raise bad(f"'text.format.type' must be text, json_object or json_schema, not "
                  f"{fmt['type'][:40]!r}", "text.format.type")
    if fmt["type"] == "json_schema":
        if not isinstance(fmt.get("name", ""), str):  # the answer echoes it as a string
            raise bad("'text.format.name' must be a string", "text.format.name",
                      "invalid_type")
        if not isinstance(fmt.get("schema", {}), Mapping):
            raise bad("'text.format.schema' must be a JSON schema (an object)",
                      "text.format.schema", "invalid_type")
        return {"type": "json_schema", "json_schema": {
            "name": fmt.get("name", "answer"), "schema": fmt.get("schema", {})}}
    return {"type": fmt["type"]}


def to_chat(body: Any, previous: Sequence[Mapping[str, Any]] | None,
            limits: RequestLimits) -> ResponsesRequest:
    """Check a Responses body and build its chat request.

    Args:
        body: the decoded JSON body.
        previous: the conversation of the response named by ``previous_response_id``.
        limits: the server's request limits.

    Raises:
        ApiError: 400 naming the field at fault.
    """
    body = check_fields(body, FIELDS, limits)
    if body.get("background"):
        raise bad("background responses are not supported", "background",
                  "unsupported_value")
    raw_input = body.get("input")
    if raw_input is None and previous is None:
        raise bad("'input' is required", "input", "missing_required_parameter")
    images = ImageParts(limits.images)
    turn = input_messages(raw_input if raw_input is not None else [], images, previous or ())
    conversation = [dict(m) for m in previous or ()] + turn
    if not conversation:
        raise bad("'input' must hold at least one message", "input")
    instructions = body.get("instructions")
    messages = ([{"role": "system", "content": instructions}] if instructions else []) + \
        conversation
    tools = _tools(body.get("tools"))
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if tools:
        chat["tools"] = tools
    choice = _tool_choice(body.get("tool_choice"))
    if choice is not None and (tools or choice in ("none", "auto")):
        chat["tool_choice"] = choice
    elif choice is not None:
        raise bad("'tool_choice' needs 'tools'", "tool_choice")
    fmt = _text_format(body.get("text"))
    if fmt is not None:
        chat["response_format"] = fmt
    for name in ("temperature", "top_p", *EXTRAS):
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    metadata = body.get("metadata") or {}
    if not all(isinstance(v, str) for v in metadata.values()):
        raise bad("'metadata' values must be strings", "metadata", "invalid_type")
    echo = {
        "instructions": instructions, "metadata": dict(metadata),
        "max_output_tokens": body.get("max_output_tokens"),
        "previous_response_id": body.get("previous_response_id"),
        "temperature": body.get("temperature"), "top_p": body.get("top_p"),
        "tools": [_echo_tool(t) for t in tools],
        "tool_choice": body.get("tool_choice") or "auto",
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "text": {"format": dict((body.get("text") or {}).get("format") or {"type": "text"})},
    }
    if body.get("user") is not None:
        echo["user"] = body["user"]
    return ResponsesRequest(chat=chat, conversation=tuple(conversation), echo=echo,
                            store=body.get("store", True) is not False,
                            stream=bool(body.get("stream")), images=images)


def _echo_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    fn = tool["function"]
    return {"type": "function", "name": fn["name"], "description": fn.get("description"),
            "parameters": fn["parameters"], "strict": False}


def assistant_message(text: str | None, calls: Sequence[Any]) -> dict[str, Any]:
    """The chat message an answer adds to the conversation (kept for continuations)."""
    msg: dict[str, Any] = {"role": "assistant", "content": text or ""}
    if calls:
        msg["tool_calls"] = [c.to_json() for c in calls]
    return msg


def conversation_json(conversation: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A conversation as plain JSON (arguments stay JSON text)."""
    return json.loads(json.dumps(list(conversation)))  # type: ignore[no-any-return]
