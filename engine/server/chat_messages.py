"""Chat requests' ``messages`` and ``tools``: each message's role, content parts (text and
images) and tool-call ids, and the offered tools with the tool choice, checked into the
engine's types (pure: no I/O; errors are :class:`~engine.server.errors.ApiError`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.requests import MEDIA_MARKER
from engine.server.call_ids import known_ids
from engine.server.errors import bad
from engine.server.images import DEFAULT_IMAGE_LIMITS, ImageLimits, decode_data_url, part_url

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _message_content(msg: Mapping[str, Any], index: int,
                     images: list[bytes] | None = None,
                     limits: ImageLimits = DEFAULT_IMAGE_LIMITS) -> str | None:
    """The text of a message's content; ``image_url`` parts become the engine's media
    marker, their bytes appended to ``images`` (None: images are refused)."""
    content = msg.get("content")
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, Mapping) and part.get("type") == "image_url" \
                    and images is not None:
                where = f"messages[{index}].content[{j}].image_url"
                if len(images) >= limits.max_images:
                    raise bad(f"at most {limits.max_images} images per request", "messages",
                              "too_many_images")
                images.append(decode_data_url(part_url(part, where), where, limits))
                texts.append(MEDIA_MARKER)
                continue
            if not isinstance(part, Mapping) or part.get("type") not in ("text", "refusal"):
                raise bad("only text and image_url content parts are supported",
                          f"messages[{index}].content", "unsupported_value")
            text = part.get("text", part.get("refusal"))
            if not isinstance(text, str):
                raise bad("a text content part needs a 'text' string",
                          f"messages[{index}].content", "invalid_type")
            texts.append(text)
        return "".join(texts)
    raise bad("message content must be a string or a list of text parts",
              f"messages[{index}].content", "invalid_type")


def chat_messages(body: Mapping[str, Any], images: list[bytes] | None = None,
              limits: ImageLimits = DEFAULT_IMAGE_LIMITS) -> tuple[dict[str, Any], ...]:
    raw = body.get("messages")
    if raw is None:
        raise bad("'messages' is required", "messages", "missing_required_parameter")
    if not isinstance(raw, list) or not raw:
        raise bad("'messages' must be a non-empty list", "messages", "invalid_type")
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(raw):
        if not isinstance(msg, Mapping):
            raise bad("each message must be an object", f"messages[{i}]", "invalid_type")
        role = msg.get("role")
        if role not in ROLES:
            raise bad(f"messages[{i}].role must be one of {', '.join(sorted(ROLES))}",
                      f"messages[{i}].role")
        content = _message_content(msg, i, images, limits)
        item: dict[str, Any] = {"role": "system" if role == "developer" else role,
                                "content": content or ""}
        for key in ("name", "tool_calls", "tool_call_id"):
            if msg.get(key) is not None:
                item[key] = msg[key]
        if role == "tool":
            _check_call_id(msg, i, out)
        out.append(item)
    return tuple(out)


def _check_call_id(msg: Mapping[str, Any], index: int, earlier: list[dict[str, Any]]) -> None:
    """A ``tool`` message answers a tool call of an earlier assistant message (OpenAI
    refuses one that does not)."""
    where = f"messages[{index}].tool_call_id"
    call_id = msg.get("tool_call_id")
    if call_id is None:
        raise bad(f"'{where}' is required: a tool message answers a tool call by its id",
                  where, "missing_required_parameter")
    if not isinstance(call_id, str):
        raise bad(f"'{where}' must be a string", where, "invalid_type")
    if call_id not in known_ids(earlier):
        raise bad(f"'{where}' {call_id!r} matches no tool call of an earlier assistant "
                  "message", where, "unknown_tool_call_id")


def chat_tools(body: Mapping[str, Any]) -> tuple[tuple[Mapping[str, Any], ...], str | None]:
    """The declared tools and the tool choice: ``None`` (model decides), ``"none"``,
    ``"required"`` or a function name."""
    raw = body.get("tools")
    choice_raw = body.get("tool_choice")
    if raw is None:
        if choice_raw not in (None, "none", "auto"):
            raise bad("'tool_choice' needs 'tools'", "tool_choice")
        return (), "none"
    if not isinstance(raw, list):
        raise bad("'tools' must be a list", "tools", "invalid_type")
    tools: list[Mapping[str, Any]] = []
    for i, tool in enumerate(raw):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type") != "function" \
                or not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise bad("each tool must be {'type': 'function', 'function': {'name': ...}}",
                      f"tools[{i}]", "invalid_type")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, Mapping):
            raise bad("function parameters must be a JSON schema object",
                      f"tools[{i}].function.parameters", "invalid_type")
        tools.append(tool)
    if choice_raw in (None, "auto"):
        choice: str | None = None
    elif choice_raw in ("none", "required"):
        choice = choice_raw
    elif isinstance(choice_raw, Mapping) and isinstance(choice_raw.get("function"), Mapping):
        choice = choice_raw["function"].get("name")
        if choice not in {t["function"]["name"] for t in tools}:
            raise bad(f"tool_choice names '{choice}', which is not among the tools",
                      "tool_choice")
    else:
        raise bad("'tool_choice' must be none, auto, required or {'type': 'function', "
                  "'function': {'name': ...}}", "tool_choice", "invalid_type")
    return tuple(tools), choice
