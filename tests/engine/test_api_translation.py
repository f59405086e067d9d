"""Responses and Messages bodies into chat requests, the stored-response bounds, and every
error those routes answer (in-process app, no model: fast).

Responses errors are checked against the OpenAI ``ErrorResponse`` schema, Messages errors
against the ``anthropic`` SDK's own ``ErrorResponse`` type.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic.types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from engine.metrics import Metrics
from engine.requests import Chunk
from engine.server import messages_api, messages_input, responses_api, responses_input
from engine.server.api_common import engine_failure
from engine.server.app import ServerState, build_app
from engine.server.errors import ApiError
from engine.server.openai_schema import ServedModel, parse_chat
from engine.server.request_model import DEFAULT_REQUEST_LIMITS as LIMITS
from engine.server.response_store import ResponseStore, StoreLimits
from engine.server.security import SecurityPolicy
from tests.engine.responses_schemas import validate_openai
from tests.engine.server_fixtures import validate

MODEL = ServedModel(id="tiny", n_ctx_per_seq=2048)
FN = {"type": "function", "name": "get_weather", "description": "weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
TOOL = {"name": "get_weather", "description": "weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def _responses_error(body: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        req = responses_input.to_chat(body, None, LIMITS)
        parse_chat(req.chat, MODEL, LIMITS)
    validate(info.value.to_json(), "ErrorResponse")
    assert info.value.status == 400
    return info.value


def _messages_error(body: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        req = messages_input.to_chat(body, LIMITS)
        parse_chat(req.chat, MODEL, LIMITS)
    assert info.value.status == 400
    return info.value


def test_responses_input_items_become_chat_messages_with_calls_and_results() -> None:
    req = responses_input.to_chat({
        "model": "tiny", "instructions": "Be brief.", "max_output_tokens": 9,
        "temperature": 0, "top_p": 0.5, "tools": [FN], "tool_choice": "auto",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather "},
                                         {"type": "input_text", "text": "in Paris?"}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather",
             "arguments": "{\"city\": \"Paris\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "message", "role": "developer", "content": "Answer in French."},
        ]}, [{"role": "user", "content": "earlier"}], LIMITS)
    parsed = parse_chat(req.chat, MODEL, LIMITS)
    msgs = req.chat["messages"]
    assert msgs[0] == {"role": "system", "content": "Be brief."}
    assert msgs[1] == {"role": "user", "content": "earlier"}
    assert msgs[2] == {"role": "user", "content": "Weather in Paris?"}
    assert msgs[3]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                    "arguments": "{\"city\": \"Paris\"}"}
    assert msgs[4] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert msgs[5] == {"role": "system", "content": "Answer in French."}
    assert req.conversation[0] == {"role": "user", "content": "earlier"}
    assert all(m.get("content") != "Be brief." for m in req.conversation)
    p = parsed.generation.params
    assert (p.max_tokens, p.temperature, p.top_p) == (9, 0.0, 0.5)
    assert parsed.tools[0]["function"]["name"] == "get_weather"
    assert req.echo["tools"][0]["name"] == "get_weather" and req.store


def test_messages_blocks_become_chat_messages_with_calls_and_results() -> None:
    req = messages_input.to_chat({
        "model": "tiny", "max_tokens": 7, "system": [{"type": "text", "text": "Be brief."}],
        "stop_sequences": ["END"], "tools": [TOOL], "tool_choice": {"type": "any"},
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "get_weather",
                 "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1",
                 "content": [{"type": "text", "text": "sunny"}]},
                {"type": "text", "text": "Thanks."}]},
        ]}, LIMITS)
    parsed = parse_chat(req.chat, MODEL, LIMITS)
    msgs = req.chat["messages"]
    assert msgs[0] == {"role": "system", "content": "Be brief."}
    assert msgs[2]["content"] == "Let me look."
    assert json.loads(msgs[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert msgs[3] == {"role": "tool", "tool_call_id": "t1", "content": "sunny"}
    assert msgs[4] == {"role": "user", "content": "Thanks."}
    assert req.stops == ("END",) and parsed.generation.params.stop == ("END",)
    assert parsed.generation.params.max_tokens == 7
    assert parsed.generation.params.grammar is not None  # "any" forces a call


@pytest.mark.parametrize(("body", "param"), [
    ({"model": "tiny"}, "input"),
    ({"input": "hi"}, "model"),
    ({"model": "tiny", "input": 5}, "input"),
    ({"model": "tiny", "input": [5]}, "input[0]"),
    ({"model": "tiny", "input": "hi", "temperature": 3}, "temperature"),
    ({"model": "tiny", "input": "hi", "top_p": "high"}, "top_p"),
    ({"model": "tiny", "input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
    ({"model": "tiny", "input": "hi", "store": "yes"}, "store"),
    ({"model": "tiny", "input": "hi", "tools": [{"type": "web_search"}]}, "tools[0]"),
    ({"model": "tiny", "input": "hi", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": "tiny", "input": "hi", "tool_choice": {"type": "function"}}, "tool_choice"),
    ({"model": "tiny", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"model": "tiny", "input": [{"type": "function_call", "name": "f"}]},
     "input[0].call_id"),
    ({"model": "tiny", "input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
    ({"model": "tiny", "input": "hi", "background": True}, "background"),
    ({"model": "tiny", "input": "hi", "metadata": {"k": 1}}, "metadata"),
])
def test_responses_bad_fields_are_400_naming_the_field(body: Any, param: str) -> None:
    assert _responses_error(body).param == param


def test_an_image_part_is_refused_in_both_apis() -> None:
    err = _responses_error({"model": "tiny", "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "data:image/png;base64,AA=="}]}]})
    assert "does not read images" in err.message and err.param == "input[0].content[0]"
    err = _messages_error({"model": "tiny", "max_tokens": 5, "messages": [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64"}}]}]})
    assert "does not read images" in err.message


@pytest.mark.parametrize(("body", "param"), [
    ({"model": "tiny", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model"),
    ({"model": "tiny", "max_tokens": 5}, "messages"),
    ({"model": "tiny", "max_tokens": 5, "messages": []}, "messages"),
    ({"model": "tiny", "max_tokens": "5", "messages": []}, "max_tokens"),
    ({"model": "tiny", "max_tokens": 5, "temperature": 1.5, "messages": []}, "temperature"),
    ({"model": "tiny", "max_tokens": 5, "system": 3, "messages": []}, "system"),
    ({"model": "tiny", "max_tokens": 5, "stop_sequences": ["a"] * 9,
      "messages": [{"role": "user", "content": "x"}]}, "stop_sequences"),
    ({"model": "tiny", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]},
     "messages[0].role"),
    ({"model": "tiny", "max_tokens": 5, "messages": [{"role": "user", "content": 5}]},
     "messages[0].content"),
    ({"model": "tiny", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]},
     "messages[0].content[0].type"),
    ({"model": "tiny", "max_tokens": 5, "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "f", "input": "x"}]}]},
     "messages[0].content[0].input"),
    ({"model": "tiny", "max_tokens": 5, "tools": [TOOL], "tool_choice": {"type": "maybe"},
      "messages": [{"role": "user", "content": "x"}]}, "tool_choice"),
    ({"model": "tiny", "max_tokens": 5, "tools": [{"type": "bash_20250124", "name": "b"}],
      "messages": [{"role": "user", "content": "x"}]}, "tools[0]"),
    ({"model": "tiny", "max_tokens": 5, "thinking": "on",
      "messages": [{"role": "user", "content": "x"}]}, "thinking"),
])
def test_messages_bad_fields_are_400_naming_the_field(body: Any, param: str) -> None:
    assert _messages_error(body).param == param


def test_counting_needs_no_max_tokens() -> None:
    req = messages_input.to_chat({"model": "tiny", "messages": [
        {"role": "user", "content": "x"}]}, LIMITS, counting=True)
    assert req.chat["max_tokens"] == 1


def test_the_store_keeps_at_most_its_count_and_bytes_oldest_first(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "r", StoreLimits(max_count=3, max_bytes=400))
    ids = [f"resp_{i:024x}" for i in range(5)]
    for rid in ids:
        assert store.put(rid, {"response": {"id": rid}, "conversation": []})
    assert [store.get(r) is not None for r in ids] == [False, False, True, True, True]
    assert not store.put(ids[0], {"response": {"id": "x" * 500}})  # over the byte bound
    big = {"response": {"id": "y" * 150}, "conversation": []}
    store.put(ids[0], big)
    store.put(ids[1], big)  # two of ~190 bytes: the older small ones make room
    assert sum(p.stat().st_size for p in (tmp_path / "r").iterdir()) <= 400
    assert store.get(ids[1]) == big
    assert store.get("../../etc/passwd") is None and not store.delete("resp_x")
    assert store.delete(ids[1]) and store.get(ids[1]) is None


# ---------------------------------------------------------------- over HTTP, no model

def _app(policy: SecurityPolicy | None = None) -> TestClient:
    app = build_app(ServerState(), policy or SecurityPolicy(max_body_bytes=4096))
    return TestClient(app, base_url="http://127.0.0.1")


def _anthropic_error(resp: Any, status: int, kind: str) -> str:
    assert resp.status_code == status, resp.text
    doc = resp.json()
    anthropic.types.ErrorResponse.model_validate(doc, strict=True)
    assert doc["error"]["type"] == kind
    return str(doc["error"]["message"])


def test_every_messages_error_has_anthropics_shape() -> None:
    client = _app(SecurityPolicy(api_key="sk-right", max_body_bytes=4096))
    ok = {"x-api-key": "sk-right", "anthropic-version": "2023-06-01"}
    body = {"model": "tiny", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    _anthropic_error(client.post("/v1/messages", json=body), 401, "authentication_error")
    _anthropic_error(client.post("/v1/messages", json=body, headers={"x-api-key": "no"}),
                     401, "authentication_error")
    _anthropic_error(client.post("/v1/messages", content=b"{}", headers={
        **ok, "content-type": "text/plain"}), 400 + 15, "invalid_request_error")
    _anthropic_error(client.post("/v1/messages", content=b"[" * 5000, headers={
        **ok, "content-type": "application/json"}), 413, "invalid_request_error")
    _anthropic_error(client.post("/v1/messages", content=b"{not json", headers={
        **ok, "content-type": "application/json"}), 400, "invalid_request_error")
    # no model loaded: the route says so, Anthropic's way, and with the key by Bearer too
    _anthropic_error(client.post("/messages/count_tokens", json=body,
                                 headers={"Authorization": "Bearer sk-right"}),
                     503, "overloaded_error")
    # the other routes keep OpenAI's shape
    resp = client.post("/v1/responses", json={"model": "tiny", "input": "x"})
    assert resp.status_code == 401
    validate(resp.json(), "ErrorResponse")


def test_malformed_bodies_are_400_not_500_over_http() -> None:
    client = _app()
    deep = "[" * 200 + "]" * 200
    for path, body in (
            ("/v1/messages", deep), ("/v1/responses", deep),
            ("/v1/messages", "[]"), ("/v1/responses", "\"hi\""),
            ("/v1/messages", '{"model": "t", "max_tokens": 1, "messages": ' + deep + "}"),
            ("/v1/responses", '{"model": "t", "input": ' + deep + "}")):
        resp = client.post(path, content=body.encode(),
                           headers={"content-type": "application/json"})
        assert resp.status_code == 400, (path, body[:40], resp.text)
        if path == "/v1/messages":
            _anthropic_error(resp, 400, "invalid_request_error")
        else:
            validate(resp.json(), "ErrorResponse")


# ---------------------------------------------------------------- fuzz: never a 500

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
_VALID_RESPONSES: dict[str, Any] = {
    "model": "tiny", "input": [{"role": "user", "content": [{"type": "input_text",
                                                             "text": "x"}]},
                               {"type": "function_call", "call_id": "c", "name": "get_weather",
                                "arguments": "{}"},
                               {"type": "function_call_output", "call_id": "c",
                                "output": "ok"}],
    "instructions": "i", "tools": [FN], "tool_choice": "auto", "max_output_tokens": 3,
    "temperature": 0.5, "top_p": 0.5, "text": {"format": {"type": "text"}},
    "metadata": {"a": "b"}, "store": False, "stream": False}
_VALID_MESSAGES: dict[str, Any] = {
    "model": "tiny", "max_tokens": 3, "system": [{"type": "text", "text": "s"}],
    "messages": [{"role": "user", "content": "x"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "t",
                                                    "name": "get_weather", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                               "content": "ok"}]}],
    "tools": [TOOL], "tool_choice": {"type": "auto"}, "stop_sequences": ["a"],
    "temperature": 0.5, "top_p": 0.5, "top_k": 3, "stream": False}


def _mutated(valid: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A valid body with one field (or one item of a list field) replaced by any JSON."""
    def replace(key: str, value: Any, index: int) -> Any:
        body = json.loads(json.dumps(valid))
        if isinstance(body[key], list) and body[key] and index >= 0:
            body[key][index % len(body[key])] = value
        else:
            body[key] = value
        return body
    return st.builds(replace, st.sampled_from(sorted(valid)), _JSON, st.integers(-1, 3))


def _never_500(translate: Any, body: Any) -> None:
    try:
        parse_chat(translate(body).chat, MODEL, LIMITS)
    except ApiError as err:
        assert 400 <= err.status < 500, err.to_json()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(body=_mutated(_VALID_RESPONSES) | _JSON)
def test_any_responses_body_is_accepted_or_a_4xx(body: Any) -> None:
    _never_500(lambda b: responses_input.to_chat(b, None, LIMITS), body)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(body=_mutated(_VALID_MESSAGES) | _JSON)
def test_any_messages_body_is_accepted_or_a_4xx(body: Any) -> None:
    _never_500(lambda b: messages_input.to_chat(b, LIMITS), body)


def test_a_browser_origin_may_send_anthropic_version_and_delete_a_response() -> None:
    origin = "http://app.example"
    client = _app(SecurityPolicy(cors_origins=(origin,)))
    resp = client.options("/v1/messages", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "anthropic-version, x-api-key, content-type"})
    assert resp.status_code == 200, resp.text
    resp = client.options("/v1/responses/resp_0", headers={
        "Origin": origin, "Access-Control-Request-Method": "DELETE"})
    assert resp.status_code == 200, resp.text


def test_a_failed_response_and_a_failed_message_stream_have_their_apis_shapes() -> None:
    last = Chunk("", (), "error", Metrics(None, None, None, None, 3, 0, 0), error="boom")
    failure = engine_failure(last, user_grammar=False)
    assert failure is not None and failure.status == 500
    req = responses_input.to_chat({"model": "m", "input": "x"}, None, LIMITS)
    doc = responses_api.response_doc("resp_0", 1, "m", req, "failed", [], last, failure)
    validate_openai({"type": "response.failed", "sequence_number": 2, "response": doc},
                    "ResponseFailedEvent")
    assert doc["error"]["code"] == "server_error" and "boom" in doc["error"]["message"]
    anthropic.types.ErrorResponse.model_validate(
        messages_api.error_doc(failure.status, failure.message), strict=True)
