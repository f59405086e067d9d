"""``loadout serve`` end to end: a real server process, the real ``openai`` client.

Every response (and every streamed chunk) is checked against the OpenAI schemas.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

from tests.engine.server_fixtures import (  # noqa: F401
    ServerProcess,
    client_fixture,
    server_fixture,
    validate,
)

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def _post(server: ServerProcess, path: str, body: bytes,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    req = urllib.request.Request(server.url + path, data=body, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def _post_json(server: ServerProcess, path: str, doc: Any) -> tuple[int, dict[str, str], Any]:
    return _post(server, path, json.dumps(doc).encode())


def test_models_lists_the_served_model(server: ServerProcess, client: Any) -> None:
    doc = server.get_json("/v1/models")
    validate(doc, "ListModelsResponse")
    assert [m["id"] for m in doc["data"]] == [server.model]
    assert [m.id for m in client.models.list()] == [server.model]


def test_health_says_ok(server: ServerProcess) -> None:
    assert server.get_json("/health") == {"status": "ok"}


def test_chat_answers_with_usage_and_timings(server: ServerProcess, client: Any) -> None:
    resp = client.chat.completions.create(model=server.model, messages=QUESTION,
                                          max_tokens=24, temperature=0)
    doc = resp.model_dump(exclude_unset=True)
    validate(doc, "CreateChatCompletionResponse")
    choice = resp.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert resp.usage.completion_tokens == doc["timings"]["generated_tokens"] >= 1
    assert resp.usage.prompt_tokens == doc["timings"]["prompt_tokens"] > 5
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert doc["timings"]["ttft_s"] > 0 and doc["timings"]["e2e_tps"] > 0


def test_chat_is_deterministic_at_temperature_zero(server: ServerProcess, client: Any) -> None:
    answers = {client.chat.completions.create(
        model=server.model, messages=QUESTION, max_tokens=16, temperature=0,
    ).choices[0].message.content for _ in range(2)}
    assert len(answers) == 1


def test_second_identical_prompt_reuses_cached_prefix(server: ServerProcess,
                                                     client: Any) -> None:
    messages = [{"role": "user", "content": "Name three colours of the rainbow, please."}]
    client.chat.completions.create(model=server.model, messages=messages, max_tokens=4,
                                   temperature=0)
    again = client.chat.completions.create(model=server.model, messages=messages,
                                           max_tokens=4, temperature=0)
    assert again.usage.prompt_tokens_details.cached_tokens >= again.usage.prompt_tokens - 1
    whole = client.chat.completions.create(model=server.model, messages=messages,
                                           max_tokens=4, temperature=0,
                                           extra_body={"cache_prompt": False})
    assert whole.usage.prompt_tokens_details.cached_tokens == 0
    assert whole.choices[0].message.content == again.choices[0].message.content


def test_streaming_chat_chunks_fit_the_schema_and_join_to_the_answer(
        server: ServerProcess, client: Any) -> None:
    whole = client.chat.completions.create(model=server.model, messages=QUESTION,
                                           max_tokens=20, temperature=0)
    stream = client.chat.completions.create(model=server.model, messages=QUESTION,
                                            max_tokens=20, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    for chunk in chunks:
        validate(chunk.model_dump(exclude_unset=True), "CreateChatCompletionStreamResponse")
    assert len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == \
        whole.usage.completion_tokens


def test_completion_with_stop_sequence_ends_before_it(server: ServerProcess,
                                                      client: Any) -> None:
    free = client.completions.create(model=server.model, prompt="1, 2, 3, 4, 5,",
                                     max_tokens=12, temperature=0)
    validate(free.model_dump(exclude_unset=True), "CreateCompletionResponse")
    assert " 8" in free.choices[0].text  # without a stop it counts on past 8
    stopped = client.completions.create(model=server.model, prompt="1, 2, 3, 4, 5,",
                                        max_tokens=12, temperature=0, stop=[" 8"])
    validate(stopped.model_dump(exclude_unset=True), "CreateCompletionResponse")
    text = stopped.choices[0].text
    assert stopped.choices[0].finish_reason == "stop"
    assert "8" not in text and text == free.choices[0].text.split(" 8")[0]


def test_streaming_completion_joins_to_the_same_text(server: ServerProcess,
                                                     client: Any) -> None:
    prompt = "The capital of France is"
    whole = client.completions.create(model=server.model, prompt=prompt, max_tokens=10,
                                      temperature=0)
    pieces = list(client.completions.create(model=server.model, prompt=prompt, max_tokens=10,
                                            temperature=0, stream=True))
    last = pieces[-1].model_dump(exclude_unset=True)
    validate(last, "CreateCompletionResponse")
    assert "".join(p.choices[0].text for p in pieces) == whole.choices[0].text
    assert last["usage"]["completion_tokens"] == whole.usage.completion_tokens


def test_json_schema_response_parses_and_fits_the_schema(server: ServerProcess,
                                                         client: Any) -> None:
    schema = {"type": "object",
              "properties": {"city": {"type": "string", "maxLength": 24},
                             "population_millions": {"type": "integer", "minimum": 0,
                                                     "maximum": 100}},
              "required": ["city", "population_millions"], "additionalProperties": False}
    resp = client.chat.completions.create(
        model=server.model, max_tokens=60, temperature=0,
        messages=[{"role": "user", "content": "Give the capital of France as JSON."}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "capital", "schema": schema}})
    validate(resp.model_dump(exclude_unset=True), "CreateChatCompletionResponse")
    answer = json.loads(resp.choices[0].message.content)
    import jsonschema

    jsonschema.validate(answer, schema)


def test_forced_tool_call_returns_parseable_arguments(server: ServerProcess,
                                                      client: Any) -> None:
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "maxLength": 30}},
                       "required": ["city"], "additionalProperties": False}}}]
    resp = client.chat.completions.create(
        model=server.model, max_tokens=40, temperature=0, tools=tools,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        messages=[{"role": "user", "content": "What is the weather in Paris?"}])
    validate(resp.model_dump(exclude_unset=True), "CreateChatCompletionResponse")
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments)["city"], str)


def test_streamed_forced_tool_call_arrives_as_a_tool_calls_delta(server: ServerProcess,
                                                                  client: Any) -> None:
    tools = [{"type": "function", "function": {
        "name": "get_time", "parameters": {
            "type": "object", "properties": {"zone": {"type": "string", "maxLength": 12}},
            "required": ["zone"]}}}]
    chunks = list(client.chat.completions.create(
        model=server.model, max_tokens=40, temperature=0, tools=tools, stream=True,
        tool_choice="required",
        messages=[{"role": "user", "content": "What time is it in Tokyo?"}]))
    for chunk in chunks:
        validate(chunk.model_dump(exclude_unset=True), "CreateChatCompletionStreamResponse")
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert [d.function.name for d in deltas] == ["get_time"]
    assert "zone" in json.loads(deltas[0].function.arguments)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


# ---------------------------------------------------------------- errors


def _assert_error(status: int, doc: Any, expected_status: int) -> dict[str, Any]:
    assert status == expected_status, doc
    validate(doc, "ErrorResponse")
    err: dict[str, Any] = doc["error"]
    return err


def test_malformed_json_is_a_400(server: ServerProcess) -> None:
    status, _, doc = _post(server, "/v1/chat/completions", b'{"model": "x", "messages": [')
    assert _assert_error(status, doc, 400)["code"] == "invalid_json"


def test_any_model_name_is_served_by_the_one_model(server: ServerProcess,
                                                  client: Any) -> None:
    # as llama-server: one model serves whatever name a tool sends; the answer names it
    res = client.chat.completions.create(model="no-such-model", messages=QUESTION,
                                         max_tokens=2)
    assert res.model == server.model


@pytest.mark.parametrize(("field", "value"), [
    ("temperature", 5), ("max_tokens", 0), ("top_p", "high"), ("n", 9),
    ("stop", [1, 2]), ("messages", []), ("response_format", {"type": "yaml"}),
])
def test_bad_parameters_are_400_naming_the_field(server: ServerProcess, field: str,
                                                 value: Any) -> None:
    body = {"model": server.model, "messages": QUESTION, field: value}
    status, _, doc = _post_json(server, "/v1/chat/completions", body)
    assert _assert_error(status, doc, 400)["param"].split(".")[0] == field


def test_prompt_longer_than_the_context_names_both_numbers(server: ServerProcess,
                                                           client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=server.model, prompt="hello " * 1500, max_tokens=4)
    body = info.value.body
    validate({"error": body}, "ErrorResponse")
    assert body["code"] == "context_length_exceeded"
    numbers = [int(w) for w in body["message"].split() if w.isdigit()]
    assert 1024 in numbers and any(n > 1024 for n in numbers)


def test_unknown_route_and_wrong_method_are_json_errors(server: ServerProcess) -> None:
    status, _, doc = _post(server, "/v1/nothing-here", b"{}")
    _assert_error(status, doc, 404)
    status, _, doc = _post(server, "/v1/models", b"{}")
    _assert_error(status, doc, 405)


def test_an_engine_error_reaches_only_its_client(server: ServerProcess, client: Any) -> None:
    # the engine refuses the grammar when it builds the request's sampler
    status, _, doc = _post_json(server, "/v1/completions", {
        "model": server.model, "prompt": "hi", "max_tokens": 4,
        "grammar": "root ::= this is ( not a grammar"})
    err = _assert_error(status, doc, 400)
    assert err["code"] == "invalid_grammar" and err["param"] == "grammar"
    # streamed: refused before the stream starts (the grammar is tried before the engine
    # sees it), or, were it refused by the engine, in the stream
    with pytest.raises(openai.APIError, match="grammar"):
        list(client.completions.create(model=server.model, prompt="hi", max_tokens=4,
                                       stream=True,
                                       extra_body={"grammar": "root ::= ( broken"}))
    ok = client.completions.create(model=server.model, prompt="hi", max_tokens=4)
    assert ok.choices[0].text is not None
    assert server.get_json("/health") == {"status": "ok"}


# ---------------------------------------------------------------- observability


def test_metrics_count_requests_tokens_and_speeds(server: ServerProcess, client: Any) -> None:
    def generated() -> float:
        for line in server.get_text("/metrics").splitlines():
            if line.startswith("loadout_generated_tokens_total "):
                return float(line.split()[1])
        raise AssertionError("no loadout_generated_tokens_total")

    before = generated()
    resp = client.completions.create(model=server.model, prompt="Once upon a time",
                                     max_tokens=8, temperature=0)
    text = server.get_text("/metrics")
    assert generated() == before + resp.usage.completion_tokens
    for family in ("loadout_ttft_seconds", "loadout_prefill_tokens_per_second",
                   "loadout_decode_tokens_per_second"):
        assert f"# TYPE {family} histogram" in text
        assert f'{family}_bucket{{le="+Inf"}}' in text
    assert 'loadout_requests_total{endpoint="/v1/completions",status="200"}' in text
    assert "loadout_slots_total 4" in text and "loadout_queue_length 0" in text


def test_status_names_each_answers_slot_with_its_figures_and_all_requests(
        server: ServerProcess, client: Any) -> None:
    stream = client.chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "Tell me a long story."}],
        max_tokens=400, temperature=0, stream=True,
        extra_body={"loop_guard": "off"})
    chunks = iter(stream)
    first = next(chunks)
    slot: dict[str, Any] = {}
    doc: dict[str, Any] = {}
    for _ in range(400):  # until the engine's snapshot shows this answer decoding
        next(chunks)
        doc = server.get_json("/v1/loadout/status")["engine"]
        slot = next((s for s in doc["slots"] if s["request_id"] == first.id), {})
        if slot.get("decode_tps") is not None:
            break
    stream.close()
    assert slot["state"] == "generate" and slot["generated"] > 1
    assert slot["decode_tps"] > 0 and slot["prefill_tps"] > 0 and slot["ttft_s"] > 0
    # the other slots serve no answer; the one figure of all requests is the engine's
    assert all(s["request_id"] is None for s in doc["slots"] if s is not slot)
    assert doc["decode_tps_all_requests"] > 0


def test_status_shows_slots_memory_and_load(server: ServerProcess) -> None:
    doc = server.get_json("/v1/loadout/status")
    assert doc["state"] == "ready" and doc["load_progress"] == 1.0
    engine = doc["engine"]
    assert len(engine["slots"]) == 4 and engine["n_ctx_per_seq"] == 1024
    assert all({"state", "tokens", "decode_tps"} <= set(s) for s in engine["slots"])
    assert isinstance(engine["decode_tps_all_requests"], float)
    assert engine["devices"] and all("free_bytes" in d for d in engine["devices"])
    # the host's free memory is the OS's (ggml's CPU device says free == total)
    cpu = next(d for d in engine["devices"] if d["kind"] == "cpu")
    assert 0 < cpu["free_bytes"] < cpu["total_bytes"], cpu
