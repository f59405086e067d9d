"""The hostile corpus against a running ``loadout serve demo``: every case gets its
expected status (a 4xx with the OpenAI error shape, or a bounded correct answer), and the
server is healthy after each one. Slow and idle clients lose their connection."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.hostile_cases import CASES, JSON, Case, chat
from tests.engine.server_fixtures import ServerProcess, address_of, validate

pytestmark = pytest.mark.slow

TIMEOUT_S = 1.0  # the header and body timeouts of the server under test
MAX_CONNECTIONS = 6


@pytest.fixture(name="hostile", scope="module")
def hostile_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home: Path = tmp_path_factory.mktemp("hostile-home")
    proc = ServerProcess("demo", "--parallel", "2", "--ctx", "1024", "--threads", "1",
                         "--header-timeout", str(TIMEOUT_S), "--body-timeout", str(TIMEOUT_S),
                         "--max-connections", str(MAX_CONNECTIONS), home=home).start()
    try:
        yield proc
    finally:
        proc.stop()


def send(server: ServerProcess, case: Case) -> tuple[int, Any]:
    host, port = address_of(server)
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.request(case.method, case.path, body=case.payload() or None,
                     headers=case.headers)
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, raw


def assert_healthy(server: ServerProcess) -> None:
    assert server.proc is not None and server.proc.poll() is None, "the server died"
    assert server.get_json("/health") == {"status": "ok"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_request(hostile: ServerProcess, case: Case) -> None:
    status, doc = send(hostile, case)
    assert status == case.status, doc
    if status >= 400:
        validate(doc, "ErrorResponse")
        message = doc["error"]["message"]
        assert "Traceback" not in message and "/home" not in message
    else:
        assert doc["choices"][0]["finish_reason"] in ("stop", "length")
    assert_healthy(hostile)


def test_corpus_is_large_and_covers_every_route() -> None:
    assert len(CASES) >= 40
    assert {c.path for c in CASES} >= {"/v1/chat/completions", "/v1/completions",
                                       "/v1/models", "/v1/loadout/status"}


def test_over_budget_errors_name_the_limit_and_the_field(hostile: ServerProcess) -> None:
    case = next(c for c in CASES if c.name == "schema_maxLength_1e6_crashed_the_server")
    _, doc = send(hostile, case)
    assert doc["error"]["param"] == "response_format.json_schema.schema.maxLength"
    assert "max_schema_bound" in doc["error"]["message"]


def test_a_client_that_never_sends_headers_loses_its_connection(
        hostile: ServerProcess) -> None:
    with socket.create_connection(address_of(hostile), timeout=10) as idle, \
            socket.create_connection(address_of(hostile), timeout=10) as slow:
        slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        t0 = time.monotonic()
        assert idle.recv(1024) == b""  # closed by the server, nothing answered
        assert slow.recv(1024) == b""
        assert time.monotonic() - t0 < TIMEOUT_S + 5
    assert_healthy(hostile)


def test_a_body_that_never_arrives_is_a_408(hostile: ServerProcess) -> None:
    with socket.create_connection(address_of(hostile), timeout=10) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    assert_healthy(hostile)


def test_a_missing_host_header_is_refused(hostile: ServerProcess) -> None:
    with socket.create_connection(address_of(hostile), timeout=10) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.0\r\n\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 403"), answer[:100]


def test_localhost_and_loopback_names_are_served(hostile: ServerProcess) -> None:
    _, port = address_of(hostile)
    for name in (f"localhost:{port}", f"127.0.0.1:{port}", "LOCALHOST"):
        status, doc = send(hostile, Case("ok", None, 200, "/v1/models", "GET",
                                         {"Host": name}))
        assert status == 200, (name, doc)
    status, _ = send(hostile, Case("ok", chat(max_tokens=1), 200,
                                   headers={**JSON, "Content-Type":
                                            "application/json; charset=utf-8"}))
    assert status == 200


def test_idle_clients_never_count_against_the_requests_served(
        hostile: ServerProcess) -> None:
    """MAX_CONNECTIONS idle sockets answered every other client 503 until the header
    timeout: idle and half-sent connections now cost a socket, not a request's place."""
    models = Case("models", None, 200, "/v1/models", "GET", {})
    idle = [socket.create_connection(address_of(hostile), timeout=10)
            for _ in range(MAX_CONNECTIONS * 4)]
    try:
        for sock in idle[::2]:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.2)
        status, doc = send(hostile, models)
        assert status == 200, doc
        for sock in idle:  # ... and each is closed by the header timeout
            assert sock.recv(1024) == b""
    finally:
        for sock in idle:
            sock.close()
    assert_healthy(hostile)


def test_slow_grammars_are_refused_by_the_checker_not_run(hostile: ServerProcess) -> None:
    for name in ("gbnf_22_bytes_seconds_per_token", "schema_pattern_of_optional_repetitions"):
        case = next(c for c in CASES if c.name == name)
        started = time.monotonic()
        _, doc = send(hostile, case)
        assert "grammar_probe_s" in doc["error"]["message"], doc
        assert time.monotonic() - started < 10
    status, doc = send(hostile, next(c for c in CASES if c.name == "gbnf_syntax_error"))
    assert status == 400 and doc["error"]["code"] == "invalid_grammar"
