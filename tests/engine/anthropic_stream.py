"""The raw events of an ``anthropic`` client's message stream, checked against the SDK's
own event types in strict mode (the SDK adds its own accumulated events; those are left
out)."""

from __future__ import annotations

from typing import Any

import pydantic
from anthropic.lib.streaming import MessageStream
from anthropic.types import Message, RawMessageStreamEvent

STREAM_EVENT = pydantic.TypeAdapter(RawMessageStreamEvent)
RAW_EVENTS = ("message_start", "content_block_start", "content_block_delta",
              "content_block_stop", "message_delta", "message_stop")


def raw_events(stream: MessageStream) -> tuple[list[dict[str, Any]], Message]:
    """Read ``stream`` to its end: the server's events as sent (each validated strictly)
    and the final message the SDK assembled from them."""
    raw = [event.model_dump(mode="json", exclude_unset=True) for event in stream
           if event.type in RAW_EVENTS]
    final = stream.get_final_message()
    for item in raw:
        STREAM_EVENT.validate_python(item, strict=True)
    return raw, final
