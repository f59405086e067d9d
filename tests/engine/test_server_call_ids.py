"""A tool result must answer a tool call made before it, on each chat API: a real
``loadout serve`` of the demo model and the real ``openai`` and ``anthropic`` clients.

The chat completions route, ``/v1/responses`` (also across ``previous_response_id``) and
``/v1/messages`` answer a result whose id matches no earlier call with a 400 in their own
error shape that names the id, as OpenAI's and Anthropic's servers do; the same
conversation with the right id is answered.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from tests.engine.responses_schemas import validate_openai
from tests.engine.server_fixtures import (  # noqa: F401
    ServerProcess,
    client_fixture,
    post,
    server_fixture,
)

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0}
CALL: Any = {"id": "call_weather_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
WEATHER: Any = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object",
                                          "properties": {"city": {"type": "string"}}}}}


@pytest.fixture(name="claude", scope="module")
def claude_fixture(server: ServerProcess) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="not-needed", max_retries=0,
                               timeout=120)


def _chat(call_id: str) -> list[Any]:
    return [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": call_id, "content": "Sunny"}]


def test_chat_completions_refuses_a_tool_message_for_an_unknown_call(
        server: ServerProcess, client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=server.model, messages=_chat("call_nope"),
                                       tools=[WEATHER], max_tokens=1)
    err: Any = info.value.body
    assert info.value.status_code == 400 and "call_nope" in err["message"]
    assert err["param"] == "messages[2].tool_call_id"
    status, doc = post(server, "/v1/chat/completions", {
        "model": server.model, "messages": _chat("call_nope"), "max_tokens": 1})
    assert status == 400
    validate_openai(doc, "ErrorResponse")
    # a tool message before the call it names, and one without an id: refused too
    late = [_chat(CALL["id"])[0], _chat(CALL["id"])[2], _chat(CALL["id"])[1]]
    assert post(server, "/v1/chat/completions", {
        "model": server.model, "messages": late, "max_tokens": 1})[0] == 400
    status, doc = post(server, "/v1/chat/completions", {
        "model": server.model, "max_tokens": 1,
        "messages": [*_chat("x")[:2], {"role": "tool", "content": "Sunny"}]})
    assert status == 400 and doc["error"]["param"] == "messages[2].tool_call_id"
    ok = client.chat.completions.create(model=server.model, messages=_chat(CALL["id"]),
                                        tools=[WEATHER], max_tokens=1, **GREEDY)
    assert ok.choices[0].finish_reason in ("length", "stop")


def test_responses_refuses_an_output_for_an_unknown_call(
        server: ServerProcess, client: openai.OpenAI) -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather",
            "arguments": '{"city": "Paris"}'}
    ask = {"role": "user", "content": "Weather in Paris?"}
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model=server.model, max_output_tokens=1, input=[
            ask, call, {"type": "function_call_output", "call_id": "call_2",
                        "output": "Sunny"}])
    err: Any = info.value.body
    assert "call_2" in err["message"] and err["param"] == "input[2].call_id"
    status, doc = post(server, "/v1/responses", {
        "model": server.model, "max_output_tokens": 1,
        "input": [ask, {"type": "function_call_output", "call_id": "call_1",
                        "output": "Sunny"}]})
    assert status == 400 and "call_1" in doc["error"]["message"]
    validate_openai(doc, "ErrorResponse")
    # through previous_response_id: the earlier response made no call, so none is known
    first = client.responses.create(model=server.model, input="Hi.", max_output_tokens=1,
                                    **GREEDY)
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model=server.model, previous_response_id=first.id,
                                max_output_tokens=1, input=[
                                    {"type": "function_call_output", "call_id": "call_1",
                                     "output": "Sunny"}])
    assert "call_1" in str(info.value)
    # the call in this input, or in the previous response's conversation: answered
    client.responses.create(model=server.model, max_output_tokens=1, **GREEDY, input=[
        ask, call, {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}])
    second = client.responses.create(model=server.model, previous_response_id=first.id,
                                     max_output_tokens=1, **GREEDY, input=[ask, call])
    answer = client.responses.create(
        model=server.model, previous_response_id=second.id, max_output_tokens=1, **GREEDY,
        input=[{"type": "function_call_output", "call_id": "call_1", "output": "Sunny"}])
    assert answer.usage is not None and answer.usage.input_tokens > 0


def test_messages_refuses_a_tool_result_for_an_unknown_tool_use(
        server: ServerProcess, claude: anthropic.Anthropic) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
           "input": {"city": "Paris"}}
    tool: Any = {"name": "get_weather", "input_schema": {"type": "object"}}

    def conversation(use_id: str) -> Any:
        return [{"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id,
                                              "content": "Sunny"}]}]

    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model=server.model, max_tokens=1, tools=[tool],
                               messages=conversation("toolu_2"))
    assert "toolu_2" in str(info.value)
    status, doc = post(server, "/v1/messages", {
        "model": server.model, "max_tokens": 1, "messages": conversation("toolu_2")})
    assert status == 400 and "messages.2.content.0" in doc["error"]["message"]
    anthropic.types.ErrorResponse.model_validate(doc, strict=True)
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model=server.model, messages=conversation("toolu_2"))
    ok = claude.messages.create(model=server.model, max_tokens=1, tools=[tool],
                                messages=conversation("toolu_1"), extra_body=GREEDY)
    assert ok.usage.output_tokens == 1
