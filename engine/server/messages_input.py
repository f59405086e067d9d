"""Anthropic Messages API requests turned into the chat request the server already checks.

A ``POST /v1/messages`` body (``system``, ``messages`` of content blocks with ``text``,
``image``, ``tool_use`` and ``tool_result`` (which may hold images too), ``tools`` with
``input_schema``, ``tool_choice``, ``stop_sequences``, ``max_tokens``, sampling) becomes a
``/v1/chat/completions`` body for :func:`engine.server.openai_schema.parse_chat`. Every
field is checked here first (400 naming the Anthropic field), so the chat parser only ever
sees a well-formed body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.server import request_model as rm
from engine.server.api_common import check_fields, content_of, require, text_of
from engine.server.api_images import ImageParts, anthropic_image
from engine.server.errors import bad
from engine.server.request_model import Field, RequestLimits

FIELDS: dict[str, Field] = {
    "model": Field(("string",)),
    "messages": Field(("array",)),
    "system": Field(("string", "array")),
    "max_tokens": Field(("integer",), 1, 1 << 31),
    "stop_sequences": Field(("array",)),
    "stream": Field(("boolean",)),
    "temperature": Field(("number",), 0.0, 1.0),
    "top_p": Field(("number",), 0.0, 1.0),
    "top_k": Field(("integer",), 0, 1 << 20),
    "tools": Field(("array",)),
    "tool_choice": Field(("object",)),
    "metadata": Field(("object",)),
    "thinking": Field(("object",)),
    "service_tier": Field(("string",)),
}
# llama.cpp-style sampling extras the chat route takes too; passed through unchanged
EXTRAS = ("min_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "seed",
          "loop_guard", "cache_prompt", "speculative")
# blocks a client may send back from an earlier answer that this server never writes
_SKIPPED = ("thinking", "redacted_thinking")


@dataclass(frozen=True)
class MessagesRequest:
    """A checked Messages request: the chat body and what the answer needs back (its
    ``image`` blocks as chat parts, fetched before parsing)."""

    chat: dict[str, Any]
    stops: tuple[str, ...] = ()
    stream: bool = False
    images: ImageParts | None = None
    # the text of a trailing assistant message: the answer continues it (not in ``chat``)
    prefill: str = ""


def _tool_result(block: Mapping[str, Any], where: str, images: ImageParts
                 ) -> dict[str, Any]:
    if not isinstance(block.get("tool_use_id"), str):
        raise bad(f"'{where}.tool_use_id' must be a string", f"{where}.tool_use_id",
                  "invalid_type")
    content = block.get("content")
    def image(part: Mapping[str, Any], here: str) -> dict[str, Any]:
        return anthropic_image(part, here, images)

    result = "" if content is None else content_of(content, f"{where}.content", ("text",),
                                                   image, "image")
    if block.get("is_error") is True:
        result = f"Error: {result}" if isinstance(result, str) else \
            [{"type": "text", "text": "Error: "}, *result]
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": result}


def _tool_use(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    for name in ("id", "name"):
        if not isinstance(block.get(name), str):
            raise bad(f"'{where}.{name}' must be a string", f"{where}.{name}", "invalid_type")
    if not isinstance(block.get("input"), Mapping):
        raise bad(f"'{where}.input' must be an object", f"{where}.input", "invalid_type")
    return {"id": block["id"], "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])}}


def _turn(msg: Mapping[str, Any], where: str, images: ImageParts, known: set[str]
          ) -> list[dict[str, Any]]:
    """The chat messages of one Anthropic message (tool results become tool messages);
    ``known``: the ``tool_use`` ids of the messages before it (this one's are added)."""
    role = msg.get("role")
    if role not in ("user", "assistant"):
        raise bad(f"'{where}.role' must be user or assistant", f"{where}.role")
    content = msg.get("content")
    if content is None:
        raise bad(f"'{where}.content' is required", f"{where}.content",
                  "missing_required_parameter")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise bad(f"'{where}.content' must be a string or a list of blocks",
                  f"{where}.content", "invalid_type")
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []  # chat parts: text, and images in user messages
    calls: list[dict[str, Any]] = []

    def flush() -> None:
        if parts or calls:
            images_in = any(p["type"] == "image_url" for p in parts)
            text = list(parts) if images_in else "".join(p["text"] for p in parts)
            out.append({"role": role, "content": text,
                        **({"tool_calls": list(calls)} if calls else {})})
            parts.clear()
            calls.clear()

    for j, block in enumerate(content):
        here = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if not isinstance(block, Mapping) or not isinstance(kind, str):
            raise bad(f"'{here}' must be a block with a 'type'", here, "invalid_type")
        if kind == "text":
            parts.append({"type": "text", "text": text_of([block], here, ("text",))})
        elif kind == "image" and role == "user":
            parts.append(anthropic_image(block, here, images))
        elif kind == "tool_use" and role == "assistant":
            calls.append(_tool_use(block, here))
            known.add(block["id"])
        elif kind == "tool_result" and role == "user":
            flush()
            out.append(_tool_result(block, here, images))
            if block["tool_use_id"] not in known:
                dotted = here.replace("[", ".").replace("]", "")
                raise bad(f"{dotted}: unexpected `tool_use_id` found in `tool_result` blocks: "
                          f"{block['tool_use_id']}. Each `tool_result` block must have a "
                          "corresponding `tool_use` block in an earlier message.",
                          f"{here}.tool_use_id", "unknown_tool_use_id")
        elif kind not in _SKIPPED:
            raise bad(f"'{here}.type' {kind!r} is not supported in a {role} message",
                      f"{here}.type", "unsupported_content")
    flush()
    return out or [{"role": role, "content": ""}]


def _system(value: Any) -> str | None:
    if value is None:
        return None
    return text_of(value, "system", ("text",))


def _tools(raw: Any) -> list[dict[str, Any]]:
    tools = []
    for i, tool in enumerate(raw or ()):
        where = f"tools[{i}]"
        if not isinstance(tool, Mapping):
            raise bad(f"'{where}' must be an object", where, "invalid_type")
        if tool.get("type") not in (None, "custom"):
            raise bad(f"'{where}': {tool.get('type')!r} tools are not supported (only "
                      "client tools with an input_schema)", where, "unsupported_value")
        rm.check_field(tool, "name", Field(("string",)), f"{where}.")
        rm.check_field(tool, "description", Field(("string",)), f"{where}.")
        rm.check_field(tool, "input_schema", Field(("object",)), f"{where}.")
        if not isinstance(tool.get("name"), str):
            raise bad(f"'{where}.name' is required", f"{where}.name",
                      "missing_required_parameter")
        fn = {"name": tool["name"], "parameters": tool.get("input_schema") or
              {"type": "object", "properties": {}}}
        if tool.get("description") is not None:
            fn["description"] = tool["description"]
        tools.append({"type": "function", "function": fn})
    return tools


def _tool_choice(raw: Mapping[str, Any] | None) -> Any:
    if raw is None:
        return None
    kind = raw.get("type")
    if kind in ("auto", "none"):
        return kind
    if kind == "any":
        return "required"
    if kind == "tool" and isinstance(raw.get("name"), str):
        return {"type": "function", "function": {"name": raw["name"]}}
    raise bad("'tool_choice' must be {'type': 'auto'}, {'type': 'any'}, {'type': 'none'} "
              "or {'type': 'tool', 'name': ...}", "tool_choice", "invalid_type")


def _stops(raw: Any, limits: RequestLimits) -> tuple[str, ...]:
    stops = raw or []
    if len(stops) > limits.max_stop_sequences:
        raise bad(f"'stop_sequences' takes at most {limits.max_stop_sequences} sequences",
                  "stop_sequences")
    for i, s in enumerate(stops):
        if not isinstance(s, str):
            raise bad(f"'stop_sequences[{i}]' must be a string", "stop_sequences",
                      "invalid_type")
        if len(s) > limits.max_stop_chars:
            raise bad(f"a stop sequence may be at most {limits.max_stop_chars} characters "
                      f"(stop_sequences[{i}] has {len(s)})", "stop_sequences")
    return tuple(s for s in stops if s)


def to_chat(body: Any, limits: RequestLimits, counting: bool = False) -> MessagesRequest:
    """Check a Messages body and build its chat request.

    Args:
        body: the decoded JSON body.
        limits: the server's request limits.
        counting: for ``count_tokens``: ``max_tokens`` is not required.

    Raises:
        ApiError: 400 naming the field at fault.
    """
    body = check_fields(body, FIELDS, limits)
    require(body, "model")
    raw = require(body, "messages")
    if not counting:
        require(body, "max_tokens")
    if not raw:
        raise bad("'messages' must hold at least one message", "messages")
    if len(raw) > limits.max_messages:
        raise bad(f"at most {limits.max_messages} messages per request", "messages")
    messages: list[dict[str, Any]] = []
    images = ImageParts(limits.images)
    system = _system(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    known: set[str] = set()
    for i, msg in enumerate(raw):
        if not isinstance(msg, Mapping):
            raise bad(f"'messages[{i}]' must be an object", f"messages[{i}]", "invalid_type")
        messages += _turn(msg, f"messages[{i}]", images, known)
    prefill = _prefill(messages, raw)
    chat: dict[str, Any] = {"model": body["model"], "messages": messages}
    tools = _tools(body.get("tools"))
    choice = _tool_choice(body.get("tool_choice"))
    if tools:
        chat["tools"] = tools
        if choice is not None:
            chat["tool_choice"] = choice
    elif choice not in (None, "auto", "none"):
        raise bad("'tool_choice' needs 'tools'", "tool_choice")
    stops = _stops(body.get("stop_sequences"), limits)
    if stops:
        chat["stop"] = list(stops)
    for name in ("temperature", "top_p", "top_k", *EXTRAS):
        if body.get(name) is not None:
            chat[name] = body[name]
    chat["max_tokens"] = 1 if counting else body["max_tokens"]
    return MessagesRequest(chat=chat, stops=stops, stream=bool(body.get("stream")),
                           images=images, prefill=prefill)


def _prefill(messages: list[dict[str, Any]], raw: list[Any]) -> str:
    """Take a trailing assistant message of text off ``messages``: its text is where the
    answer starts (Anthropic's prefill). One with ``tool_use`` blocks, or that is all the
    conversation, stays a turn of its own.

    Raises:
        ApiError: 400 when that text ends with whitespace (the API refuses it: the answer
            would continue from a token boundary the model never writes).
    """
    last = messages[-1]
    if last["role"] != "assistant" or "tool_calls" in last or len(messages) == 1:
        return ""
    text = str(last["content"])
    if text != text.rstrip():
        where = f"messages[{len(raw) - 1}].content"
        raise bad("final assistant content cannot end with trailing whitespace", where)
    messages.pop()
    return text
