"""No single client stalls or starves ``loadout serve demo``, over real sockets on loopback:
heavy bodies are checked off the event loop (``/health`` keeps answering), idle and
half-sent connections do not count against the requests being served, a crowd of them
makes room for new clients, and the desktop app's own key is served when the server is
full. Also: the key comes from a file (not the command line) and the status document
names the model, never its path. Every test here ends by itself (bounded counts)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.demo import demo_model_path
from tests.engine.server_fixtures import ServerProcess, address_of

pytestmark = pytest.mark.slow

KEY = "sk-starve-test-key"
APP_KEY = "app-private-key"
MAX_SERVED, MAX_OPEN = 2, 96
IDLE, HALF_HEADERS, HALF_BODIES = 150, 40, 30  # 220 sockets, past MAX_OPEN on purpose


@pytest.fixture(name="srv", scope="module")
def srv_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("starve-home")
    key_file = home / "key.txt"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    proc = ServerProcess("demo", "--parallel", "1", "--ctx", "1024", "--threads", "1",
                         "--max-connections", str(MAX_SERVED),
                         "--max-open-connections", str(MAX_OPEN),
                         "--header-timeout", "3", "--body-timeout", "3",
                         "--api-key-file", str(key_file), home=home,
                         env={"LOADOUT_APP_KEY": APP_KEY, "LOADOUT_APP_PUBLIC": "1"}).start()
    try:
        yield proc
    finally:
        proc.stop()


def _request(srv: ServerProcess, method: str, path: str, body: Any = None,
             key: str | None = KEY, timeout: float = 60) -> tuple[int, bytes, float]:
    """(status, body, seconds) of one request on a fresh connection."""
    conn = http.client.HTTPConnection(*address_of(srv), timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
    started = time.monotonic()
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, raw, time.monotonic() - started
    finally:
        conn.close()


def _chat(max_tokens: int = 2, stream: bool = False) -> dict[str, Any]:
    # the demo's end tokens banned: an answer as long as max_tokens
    return {"model": "demo", "max_tokens": max_tokens, "temperature": 0, "stream": stream,
            "logit_bias": {"0": -100, "2": -100},
            "messages": [{"role": "user", "content": "Count from one to one hundred."}]}


def test_the_key_comes_from_a_file_and_never_shows_in_the_process_list(
        srv: ServerProcess) -> None:
    cmdline = Path(f"/proc/{srv.pid}/cmdline").read_bytes()
    assert KEY.encode() not in cmdline and APP_KEY.encode() not in cmdline
    assert _request(srv, "GET", "/v1/models", key=None)[0] == 401
    assert _request(srv, "GET", "/v1/models", key="wrong")[0] == 401
    assert _request(srv, "GET", "/v1/models")[0] == 200


def test_the_status_names_the_model_never_its_path(srv: ServerProcess) -> None:
    """``engine.model_path`` went to every client holding the key."""
    status, raw, _ = _request(srv, "GET", "/v1/loadout/status")
    assert status == 200
    text = raw.decode()
    doc = json.loads(text)
    assert doc["model"] == "demo" or doc["engine"]["model"]
    assert "model_path" not in text
    for folder in (demo_model_path().resolve().parent, Path.home(), srv.home):
        assert str(folder) not in text, folder


def test_health_answers_within_a_second_while_heavy_bodies_are_checked(
        srv: ServerProcess) -> None:
    """One 8 MB body of 3.9 million numbers held /health for 7.6-13.7 s (the Unicode
    walk ran on the event loop)."""
    heavy = b'{"model": "demo", "messages": [], "x": [' + b"1," * 3_900_000 + b"1]}"
    answers: list[tuple[int, bytes, float]] = []

    def send() -> None:
        answers.append(_request(srv, "POST", "/v1/chat/completions", heavy, timeout=120))

    senders = [threading.Thread(target=send) for _ in range(3)]
    for t in senders:
        t.start()
    waits = []
    while any(t.is_alive() for t in senders):
        status, _, took = _request(srv, "GET", "/health", key=None, timeout=30)
        assert status == 200
        waits.append(took)
        time.sleep(0.05)
    for t in senders:
        t.join()
    assert len(answers) == 3 and waits
    for status, raw, _ in answers:
        error = json.loads(raw)["error"]
        assert status == 400 and error["code"] == "too_many_elements"
        assert "max_json_elements" in error["message"] and "grammar" not in error["message"]
    assert max(waits) < 1.0, waits


def test_hundreds_of_idle_and_half_sent_sockets_leave_the_server_answering(
        srv: ServerProcess) -> None:
    """127 sockets whose headers never finished locked every client out (503) until the
    header timeout; reopened every 10 s, they kept the server unusable."""
    address = address_of(srv)
    crowd: list[socket.socket] = []
    app = http.client.HTTPConnection(*address, timeout=30)  # the app's keep-alive one
    app.request("GET", "/v1/models", headers={"Authorization": f"Bearer {APP_KEY}"})
    assert app.getresponse().read() and app.sock is not None
    try:
        for _ in range(IDLE):
            crowd.append(socket.create_connection(address, timeout=10))
        for _ in range(HALF_HEADERS):
            s = socket.create_connection(address, timeout=10)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            crowd.append(s)
        for _ in range(HALF_BODIES):
            s = socket.create_connection(address, timeout=10)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nAuthorization: Bearer " +
                      KEY.encode() + b"\r\nContent-Length: 500\r\n\r\n{\"model\"")
            crowd.append(s)
        time.sleep(0.3)
        status, _, took = _request(srv, "GET", "/health", key=None)
        assert status == 200 and took < 1.0
        status, raw, _ = _request(srv, "POST", "/v1/chat/completions", _chat())
        assert status == 200, raw[:300]
        # the first idle sockets were closed to make room (the cap on open sockets)
        first = crowd[0]
        first.settimeout(5)
        assert first.recv(100) == b""
        # ... but never the app's own connection, older than all of them
        app.request("GET", "/v1/models", headers={"Authorization": f"Bearer {APP_KEY}"})
        assert app.getresponse().status == 200
    finally:
        app.close()
        for s in crowd:
            s.close()


def test_the_apps_key_is_served_when_the_server_is_full(srv: ServerProcess) -> None:
    """Anonymous clients filling the server locked out the desktop app's own chat."""
    streams: list[tuple[int, bytes, float]] = []

    def stream() -> None:
        streams.append(_request(srv, "POST", "/v1/chat/completions",
                                _chat(max_tokens=900, stream=True)))

    busy = [threading.Thread(target=stream) for _ in range(MAX_SERVED)]
    for t in busy:  # one after the other: a probe of ours never races them for a place
        t.start()
        time.sleep(0.3)
    try:
        end = time.monotonic() + 30
        refused = None
        while refused is None and time.monotonic() < end and any(t.is_alive() for t in busy):
            status, raw, _ = _request(srv, "GET", "/v1/models")
            if status == 503:
                refused = json.loads(raw)["error"]["code"]
            time.sleep(0.05)
        assert refused == "too_many_connections", ("the two streams never filled the server",
                                                   [(s, r[:200]) for s, r, _ in streams])
        assert all(t.is_alive() for t in busy)  # still full
        status, raw, _ = _request(srv, "GET", "/v1/models", key=APP_KEY)
        assert status == 200, raw[:200]
        assert _request(srv, "GET", "/health", key=None)[0] == 200
    finally:
        for t in busy:
            t.join(timeout=120)
    assert [s for s, _, _ in streams] == [200] * MAX_SERVED
