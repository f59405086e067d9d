"""``/v1/responses`` and ``/v1/messages`` end to end: a real ``loadout serve`` of the demo
model, the real ``openai`` and ``anthropic`` clients.

What each answer is validated against:
- Responses: every document and every streamed event against the official OpenAI schemas
  (``tests/data/openai-responses-schemas.json``: the subset of openai/openai-openapi
  reachable from ``Response`` and the stream events, MIT, licence alongside).
- Messages: the ``anthropic`` SDK's own pydantic types in strict mode (``Message``, the
  raw stream events, ``MessageTokensCount``, ``ErrorResponse``).

Lean on purpose: greedy, a few tokens per answer.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import Message, MessageTokensCount

from tests.engine.anthropic_stream import STREAM_EVENT, raw_events
from tests.engine.responses_schemas import validate_openai
from tests.engine.server_fixtures import (  # noqa: F401
    ServerProcess,
    client_fixture,
    server_fixture,
)
from tests.helpers.gguf_mmproj import png_bytes

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0}
WEATHER_FN: Any = {"type": "function", "name": "get_weather", "description": "Weather of a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                             "required": ["city"]}}
WEATHER_TOOL: Any = {"name": "get_weather", "description": "Weather of a city",
                "input_schema": WEATHER_FN["parameters"]}
EVENT_SCHEMAS = {
    "response.created": "ResponseCreatedEvent", "response.in_progress": "ResponseInProgressEvent",
    "response.output_item.added": "ResponseOutputItemAddedEvent",
    "response.content_part.added": "ResponseContentPartAddedEvent",
    "response.output_text.delta": "ResponseTextDeltaEvent",
    "response.output_text.done": "ResponseTextDoneEvent",
    "response.content_part.done": "ResponseContentPartDoneEvent",
    "response.output_item.done": "ResponseOutputItemDoneEvent",
    "response.function_call_arguments.delta": "ResponseFunctionCallArgumentsDeltaEvent",
    "response.function_call_arguments.done": "ResponseFunctionCallArgumentsDoneEvent",
    "response.completed": "ResponseCompletedEvent",
    "response.incomplete": "ResponseIncompleteEvent",
    "response.failed": "ResponseFailedEvent",
}


@pytest.fixture(name="claude", scope="module")
def claude_fixture(server: ServerProcess) -> anthropic.Anthropic:
    """The real ``anthropic`` client pointed at the session server (no retries)."""
    return anthropic.Anthropic(base_url=server.url, api_key="not-needed", max_retries=0,
                               timeout=120)


def _request(server: ServerProcess, method: str, path: str, doc: Any = None
             ) -> tuple[int, Any]:
    data = None if doc is None else json.dumps(doc).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# ---------------------------------------------------------------- Responses

def test_a_response_is_stored_continued_fetched_and_deleted(
        server: ServerProcess, client: openai.OpenAI) -> None:
    raw = client.responses.with_raw_response.create(
        model=server.model, input="Name a color.", instructions="Answer in one word.",
        max_output_tokens=6, temperature=0)
    doc = raw.http_response.json()
    validate_openai(doc, "Response")
    first = raw.parse()
    assert first.status in ("completed", "incomplete") and first.output_text
    assert first.instructions == "Answer in one word." and first.model == server.model
    usage = first.usage
    assert usage is not None and 0 < usage.output_tokens <= 6
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert doc["timings"]["generated_tokens"] == usage.output_tokens
    assert set(doc["timings"]) >= {"ttft_s", "prefill_tps", "decode_tps", "e2e_tps"}

    second = client.responses.create(model=server.model, input="Another one.",
                                     previous_response_id=first.id, max_output_tokens=4,
                                     temperature=0, store=False)
    validate_openai(second.model_dump(mode="json", exclude_unset=True), "Response")
    assert second.previous_response_id == first.id and second.instructions is None
    assert second.usage is not None
    # the first turn (question and answer) is in the second prompt
    assert second.usage.input_tokens > usage.input_tokens + usage.output_tokens - 8

    status, fetched = _request(server, "GET", f"/v1/responses/{first.id}")
    assert status == 200 and fetched["output"] == doc["output"]
    status, err = _request(server, "GET", f"/v1/responses/{second.id}")  # store: false
    assert status == 404
    validate_openai(err, "ErrorResponse")
    client.responses.delete(first.id)
    assert _request(server, "GET", f"/v1/responses/{first.id}")[0] == 404
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=server.model, input="x", previous_response_id=first.id,
                                max_output_tokens=1)


def _checked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    for event in events:
        validate_openai(event, EVENT_SCHEMAS[event["type"]])
    return events


def test_a_streamed_response_sends_the_typed_events_in_order(
        server: ServerProcess, client: openai.OpenAI) -> None:
    events = _checked([e.model_dump(mode="json", exclude_unset=True) for e in
                       client.responses.create(model=server.model, input="Say hello.",
                                               max_output_tokens=5, temperature=0,
                                               stream=True)])
    kinds = [e["type"] for e in events]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert kinds[:4] == ["response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added"]
    assert kinds[-4:-1] == ["response.output_text.done", "response.content_part.done",
                            "response.output_item.done"]
    assert deltas and kinds[4:4 + len(deltas)] == ["response.output_text.delta"] * len(deltas)
    final = events[-1]["response"]
    assert kinds[-1] == f"response.{final['status']}"
    assert final["status"] == "incomplete" or final["usage"]["output_tokens"] < 5
    text = final["output"][0]["content"][0]["text"]
    assert text == "".join(deltas) == events[-4]["text"]
    assert final["usage"]["output_tokens"] == final["timings"]["generated_tokens"]


def test_a_function_call_streams_then_its_output_is_answered(
        server: ServerProcess, client: openai.OpenAI) -> None:
    with client.responses.stream(model=server.model, input="What is the weather in Paris?",
                                 tools=[WEATHER_FN], tool_choice="required",
                                 max_output_tokens=40, temperature=0) as stream:
        events = _checked([e.model_dump(mode="json", exclude_unset=True) for e in stream])
        whole = stream.get_final_response()
    assert whole.output[-1].type == "function_call"
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert done["name"] == "get_weather" and "city" in json.loads(done["arguments"])
    final = events[-1]
    assert final["type"] == "response.completed"
    call = final["response"]["output"][-1]
    assert call["type"] == "function_call" and call["arguments"] == done["arguments"]

    answer = client.responses.create(
        model=server.model, previous_response_id=final["response"]["id"], tools=[WEATHER_FN],
        input=[{"type": "function_call_output", "call_id": call["call_id"],
                "output": "Sunny, 24 C"}],
        max_output_tokens=6, temperature=0)
    validate_openai(answer.model_dump(mode="json", exclude_unset=True), "Response")
    assert answer.output and answer.usage is not None
    # the call and its output are in the prompt: it is longer than the first one
    assert answer.usage.input_tokens > final["response"]["usage"]["input_tokens"]


def test_responses_malformed_requests_are_400_in_openais_shape(
        server: ServerProcess, client: openai.OpenAI) -> None:
    for body in ({"model": server.model, "input": 3},
                 {"model": server.model, "input": "x", "max_output_tokens": "many"},
                 {"model": server.model, "input": json.loads("[" * 80 + "]" * 80)},
                 {"model": server.model, "input": [{"type": "message", "role": "user",
                                                    "content": [{"type": "input_image"}]}]}):
        status, err = _request(server, "POST", "/v1/responses", body)
        assert status == 400, err
        validate_openai(err, "ErrorResponse")
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model=server.model, input="x", temperature=5)


# ---------------------------------------------------------------- Messages

def _strict_message(message: Any) -> dict[str, Any]:
    doc: dict[str, Any] = message.model_dump(mode="json", exclude_unset=True)
    Message.model_validate(doc, strict=True)
    return doc


def test_a_message_with_a_stop_sequence_and_its_token_count(
        server: ServerProcess, claude: anthropic.Anthropic) -> None:
    messages: Any = [{"role": "user", "content": "Count from one to ten: one, two,"}]
    count = claude.messages.count_tokens(model=server.model, messages=messages,
                                         system="You count.")
    MessageTokensCount.model_validate(count.model_dump(), strict=True)
    plain = claude.messages.create(model=server.model, max_tokens=6, messages=messages,
                                   system="You count.", extra_body=GREEDY)
    doc = _strict_message(plain)
    assert plain.stop_reason in ("max_tokens", "end_turn") and plain.content
    text = plain.content[0].text  # type: ignore[union-attr]
    prompt = plain.usage.input_tokens + (plain.usage.cache_read_input_tokens or 0)
    assert count.input_tokens == prompt == doc["timings"]["prompt_tokens"]
    # stop at the second word the greedy answer gave: the text ends before it
    words = text.split()
    assert len(words) >= 2, text
    stop = words[1]
    cut = claude.messages.create(model=server.model, max_tokens=6, messages=messages,
                                 system="You count.", stop_sequences=[stop, "zzz"],
                                 extra_body=GREEDY)
    _strict_message(cut)
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert stop not in "".join(b.text for b in cut.content)  # type: ignore[union-attr]


def test_a_streamed_tool_use_round_trip(server: ServerProcess,
                                        claude: anthropic.Anthropic) -> None:
    question: Any = {"role": "user", "content": "What is the weather in Paris?"}
    with claude.messages.stream(model=server.model, max_tokens=40, messages=[question],
                                tools=[WEATHER_TOOL], tool_choice={"type": "any"},
                                extra_body=GREEDY) as stream:
        raw, final = raw_events(stream)
    kinds = [e["type"] for e in raw]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [e["delta"] for e in raw if e["type"] == "content_block_delta"]
    assert any(d["type"] == "input_json_delta" for d in deltas)
    doc = _strict_message(final)
    assert final.stop_reason == "tool_use" and raw[-2]["delta"]["stop_reason"] == "tool_use"
    use = final.content[-1]
    assert use.type == "tool_use" and use.name == "get_weather" and "city" in use.input
    assert doc["usage"]["output_tokens"] > 0

    answer = claude.messages.create(
        model=server.model, max_tokens=8, tools=[WEATHER_TOOL], extra_body=GREEDY,
        messages=[question, {"role": "assistant", "content": final.content},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                "content": "Sunny, 24 C"}]}])
    _strict_message(answer)
    assert answer.content and answer.usage.output_tokens > 0


def test_a_streamed_text_message_and_its_ping(server: ServerProcess) -> None:
    body = {"model": server.model, "max_tokens": 4, "stream": True, "temperature": 0,
            "messages": [{"role": "user", "content": "Say hello."}]}
    req = urllib.request.Request(server.url + "/v1/messages", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json",
                                                         "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        blocks = resp.read().decode().strip().split("\n\n")
    events = []
    for block in blocks:
        name, data = block.split("\n", 1)
        doc = json.loads(data.removeprefix("data: "))
        assert name == f"event: {doc['type']}"
        events.append(doc)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["message_start", "ping", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    for event in events:
        if event["type"] != "ping":
            STREAM_EVENT.validate_python(event, strict=True)
    usage = events[-2]["usage"]
    assert usage["output_tokens"] == events[-2]["timings"]["generated_tokens"] <= 4


def test_a_text_only_model_refuses_images_in_each_apis_shape(server: ServerProcess) -> None:
    png = base64.b64encode(png_bytes(4, 4)).decode()
    status, err = _request(server, "POST", "/v1/responses", {
        "model": server.model, "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64," + png}]}]})
    assert status == 400 and err["error"]["code"] == "images_not_supported"
    validate_openai(err, "ErrorResponse")
    status, err = _request(server, "POST", "/v1/messages", {
        "model": server.model, "max_tokens": 2, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png}}]}]})
    assert status == 400 and "cannot take images" in err["error"]["message"]
    anthropic.types.ErrorResponse.model_validate(err, strict=True)


def test_messages_malformed_requests_are_400_in_anthropics_shape(
        server: ServerProcess, claude: anthropic.Anthropic) -> None:
    user: Any = [{"role": "user", "content": "x"}]
    for body in ({"model": server.model, "messages": user},  # no max_tokens
                 {"model": server.model, "max_tokens": "5", "messages": user},
                 {"model": server.model, "max_tokens": 5, "messages": "x"},
                 {"model": server.model, "max_tokens": 5,
                  "messages": [{"role": "user", "content": json.loads("[" * 80 + "]" * 80)}]},
                 {"model": server.model, "max_tokens": 5, "messages": [{"role": "user",
                  "content": [{"type": "image", "source": {"type": "url", "url": "x"}}]}]}):
        status, err = _request(server, "POST", "/v1/messages", body)
        assert status == 400, err
        anthropic.types.ErrorResponse.model_validate(err, strict=True)
        assert err["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model=server.model, max_tokens=0, messages=user)
    assert "max_tokens" in str(info.value)
    # one model serves any name (as llama-server); the answer names the model that answered
    assert claude.messages.create(model="claude-nope", max_tokens=5,
                                  messages=user).model == server.model
    claude.messages.count_tokens(model=server.model, messages=user)
    assert _request(server, "POST", "/responses", {"model": server.model})[0] == 400
    metrics = server.get_text("/metrics")
    for endpoint, status in (("/v1/messages", 400), ("/v1/messages", 200),
                             ("/v1/responses", 400), ("/v1/messages/count_tokens", 200)):
        assert f'endpoint="{endpoint}",status="{status}"' in metrics, endpoint

