"""Tool-call ids in a conversation: a tool result must answer a call made before it.

The three chat APIs refuse a tool result (``tool`` message, ``function_call_output`` item,
``tool_result`` block) whose id matches no tool call earlier in the conversation, as
OpenAI's and Anthropic's servers do: the model would be shown a result of a call it never
made, and a client that sends one has lost track of its own calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def call_ids(message: Mapping[str, Any]) -> list[str]:
    """The ids of a chat assistant message's ``tool_calls`` (malformed entries skipped:
    the chat parser refuses them itself)."""
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not isinstance(calls, list):
        return []
    return [c["id"] for c in calls if isinstance(c, Mapping) and isinstance(c.get("id"), str)]


def known_ids(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every tool-call id the assistant messages of ``messages`` made."""
    return {i for m in messages for i in call_ids(m)}
