"""A chat request with ``n`` > 1: the choices are generated side by side, each on its own
slot (the same prompt, so a slot's cached prompt serves the others' next requests), and
answered in one ``chat.completion`` with ``n`` choices and the usage of them all."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from engine.server import openai_responses as docs
from engine.server import tools as toolcalls
from engine.server.generation import GenContext, Generation
from engine.server.openai_schema import ParsedRequest


async def chat_choices(ctx: GenContext, parsed: ParsedRequest, request: Request
                       ) -> dict[str, Any]:
    """The whole answer of ``parsed.n`` choices (each request started before any is
    read, so they decode together; every one is closed if one fails)."""
    gens: list[Generation] = []
    try:
        for _ in range(parsed.n):
            gens.append(await Generation.start(ctx, parsed, "messages"))
        choices: list[dict[str, Any]] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        answer: dict[str, Any] = {}
        for i, gen in enumerate(gens):
            text, last = await gen.collect(request)
            content: str | None = text
            calls: tuple[toolcalls.ToolCall, ...] = ()
            if parsed.tools:
                content, calls = toolcalls.parse_tool_calls(text, parsed.tools)
            answer = docs.chat_response(docs.new_id("chatcmpl"), gen.created, gen.served.id,
                                        content, calls, last.finish_reason, last.metrics,
                                        last.loop_guard, gen.chat_logprobs())
            choices.append({**answer["choices"][0], "index": i})
            for key in usage:
                usage[key] += answer["usage"][key]
    finally:
        for gen in gens:
            gen.close()
    return {**answer, "choices": choices, "usage": {**answer["usage"], **usage}}
