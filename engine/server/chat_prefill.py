"""A chat that ends with an assistant message: the answer continues that message
(llama-server's prefill, vLLM's ``continue_final_message``)."""

from __future__ import annotations

from typing import Any

from engine.server.errors import bad


def prefill(messages: tuple[dict[str, Any], ...], cont: bool, add_generation_prompt: bool
            ) -> tuple[tuple[dict[str, Any], ...], str]:
    """A trailing assistant message of text is where the answer starts (llama-server's
    prefill, vLLM's ``continue_final_message``): the messages without it, and its text.

    Raises:
        ApiError: ``continue_final_message`` with ``add_generation_prompt`` (they
            contradict), or two assistant messages at the end (400).
    """
    last = messages[-1]
    if cont and add_generation_prompt:
        raise bad("'continue_final_message' and 'add_generation_prompt' cannot both be true",
                  "continue_final_message")
    if last["role"] != "assistant" or "tool_calls" in last or len(messages) == 1:
        return messages, ""
    if messages[-2]["role"] == "assistant" and "tool_calls" not in messages[-2]:
        raise bad("the conversation ends with two assistant messages; only the last may "
                  "be continued", f"messages[{len(messages) - 1}]")
    return messages[:-1], str(last["content"])
