"""The one-pass body check (``engine.server.body_check``) and bounded off-loop work
(``engine.server.offloop``): what each budget refuses, that errors name the real cause,
and that work past its time does not go on in a thread."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time

import pytest
from starlette.testclient import TestClient

from engine.server.body_check import decode_and_check, path_of, walk
from engine.server.errors import ApiError
from engine.server.offloop import live_workers, run_bounded
from engine.server.request_model import DEFAULT_REQUEST_LIMITS

LIMITS = dataclasses.replace(DEFAULT_REQUEST_LIMITS, max_json_elements=10_000,
                             max_array_items=5_000)


def _error(raw: bytes, limits: object = LIMITS) -> ApiError:
    with pytest.raises(ApiError) as info:
        decode_and_check(raw, limits)  # type: ignore[arg-type]
    return info.value


def test_a_body_of_many_numbers_is_refused_for_its_count_not_its_grammar() -> None:
    """A body of 3.9 million numbers was refused 13 s later as "the request's grammar"."""
    raw = json.dumps({"model": "m", "messages": [], "response_format": {"type": "text"},
                      "x": [[1] * 4000 for _ in range(4)]}).encode()
    err = _error(raw)
    assert err.code == "too_many_elements" and "max_json_elements" in err.message
    assert "grammar" not in err.message


def test_millions_of_numbers_are_refused_from_the_bytes_commas_in_text_are_not() -> None:
    from engine.server.body_check import too_many_values

    numbers = b'{"x": [' + b"1," * 3_900_000 + b"1]}"
    started = time.monotonic()
    err = _error(numbers, DEFAULT_REQUEST_LIMITS)
    assert err.code == "too_many_elements" and time.monotonic() - started < 0.5
    text = json.dumps({"messages": [{"role": "user", "content": "a, b" * 400_000}]})
    assert not too_many_values(text.encode(), DEFAULT_REQUEST_LIMITS.max_json_elements)
    decode_and_check(text.encode(), DEFAULT_REQUEST_LIMITS)


def test_one_long_array_is_refused_naming_where_it_is() -> None:
    err = _error(json.dumps({"prompt": [1] * 6000}).encode())
    assert err.code == "too_many_items" and err.param == "prompt"
    assert "6000" in err.message and "max_array_items" in err.message
    err = _error(json.dumps({"logit_bias": {str(i): 1 for i in range(6000)}}).encode())
    assert err.param == "logit_bias"


def test_messages_tools_and_stops_are_counted_before_anything_is_walked() -> None:
    body = {"messages": [{"role": "user", "content": "\ud800"}] * 3000}
    err = _error(json.dumps(body).encode(), DEFAULT_REQUEST_LIMITS)  # the count, first
    assert err.param == "messages" and "at most 2048" in err.message


def test_a_lone_surrogate_is_named_by_its_path_in_values_and_keys() -> None:
    err = _error(b'{"messages": [{"role": "user", "content": "a\\ud800"}]}')
    assert err.code == "invalid_text" and err.param == "messages[0].content"
    err = _error(b'{"tools": [{"function": {"\\udfff": 1}}]}')
    assert err.param == "tools[0].function.\udfff"


def test_depth_is_refused_by_the_walk_and_by_the_decoder() -> None:
    assert _error(b'{"a": ' + b"[" * 70 + b"]" * 70 + b"}").code == "json_too_deep"
    assert _error(b"[" * 100_000 + b"]" * 100_000).code == "json_too_deep"


def test_the_time_budget_ends_the_walk_with_its_own_message() -> None:
    limits = dataclasses.replace(LIMITS, body_check_s=0.0, max_json_elements=1 << 20,
                                 max_array_items=1 << 20)
    doc = {"a": list(range(50_000))}
    with pytest.raises(ApiError) as info:
        walk(doc, limits, deadline=time.monotonic())
    assert info.value.code == "body_too_complex" and "body_check_s" in info.value.message


def test_a_valid_body_passes_and_is_counted() -> None:
    doc = {"model": "m", "messages": [{"role": "user", "content": "héllo 😀"}]}
    assert walk(doc, LIMITS) == 6
    assert path_of(((None, "messages"), 0)) == "messages[0]"


def test_work_past_its_time_is_stopped_not_left_running() -> None:
    """``wait_for(to_thread(f))`` answered on time but left ``f`` running."""
    ran = threading.Event()

    def forever() -> int:
        ran.set()
        n = 0
        while True:
            n += 1

    async def go() -> None:
        with pytest.raises(TimeoutError):
            await run_bounded(forever, 0.2)

    asyncio.run(go())
    assert ran.is_set()
    end = time.monotonic() + 5
    while live_workers() and time.monotonic() < end:
        time.sleep(0.05)
    assert live_workers() == 0


def test_bounded_work_returns_its_result_and_its_errors() -> None:
    async def go() -> None:
        assert await run_bounded(lambda: 42, 5) == 42
        with pytest.raises(ZeroDivisionError):
            await run_bounded(lambda: 1 // 0, 5)

    asyncio.run(go())


def _app(compile_timeout_s: float) -> TestClient:
    from engine.server.app import ServerState, build_app
    from engine.server.grammar_budget import DEFAULT_LIMITS
    from engine.server.openai_schema import ServedModel
    from engine.server.security import SecurityPolicy

    class _Loaded(ServerState):
        def require(self, model: str | None = None):  # type: ignore[no-untyped-def]
            return object(), ServedModel(id="m")

    limits = dataclasses.replace(DEFAULT_REQUEST_LIMITS, grammar=dataclasses.replace(
        DEFAULT_LIMITS, compile_timeout_s=compile_timeout_s))
    return TestClient(build_app(_Loaded(), SecurityPolicy(), limits),
                      base_url="http://127.0.0.1")


def test_a_slow_check_without_a_grammar_does_not_blame_a_grammar() -> None:
    """The timeout named "the request's grammar" and response_format for any slow body."""
    with _app(0.0) as client:
        doc = client.post("/v1/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "x"}]}).json()
        assert doc["error"]["code"] == "request_too_complex"
        assert "grammar" not in doc["error"]["message"] and doc["error"]["param"] is None
        doc = client.post("/v1/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "x"}],
            "grammar": 'root ::= "a"'}).json()
        assert doc["error"]["param"] == "grammar" and doc["error"]["code"] == \
            "grammar_too_large"


def test_heavy_bodies_are_answered_off_the_loop() -> None:
    """The decode and the walk run in a thread: a 300,000-number body is a 400 naming
    the count, over the real app."""
    with _app(5.0) as client:
        raw = b'{"model": "m", "messages": [], "x": [' + b"1," * 299_999 + b"1]}"
        resp = client.post("/v1/chat/completions", content=raw,
                           headers={"Content-Type": "application/json"})
        assert resp.status_code == 400
        assert resp.json()["error"]["code"] in ("too_many_items", "too_many_elements")
