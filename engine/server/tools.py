"""Tool calls: describing tools to a model whose template has no tool support, and finding
the calls in what a model generated.

Templates that support tools render them themselves (the engine passes ``tools`` to the
chat template). For the others we add a system message that lists the tools and asks for
one JSON object ``{"name": ..., "arguments": {...}}``; when the client forces a call
(``tool_choice: "required"`` or a named function) a grammar makes that JSON certain.

Calls are recognised in the three shapes templates ask for: ``<tool_call>{...}</tool_call>``
blocks (Hermes, Qwen), ``[TOOL_CALLS][{...}]`` (Mistral), or the whole answer being one
call object (Llama 3.x ``{"name": ..., "parameters": ...}`` and our own fallback).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
PROBE_TOOL_NAME = "loadout_template_probe_fn"


@dataclass(frozen=True)
class ToolCall:
    """One function call found in a model's answer."""

    name: str
    arguments: str  # JSON text, as the OpenAI API carries it
    id: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


def probe_tools() -> tuple[dict[str, Any], ...]:
    """A one-tool list whose name shows up in a rendered prompt iff the template uses it."""
    return ({"type": "function", "function": {
        "name": PROBE_TOOL_NAME, "description": "probe",
        "parameters": {"type": "object", "properties": {}}}},)


def fallback_system_message(tools: Sequence[Mapping[str, Any]], forced: bool) -> str:
    """The instructions given to a model whose template cannot render tools."""
    lines = ["You can call these functions:"]
    for tool in tools:
        fn = tool["function"]
        lines.append(json.dumps({"name": fn["name"], "description": fn.get("description", ""),
                                 "parameters": fn.get("parameters", {})}))
    if forced:
        lines.append('Answer with one JSON object {"name": ..., "arguments": {...}} that '
                     "calls one of them.")
    else:
        lines.append('To call a function, answer with only one JSON object '
                     '{"name": ..., "arguments": {...}}; otherwise answer normally.')
    return "\n".join(lines)


def with_fallback_tools(messages: Sequence[Mapping[str, Any]],
                        tools: Sequence[Mapping[str, Any]],
                        forced: bool) -> tuple[dict[str, Any], ...]:
    """``messages`` with the tool instructions merged into (or put before) the system one.

    Earlier tool calls and tool results are turned into plain text, since the template
    only knows content.
    """
    note = fallback_system_message(tools, forced)
    out: list[dict[str, Any]] = []
    for msg in messages:
        m = dict(msg)
        if m.get("role") == "tool":
            m = {"role": "user", "content": f"Function result: {m.get('content') or ''}"}
        elif m.get("role") == "assistant" and m.get("tool_calls"):
            calls = [{"name": c["function"]["name"],
                      "arguments": _loads_or_text(c["function"].get("arguments", "{}"))}
                     for c in m["tool_calls"]]
            text = json.dumps(calls[0] if len(calls) == 1 else calls)
            m = {"role": "assistant", "content": text}
        out.append(m)
    if out and out[0].get("role") in ("system", "developer"):
        out[0] = {"role": "system", "content": f"{out[0].get('content') or ''}\n\n{note}"}
    else:
        out.insert(0, {"role": "system", "content": note})
    return tuple(out)


def _loads_or_text(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _new_id() -> str:
    return "call_" + secrets.token_hex(12)


def _as_call(obj: Any, names: frozenset[str]) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        args = _loads_or_text(args)
    if not isinstance(args, dict):
        return None
    return ToolCall(name=name, arguments=json.dumps(args), id=_new_id())


def _unfenced(text: str) -> str:
    """The inside of a Markdown code fence (```json ... ```), else ``text``."""
    body = text.strip()
    if not body.startswith("```"):
        return text
    body = body.split("\n", 1)[1] if "\n" in body else ""
    return body.rsplit("```", 1)[0]


def _decode_first(text: str) -> Any:
    """The first JSON value in ``text`` (leading whitespace allowed), or None."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.strip())
    except ValueError:
        return None
    return value


_CALL_OPENINGS = ("{", "[", "<tool_call>", _MISTRAL, "```")
DECIDE_AFTER_CHARS = 16


def may_be_call(text: str) -> bool:
    """Whether an answer that begins with ``text`` may still turn out to be a tool call.

    True while the start is too short to tell, or when it opens like a call (a JSON
    object or list, a ``<tool_call>`` tag, ``[TOOL_CALLS]``, a code fence).
    """
    head = text.lstrip()
    if any(o.startswith(head) or head.startswith(o) for o in _CALL_OPENINGS):
        return True
    return len(head) < DECIDE_AFTER_CHARS and "<" in head


def parse_tool_calls(text: str, tools: Sequence[Mapping[str, Any]]
                     ) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Split a generated answer into (content, tool calls).

    Only calls to the given tools count; an answer with no recognisable call is returned
    unchanged as content.
    """
    names = frozenset(t["function"]["name"] for t in tools)
    calls: list[ToolCall] = []
    content = text
    if "<tool_call>" in text:
        for block in _TAGGED.findall(text):
            call = _as_call(_decode_first(block), names)
            if call:
                calls.append(call)
        content = text[:text.index("<tool_call>")]
    elif _MISTRAL in text:
        head, _, rest = text.partition(_MISTRAL)
        value = _decode_first(rest)
        for item in value if isinstance(value, list) else [value]:
            call = _as_call(item, names)
            if call:
                calls.append(call)
        content = head
    else:
        value = _decode_first(_unfenced(text))
        for item in value if isinstance(value, list) else [value]:
            call = _as_call(item, names)
            if call:
                calls.append(call)
        if calls:
            content = ""
    if not calls:
        return text, ()
    return (content.strip() or None), tuple(calls)
