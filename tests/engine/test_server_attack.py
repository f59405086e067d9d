"""``loadout serve demo`` attacked over real HTTP on every route: each malformed request
gets a clear 4xx in the route's error shape (never a 500, a crash, a hang, a traceback or a
path of the server), and after each batch the server still answers a normal chat exactly
as it did before the attack.

The regression tests name the requests that once got a 500 or killed the process; the
last test sends a seeded stream of generated hostile requests (``attack_bodies``).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.engine.attack_bodies import BIG_INT, DIGIT_BANS, requests
from tests.engine.server_fixtures import ROOT, ServerProcess

pytestmark = pytest.mark.slow

KEY = "sk-attack-test"
ORIGIN = "https://app.example"
AUTH = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}
USER = [{"role": "user", "content": "hi"}]
ANTHROPIC = ("/v1/messages", "/v1/messages/count_tokens")
FUZZ_SEED, FUZZ_REQUESTS = 20261201, 800
NORMAL = {"model": "demo", "max_tokens": 4, "temperature": 0,
          "messages": [{"role": "user", "content": "What is the capital of France?"}]}


class Target:
    """The server under attack, the answer it gives a normal chat, and raw HTTP to it."""

    def __init__(self, proc: ServerProcess) -> None:
        self.proc = proc
        parts = urlsplit(proc.url)
        assert parts.hostname is not None and parts.port is not None
        self.address = (parts.hostname, parts.port)
        self.normal_answer = self.normal_chat()

    def send(self, method: str, path: str, body: bytes | Any = b"",
             headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn = http.client.HTTPConnection(*self.address, timeout=60)  # a hang fails
        try:
            conn.request(method, path, body=data or None,
                         headers=AUTH if headers is None else headers)
            resp = conn.getresponse()
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()

    def post(self, path: str, body: bytes | Any) -> tuple[int, Any]:
        status, raw, _ = self.send("POST", path, body)
        return status, json.loads(raw)

    def normal_chat(self) -> str:
        status, doc = self.post("/v1/chat/completions", NORMAL)
        assert status == 200, doc
        return str(doc["choices"][0]["message"]["content"])

    def assert_healthy(self) -> None:
        """Alive, and a normal chat gets the very answer it got before the attack."""
        assert self.proc.proc is not None and self.proc.proc.poll() is None, \
            "the server died: " + self.proc.stderr_path.read_text()[-600:]
        assert self.normal_chat() == self.normal_answer


def _start(home: Path) -> Target:
    return Target(ServerProcess(
        "demo", "--parallel", "2", "--ctx", "1024", "--threads", "1", "--embeddings",
        "--max-tokens", "4", "--api-key", KEY, "--cors", ORIGIN, "--body-timeout", "2",
        home=home).start())


@pytest.fixture(name="served", scope="module")
def served_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Target]]:
    holder = [_start(tmp_path_factory.mktemp("attack-home"))]
    try:
        yield holder
    finally:
        holder[0].proc.stop()


@pytest.fixture(name="target")
def target_fixture(served: list[Target], tmp_path_factory: pytest.TempPathFactory
                   ) -> Target:
    """The module's server; a fresh one when a test before killed it (that test failed:
    the next ones must not fail for it)."""
    proc = served[0].proc.proc
    if proc is None or proc.poll() is not None:
        served[0].proc.stop()
        served[0] = _start(tmp_path_factory.mktemp("attack-home"))
    return served[0]


def assert_clear_error(path: str, status: int, raw: bytes) -> dict[str, Any]:
    """A 4xx in the route's error shape that quotes no traceback and no server path;
    returns the inner ``error`` object."""
    assert 400 <= status < 500, raw[:300]
    doc = json.loads(raw)
    error = doc["error"]
    if path in ANTHROPIC:
        assert doc["type"] == "error" and set(error) == {"type", "message"}, doc
    else:
        assert set(error) == {"message", "type", "param", "code"}, doc
    message = error["message"]
    assert isinstance(message, str) and 0 < len(message) <= 2100
    for leak in ("Traceback", 'File "', "site-packages", str(ROOT)):
        assert leak not in message, message
    return dict(error)


def _raw_int(doc: dict[str, Any]) -> bytes:
    """``doc`` as JSON with every "@BIG@" replaced by an integer of 400 digits."""
    return json.dumps(doc).replace('"@BIG@"', str(BIG_INT)).encode()


def _chat(**fields: Any) -> dict[str, Any]:
    return {"model": "demo", "messages": USER, "max_tokens": 2, **fields}


def _schema(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}


# ------------------------------------------------------------------ regressions

@pytest.mark.parametrize(("path", "body", "param"), [
    ("/v1/chat/completions", _chat(temperature="@BIG@"), "temperature"),
    ("/v1/chat/completions", _chat(seed="@BIG@"), "seed"),
    ("/v1/chat/completions", _chat(logit_bias={"5": "@BIG@"}), "logit_bias"),
    ("/v1/chat/completions", _chat(response_format=_schema(
        {"type": "integer", "minimum": "@BIG@"})), "response_format.json_schema.schema"),
    ("/v1/chat/completions", _chat(response_format=_schema(
        {"type": "string", "maxLength": "@BIG@"})), "response_format.json_schema.schema"),
    ("/v1/completions", {"model": "demo", "prompt": "x", "top_p": "@BIG@"}, "top_p"),
    ("/v1/responses", {"model": "demo", "input": "hi", "max_output_tokens": "@BIG@"},
     "max_output_tokens"),
    ("/v1/messages", {"model": "demo", "max_tokens": 2, "messages": USER,
                      "temperature": "@BIG@"}, None),
    ("/v1/messages", {"model": "demo", "max_tokens": 2, "messages": USER, "seed": "@BIG@"},
     None),
], ids=["chat-temperature", "chat-seed", "logit-bias-value", "schema-minimum",
        "schema-maxLength", "completion-top-p", "responses-max-output", "messages-temp",
        "messages-seed"])
def test_an_integer_past_the_float_range_is_a_400_naming_the_field(
        target: Target, path: str, body: dict[str, Any], param: str | None) -> None:
    """A 401-digit integer overflowed ``math.isfinite`` in the field checks: a 500."""
    status, raw, _ = target.send("POST", path, _raw_int(body))
    error = assert_clear_error(path, status, raw)
    if param is not None:
        assert error["param"].startswith(param)
    assert str(BIG_INT) not in error["message"]  # quoted short, not echoed whole


@pytest.mark.parametrize(("path", "body", "where"), [
    ("/v1/chat/completions", _chat(response_format=_schema(
        {"type": "object", "properties": [1]})), "schema.properties"),
    ("/v1/chat/completions", _chat(response_format=_schema(
        {"type": "object", "properties": {"a": "string"}})), "schema.properties.a"),
    ("/v1/chat/completions", _chat(response_format=_schema(
        {"type": "array", "items": [1]})), "schema.items"),
    ("/v1/chat/completions", _chat(response_format=_schema({"oneOf": [5]})),
     "schema.oneOf"),
    ("/v1/chat/completions", _chat(tool_choice="required", tools=[
        {"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"a": 5}}}}]),
     "tools[0].function.parameters.properties.a"),
    ("/v1/messages", {"model": "demo", "max_tokens": 2, "messages": USER,
                      "tool_choice": {"type": "any"}, "tools": [
        {"name": "f", "input_schema": {"type": "object", "properties": {"a": 5}}}]},
     "properties.a"),
    ("/v1/messages/count_tokens", {"model": "demo", "messages": USER,
                                   "tool_choice": {"type": "any"}, "tools": [
        {"name": "f", "input_schema": {"type": "object", "properties": {"a": 5}}}]},
     "properties.a"),
], ids=["properties-list", "property-a-string", "items-list-of-ints", "oneOf-ints",
        "forced-tool", "messages-tool", "count-tokens-tool"])
def test_a_schema_holding_a_non_schema_where_a_schema_goes_is_a_400(
        target: Target, path: str, body: dict[str, Any], where: str) -> None:
    """The grammar converter raised AttributeError on these: a 500."""
    status, raw, _ = target.send("POST", path, body)
    assert where in assert_clear_error(path, status, raw)["message"]


@pytest.mark.parametrize(("path", "body", "needle"), [
    ("/v1/chat/completions", _chat(grammar='root ::= "\\UFFFFFFFF"'), "U+FFFFFFFF"),
    ("/v1/chat/completions", _chat(grammar="root ::= [z-a]"), "ends before it starts"),
    ("/v1/chat/completions", _chat(grammar="root ::= <[99999999]>"), "vocabulary"),
    ("/v1/completions", {"model": "demo", "prompt": "x", "max_tokens": 2,
                         "grammar": 'root ::= "a" "\\x00"'}, "NUL"),
    # an end-of-generation token is allowed only where a grammar is complete (known
    # from the vocabulary only: the grammar checker finds them)
    ("/v1/completions", {"model": "demo", "prompt": "x", "max_tokens": 2,
                         "grammar": 'root ::= "a" <[0]>'}, "end-of-generation"),
    ("/v1/chat/completions", _chat(grammar='root ::= "a" | "b" <|im_end|>',
                                   logit_bias={"82": 100}), "end-of-generation"),
    ("/v1/responses", {"model": "demo", "input": "hi", "max_output_tokens": 2, "text": {
        "format": {"type": "json_schema", "name": "x", "schema": {
            "type": "string", "pattern": "^[z-a]$"}}}}, "ends before it starts"),
    ("/v1/chat/completions", _chat(grammar='root ::= "a"{5,2}'), "below its minimum"),
    # the checker follows one path ("a"); the bias sends the engine down the other
    ("/v1/chat/completions", _chat(grammar='root ::= "a" | "b" [^\\x00-\\U0010FFFF]',
                                   logit_bias={"82": 100}), "every character"),
], ids=["code-point-past-unicode", "reversed-range", "token-past-vocabulary", "nul",
        "end-token-after-a", "end-token-off-the-checked-path", "schema-pattern",
        "repetition-max-below-min", "dead-branch-off-the-checked-path"])
def test_a_grammar_that_matches_nothing_is_a_400_and_the_server_lives(
        target: Target, path: str, body: dict[str, Any], needle: str) -> None:
    """llama.cpp parses these grammars, then aborts the whole process (std::terminate,
    "Unexpected empty grammar stack") when sampling finds no token to take."""
    status, raw, _ = target.send("POST", path, body)
    error = assert_clear_error(path, status, raw)
    assert needle in error["message"] and error["code"] == "invalid_grammar"
    target.assert_healthy()


@pytest.mark.parametrize("field", ["grammar", "response_format"])
def test_banning_every_token_a_grammar_allows_does_not_kill_the_server(
        target: Target, field: str) -> None:
    """A grammar of one digit with all ten digit tokens banned (-100) left llama.cpp no
    token to sample: the process aborted. The grammar wins: the answer is a digit."""
    constraint: dict[str, Any] = {"grammar": "root ::= [0-9]"} if field == "grammar" else {
        "response_format": _schema({"type": "integer", "minimum": 0, "maximum": 9})}
    status, doc = target.post("/v1/chat/completions", _chat(logit_bias=DIGIT_BANS,
                                                            **constraint))
    assert status == 200, doc
    assert doc["choices"][0]["message"]["content"].strip().isdigit()
    target.assert_healthy()


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/v1/messages/count_tokens",
     b'{"model": "demo", "messages": [{"role": "user", "content": "\\ud800"}]}',
     "messages[0].content"),
    ("/v1/messages/count_tokens",
     b'{"model": "demo", "system": "\\udfff", "messages": [{"role": "user", '
     b'"content": "x"}]}', "system"),
    ("/v1/chat/completions",
     b'{"model": "demo", "max_tokens": 2, "messages": [{"role": "user", '
     b'"content": "\\ud800"}]}', "messages[0].content"),
    ("/v1/responses", b'{"model": "demo", "input": "x", "instructions": "\\ud800"}',
     "instructions"),
    ("/v1/messages", b'{"model": "demo", "max_tokens": 2, "messages": [{"role": "user", '
                     b'"content": [{"type": "text", "text": "a\\udc00"}]}]}',
     "messages[0].content[0].text"),
], ids=["count-tokens-content", "count-tokens-system", "chat", "responses-instructions",
        "messages-block"])
def test_a_lone_surrogate_is_a_400_naming_where_it_is(
        target: Target, path: str, body: bytes, param: str) -> None:
    """count_tokens answered 500 (UnicodeEncodeError in the tokenizer); the generation
    routes a 400 quoting Python's codec error about a position in the rendered prompt."""
    status, raw, _ = target.send("POST", path, body)
    error = assert_clear_error(path, status, raw)
    assert param in error["message"] and "surrogate" in error["message"]
    if path not in ANTHROPIC:
        assert error["param"] == param and error["code"] == "invalid_text"


@pytest.mark.parametrize("body", [
    b'{"model": "demo", "input": "hi", "max_output_tokens": 2, "tools": [{"type": "function",'
    b' "name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "number",'
    b' "default": NaN}}}}]}',
    b'{"model": "demo", "input": "hi", "max_output_tokens": 2, "text": {"format": {"type": '
    b'"json_schema", "name": "x", "schema": {"type": "number", "examples": [1e400]}}}}',
    b'{"model": "demo", "input": "hi", "max_output_tokens": 2, "stream": true, "text": '
    b'{"format": {"type": "text", "note": -Infinity}}}',
], ids=["nan-in-a-tool-default", "1e400-in-schema-examples", "infinity-streamed"])
def test_nan_and_infinity_are_not_json(target: Target, body: bytes) -> None:
    """Python reads NaN, Infinity and 1e400; a response echoing them could not be written
    (a 500), or went out as a stream event no JSON parser reads."""
    status, raw, _ = target.send("POST", "/v1/responses", body)
    error = assert_clear_error("/v1/responses", status, raw)
    assert error["code"] == "invalid_json"
    assert "not a JSON number" in error["message"] or "range of a double" in error["message"]


def _metric(target: Target, name: str) -> float:
    _, raw, _ = target.send("GET", "/metrics", headers={"Authorization": f"Bearer {KEY}"})
    return sum(float(line.rsplit(" ", 1)[1]) for line in raw.decode().splitlines()
               if line.startswith(name))


def test_a_client_that_leaves_mid_body_is_not_an_internal_error(target: Target) -> None:
    """starlette's ClientDisconnect escaped the body reader: each one a 500 in the metrics
    and two tracebacks in the log."""
    log = target.proc.stderr_path
    before = log.read_text().count("Traceback")
    errors = '{endpoint="/v1/chat/completions",status="500"}'
    fives = _metric(target, "loadout_requests_total" + errors)
    for path in ("/v1/chat/completions", "/v1/embeddings", "/v1/messages"):
        with socket.create_connection(target.address, timeout=10) as sock:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                         f"{KEY}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n"
                         "\r\n{\"model\": ".encode())
    time.sleep(0.5)
    assert _metric(target, "loadout_requests_total" + errors) == fives
    assert log.read_text().count("Traceback") == before
    target.assert_healthy()


def test_the_status_names_the_model_not_its_path(target: Target) -> None:
    """``/v1/loadout/status`` sent ``engine.model_path`` to every client with the key."""
    from engine.demo import demo_model_path

    status, raw, _ = target.send("GET", "/v1/loadout/status")
    assert status == 200 and b"model_path" not in raw
    assert str(demo_model_path().resolve().parent) not in raw.decode()


def test_a_heavy_body_is_a_400_naming_its_size_and_health_keeps_answering(
        target: Target) -> None:
    """3.9 million numbers (8 MB): 400 after 13 s blaming "the request's grammar", and
    /health waited 7.6-13.7 s meanwhile."""
    import threading

    heavy = (b'{"model": "demo", "messages": [], "response_format": {"type": "text"}, '
             b'"x": [' + b"1," * 3_900_000 + b"1]}")
    answer: list[tuple[int, bytes, dict[str, str]]] = []
    sender = threading.Thread(target=lambda: answer.append(
        target.send("POST", "/v1/chat/completions", heavy)))
    sender.start()
    waits = []
    while sender.is_alive():
        started = time.monotonic()
        assert target.send("GET", "/health", headers={})[0] == 200
        waits.append(time.monotonic() - started)
    sender.join()
    error = assert_clear_error("/v1/chat/completions", answer[0][0], answer[0][1])
    assert error["code"] == "too_many_elements" and "grammar" not in error["message"]
    assert max(waits, default=0.0) < 1.0, waits


def test_a_refused_cors_preflight_answers_in_the_error_shape(target: Target) -> None:
    """Starlette's CORS middleware answered a foreign origin's preflight in plain text."""
    ask = {"Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization,content-type"}
    status, raw, _ = target.send("OPTIONS", "/v1/chat/completions",
                                 headers={"Origin": "https://evil.example", **ask})
    assert status == 403
    assert assert_clear_error("", status, raw)["code"] == "origin_not_allowed"
    status, _, headers = target.send("OPTIONS", "/v1/chat/completions",
                                     headers={"Origin": ORIGIN, **ask})
    assert status == 200 and headers["access-control-allow-origin"] == ORIGIN
    status, raw, _ = target.send("POST", "/v1/chat/completions", _chat(),
                                 {**AUTH, "Origin": "https://evil.example"})
    assert assert_clear_error("", status, raw)["code"] == "origin_not_allowed"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions",
                                  "/v1/responses", "/v1/messages",
                                  "/v1/messages/count_tokens", "/v1/embeddings",
                                  "/tokenize", "/detokenize", "/v1/models",
                                  "/v1/loadout/status", "/metrics"])
def test_every_route_wants_the_key(target: Target, path: str) -> None:
    method = "GET" if path in ("/v1/models", "/v1/loadout/status", "/metrics") else "POST"
    for headers in ({"Content-Type": "application/json"},
                    {"Content-Type": "application/json", "Authorization": "Bearer nope"},
                    {"Content-Type": "application/json", "X-Api-Key": KEY[:-1]},
                    {"Content-Type": "application/json", "Authorization": f"Basic {KEY}"}):
        status, raw, _ = target.send(method, path, b"{}" if method == "POST" else b"",
                                     headers)
        assert status == 401 and assert_clear_error(path, status, raw)["type"] in (
            "authentication_error",)


def test_an_error_never_echoes_a_huge_value_whole(target: Target) -> None:
    status, raw, _ = target.send("POST", "/v1/responses", {
        "model": "demo", "input": "hi", "previous_response_id": "r" * 1_000_000})
    assert status == 404 and len(raw) < 4000
    status, raw, _ = target.send("POST", "/detokenize", _raw_int({"tokens": ["@BIG@"]}))
    assert_clear_error("/detokenize", status, raw)
    assert len(raw) < 400


@pytest.mark.parametrize(("text", "param"), [
    ({"format": {"type": "bogus"}}, "text.format.type"),
    ({"format": {"type": "json_schema", "name": "x", "schema": [1]}}, "text.format.schema"),
])
def test_a_bad_text_format_names_the_responses_field(target: Target, text: Any,
                                                     param: str) -> None:
    """Were named by the chat field they are translated to (``response_format...``)."""
    status, raw, _ = target.send("POST", "/v1/responses",
                                 {"model": "demo", "input": "hi", "text": text})
    assert assert_clear_error("/v1/responses", status, raw)["param"] == param


def test_an_unexpected_error_on_the_messages_route_has_anthropic_shape() -> None:
    """The app's handler of unexpected errors sits outside AnthropicErrors: a bug there
    answered Anthropic clients in OpenAI's shape."""
    from engine.server.messages_api import AnthropicErrors

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a bug at /secret/path")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "path": "/v1/messages", "method": "POST", "headers": []}
    asyncio.run(AnthropicErrors(broken)(scope, receive, send))
    assert sent[0]["status"] == 500
    doc = json.loads(sent[1]["body"])
    assert doc["type"] == "error" and doc["error"]["type"] == "api_error"
    assert "/secret" not in doc["error"]["message"]


def test_a_router_names_what_is_wrong_with_the_model_field(tmp_path: Path) -> None:
    """With ``--models DIR`` a ``model`` that was not a string was "required"."""
    from tests.helpers.gguf_factory import Shape, write_llama

    shape = Shape(n_layers=2, n_embd=128, n_head=2, n_head_kv=2, head_dim=64, n_ff=256,
                  n_vocab=512)
    folder = tmp_path / "models"
    folder.mkdir()
    write_llama(folder / "alpha.gguf", shape)
    write_llama(folder / "beta.gguf", shape, seed=1)
    proc = ServerProcess("--models", str(folder), "--ram-budget", "0.04", "--ctx", "256",
                         "--parallel", "1", "--threads", "1", "--api-key", KEY,
                         home=tmp_path).start()
    try:
        router = Target.__new__(Target)
        router.proc, router.address = proc, (urlsplit(proc.url).hostname or "",
                                             urlsplit(proc.url).port or 0)
        # a malformed request never loads the model it names (it was loaded, then refused)
        for bad in ({"temperature": "hot"}, {"grammar": "root ::= [z-a]"},
                    {"messages": [{"role": "user", "content": [1]}]}):
            code, raw, _ = router.send("POST", "/v1/chat/completions",
                                       _chat(model="beta", **bad))
            assert_clear_error("", code, raw)
        code, raw, _ = router.send("GET", "/v1/models")
        assert {m["id"]: m["state"] for m in json.loads(raw)["data"]}["beta"] == "on_disk"
        assert "loaded beta" not in proc.stderr_path.read_text()
        code, raw, _ = router.send("GET", "/v1/loadout/status")
        assert code == 200 and str(folder) not in raw.decode() and b"model_path" not in raw
        for model, status, param in ((["alpha"], 400, "model"), ({"a": 1}, 400, "model"),
                                     ("x" * 100_000, 404, "model")):
            code, raw, _ = router.send("POST", "/v1/chat/completions", _chat(model=model))
            error = assert_clear_error("", code, raw)
            assert code == status and error["param"] == param and len(raw) < 600, raw[:200]
        code, raw, _ = router.send("POST", "/v1/chat/completions", _chat(
            model="alpha", logit_bias={str(t): -100 for t in range(512)}))
        assert "every token" in assert_clear_error("", code, raw)["message"]
        code, raw, _ = router.send("POST", "/v1/chat/completions", _chat(
            model="alpha", grammar="root ::= <[600]>"))
        assert "vocabulary" in assert_clear_error("", code, raw)["message"]
        assert router.send("POST", "/v1/chat/completions", _chat(model="alpha"))[0] == 200
    finally:
        proc.stop()


def test_the_grammar_checker_refuses_a_grammar_that_leaves_no_token() -> None:
    """It took "no token allowed" for a complete grammar (a complete one still allows
    end-of-generation), and passed grammars that kill the engine."""
    from engine.demo import demo_model_path
    from engine.server.grammar_probe import GrammarProbe

    probe = GrammarProbe(str(demo_model_path()))
    try:
        probe.check('root ::= "ok"')
        for grammar in ('root ::= "a" "\\x00"', "root ::= [\\x00]", 'root ::= "a" <[2]>'):
            with pytest.raises(ValueError, match=r"no token|end-of-generation"):
                probe.check(grammar)
        probe.check('root ::= "a" | "b"')
    finally:
        probe.close()


# ------------------------------------------------------------------ the fuzzer

def test_generated_hostile_requests_never_crash_or_leak(target: Target) -> None:
    """A seeded stream of hostile requests over every route: 2xx or a clear 4xx each."""
    seen: Counter[str] = Counter()
    started = time.monotonic()
    for i, attack in enumerate(requests(FUZZ_SEED, FUZZ_REQUESTS)):
        status, raw, headers = target.send(attack.method, attack.path, attack.body)
        seen[f"{status // 100}xx"] += 1
        where = f"#{i} {attack.path} {attack.note}"
        assert status < 500, f"{where}: {raw[:300]!r}"
        if status >= 400:
            assert_clear_error(attack.path, status, raw)
        elif headers.get("content-type", "").startswith("application/json"):
            json.loads(raw)
        else:  # a stream
            assert b"internal error" not in raw, where
        if i % 200 == 199:
            target.assert_healthy()
    target.assert_healthy()
    took = time.monotonic() - started
    print(f"\nattack: {FUZZ_REQUESTS} requests in {took:.1f} s: {dict(sorted(seen.items()))}")
    assert seen["4xx"] > FUZZ_REQUESTS // 2 and seen["2xx"] > 0
