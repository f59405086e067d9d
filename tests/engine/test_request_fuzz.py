"""A fuzzer over request bodies: 10,000 bodies (``LOADOUT_FUZZ_EXAMPLES``), seeded and
deterministic, sent over real HTTP to the real server app serving the demo model (loaded
in this process, answers capped at one token so that valid bodies stay cheap). Every answer
must be a 2xx or a 4xx with the OpenAI error shape: no 5xx, no crash, no hang; the
server is healthy at the end.

The bodies mix valid requests with every field replaced, in turn, by values of the wrong
type, out of range, huge, deeply nested or malformed; some bodies are arbitrary JSON and
some arbitrary bytes.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("LOADOUT_FUZZ_EXAMPLES", "10000"))
MAX_TOKENS = 1
ROUTES = ("/v1/chat/completions", "/v1/completions")
FIELDS = ("model", "messages", "prompt", "stream", "stream_options", "temperature", "top_p",
          "top_k", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "seed",
          "max_tokens", "max_completion_tokens", "stop", "n", "best_of", "logprobs",
          "top_logprobs", "logit_bias", "user", "response_format", "grammar", "loop_guard",
          "cache_prompt", "speculative", "tools", "tool_choice", "parallel_tool_calls",
          "echo", "suffix")
STATS: Counter[str] = Counter()


@pytest.fixture(name="live", scope="module")
def live_fixture() -> Iterator[tuple[str, int]]:
    """The real app over real HTTP (uvicorn on a thread) with the demo model loaded."""
    import dataclasses

    import uvicorn

    from engine.demo import demo_model_path
    from engine.launch import LaunchSpec
    from engine.runtime import Engine
    from engine.server.app import ServerState, build_app
    from engine.server.connections import ConnectionLimits, http_protocol
    from engine.server.grammar_probe import GrammarProbe
    from engine.server.request_model import DEFAULT_REQUEST_LIMITS
    from engine.server.runner import bind_socket
    from engine.server.security import SecurityPolicy

    spec = LaunchSpec(model_path=str(demo_model_path()), n_ctx=4 * 256, n_seq_max=4,
                      n_threads=1, warm_up=False)
    engine = Engine(spec, queue_size=64)
    state = ServerState(model_id="demo")
    state.attach(engine)
    state.grammar_probe = GrammarProbe(spec.model_path)  # as loadout serve does
    state.grammar_probe.start()
    conn = ConnectionLimits(header_timeout_s=5, body_timeout_s=5)
    limits = dataclasses.replace(DEFAULT_REQUEST_LIMITS, max_tokens=MAX_TOKENS)
    app = build_app(state, SecurityPolicy.resolve("127.0.0.1", None), limits, conn)
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off",
                                           http=http_protocol(conn), limit_concurrency=64))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield "127.0.0.1", int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        state.grammar_probe.close()
        engine.close()


# ------------------------------------------------------------------ strategies

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["", "demo", "none", "auto", "required", "function", "user", "json_schema",
                     "root ::= \"a\"", "\ud800", "x" * 5000]))
JUNK = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=6)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "assistant", "tool", "developer"]),
     "content": st.one_of(st.text(max_size=12), st.none(),
                          st.lists(st.fixed_dictionaries({"type": st.just("text"),
                                                          "text": st.text(max_size=10)}),
                                   max_size=2))},
    optional={"name": JUNK, "tool_calls": JUNK, "tool_call_id": JUNK})
SCHEMA = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean",
                                                    "null"])},
                          optional={"maxLength": st.integers(-5, 10**7),
                                    "minLength": st.integers(0, 10**7),
                                    "minimum": st.floats(), "maximum": st.floats(),
                                    "pattern": st.sampled_from(["^a+$", "(a{0,900}){0,900}",
                                                                "[", "x" * 3000])}),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner},
                              optional={"minItems": st.integers(0, 10**9),
                                        "maxItems": st.integers(0, 10**9)}),
        st.fixed_dictionaries({"type": st.just("object"),
                               "properties": st.dictionaries(st.text(max_size=5), inner,
                                                             max_size=3)}),
        st.fixed_dictionaries({"anyOf": st.lists(inner, max_size=3)})),
    max_leaves=4)
GOOD = {
    "stream": st.booleans(), "temperature": st.floats(0, 2), "top_p": st.floats(0, 1),
    "top_k": st.integers(0, 100), "seed": st.integers(0, 2**32), "max_tokens":
    st.integers(1, MAX_TOKENS + 2), "stop": st.lists(st.text(max_size=6), max_size=3),
    "repeat_penalty": st.floats(0, 3), "grammar": st.sampled_from(
        ['root ::= "a"', 'root ::= [a-z]{1,3}', "root ::= (((\"x\")))", "root ::= ("]),
    "response_format": st.one_of(
        st.just({"type": "json_object"}),
        SCHEMA.map(lambda s: {"type": "json_schema", "json_schema": {"name": "x",
                                                                      "schema": s}})),
    "tools": st.lists(st.fixed_dictionaries({
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": st.sampled_from(["f", "g"])},
                                          optional={"parameters": SCHEMA})}), max_size=2),
    "tool_choice": st.one_of(st.sampled_from(["auto", "none", "required"]),
                             st.fixed_dictionaries({"type": st.just("function"),
                                                    "function": st.fixed_dictionaries(
                                                        {"name": JUNK})})),
    "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
}


@st.composite
def request_bodies(draw: st.DrawFn) -> tuple[str, bytes]:
    """(route, body bytes)."""
    route = draw(st.sampled_from(ROUTES))
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return route, draw(st.binary(max_size=64))
    if kind == 1:
        return route, json.dumps(draw(JUNK)).encode()
    if kind == 2:  # deep nesting
        depth = draw(st.integers(1, 3000))
        return route, b'{"model": "demo", "messages": ' + b"[" * depth + b"]" * depth + b"}"
    body: dict[str, Any] = {"model": "demo", "max_tokens": 1}
    if route.endswith("chat/completions"):
        body["messages"] = draw(st.lists(MESSAGE, min_size=1, max_size=2))
    else:
        body["prompt"] = draw(st.text(max_size=12))
    for name in draw(st.lists(st.sampled_from(list(GOOD)), max_size=3, unique=True)):
        body[name] = draw(GOOD[name])
    # most bodies carry a field of the wrong kind (a valid body costs a generation)
    for name in draw(st.lists(st.sampled_from(FIELDS), min_size=int(kind > 4), max_size=2,
                              unique=True)):
        body[name] = draw(JUNK.filter(lambda v: v is not None))
    return route, json.dumps(body).encode()


def _post(address: tuple[str, int], route: str, body: bytes) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(*address, timeout=30)  # a hang fails the example
    try:
        conn.request("POST", route, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _check_answer(status: int, raw: bytes) -> None:
    STATS[f"{status // 100}xx"] += 1
    assert status < 500, raw[:500]
    if status >= 400:
        doc = json.loads(raw)
        error = doc["error"]
        assert isinstance(error["message"], str) and "Traceback" not in error["message"]
        assert {"type", "code", "param"} <= set(error)
    elif raw.startswith(b"data: "):  # a stream: every event is JSON, ending in [DONE]
        events = [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]
        assert events[-1] == b"[DONE]"
        for event in events[:-1]:
            doc = json.loads(event)
            assert "error" not in doc or doc["error"]["code"] != "internal_error", doc
    else:
        assert json.loads(raw)["choices"]


def test_fuzzed_bodies_never_crash_the_server(live: tuple[str, int]) -> None:
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=(Phase.explicit, Phase.generate, Phase.shrink),
              suppress_health_check=list(HealthCheck))
    @given(request_bodies())
    def run(case: tuple[str, bytes]) -> None:
        route, body = case
        _check_answer(*_post(live, route, body))

    started = time.monotonic()
    run()
    took = time.monotonic() - started
    status, raw = http.client.HTTPConnection(*live, timeout=10), b""
    status.request("GET", "/health")
    resp = status.getresponse()
    raw = resp.read()
    assert resp.status == 200 and json.loads(raw) == {"status": "ok"}
    print(f"\nfuzz: {sum(STATS.values())} bodies in {took:.1f} s: {dict(sorted(STATS.items()))}")
    assert sum(STATS.values()) >= EXAMPLES
    assert STATS["5xx"] == 0
