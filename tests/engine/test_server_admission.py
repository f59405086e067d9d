"""Slots, queue and cancellation on a one-slot server bound off loopback.

The server listens on 0.0.0.0 without a key given, so it generates one and shows it once
in its ready line; every request here needs it. One slot and a queue of one make the
queue-full answer and the freeing of a slot by a client that leaves easy to provoke.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.server_fixtures import ROOT, ServerProcess, validate

pytestmark = pytest.mark.slow

PROMPT = "1, 2, 3, 4, 5, 6,"  # greedy decoding counts on for as long as it is let


@pytest.fixture(name="lan", scope="module")
def lan_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("serve-lan")
    proc = ServerProcess("demo", "--host", "0.0.0.0", "--parallel", "1", "--queue-size", "1",
                         "--ctx", "1024", "--threads", "1", home=home).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, "SIGTERM must shut the server down cleanly"


def _auth(server: ServerProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.ready['api_key']}",
            "Content-Type": "application/json"}


def _status(server: ServerProcess) -> dict[str, Any]:
    req = urllib.request.Request(server.url + "/v1/loadout/status", headers=_auth(server))
    with urllib.request.urlopen(req, timeout=30) as resp:
        doc: dict[str, Any] = json.loads(resp.read())
        return doc


def _wait(server: ServerProcess, pred: Any, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = _status(server)
        if pred(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached; status: {status}")
        time.sleep(0.05)


def _slot(status: dict[str, Any]) -> dict[str, Any]:
    slot: dict[str, Any] = status["engine"]["slots"][0]
    return slot


class _Stream:
    """A streaming completion read event by event over its own connection."""

    def __init__(self, server: ServerProcess, max_tokens: int = 900,
                 stream: bool = True) -> None:
        host, port = server.url.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        body = {"model": server.model, "prompt": PROMPT, "max_tokens": max_tokens,
                "temperature": 0, "stream": stream, "loop_guard": "off"}
        self.conn.request("POST", "/v1/completions", json.dumps(body), _auth(server))

    def events(self, n: int) -> list[dict[str, Any]]:
        resp = self.conn.getresponse() if not hasattr(self, "resp") else self.resp
        self.resp = resp
        assert resp.status == 200
        out: list[dict[str, Any]] = []
        while len(out) < n:
            line = resp.fp.readline()
            assert line and not line.startswith(b"data: [DONE]"), "the answer ended early"
            if line.startswith(b"data: {"):
                out.append(json.loads(line[6:]))
        return out

    def close(self) -> None:
        self.conn.close()


def test_generated_key_is_shown_once_and_required(lan: ServerProcess) -> None:
    key = lan.ready["api_key"]
    assert lan.ready["auth"] is True and key.startswith("sk-loadout-")
    req = urllib.request.Request(lan.url + "/v1/models")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=30)
    assert info.value.code == 401
    validate(json.loads(info.value.read()), "ErrorResponse")
    assert lan.get_json("/health") == {"status": "ok"}
    import openai

    client = openai.OpenAI(base_url=lan.base_url, api_key=key, max_retries=0)
    assert [m.id for m in client.models.list()] == [lan.model]


def test_a_client_that_leaves_mid_stream_frees_its_slot_within_a_step(
        lan: ServerProcess) -> None:
    stream = _Stream(lan)
    received = stream.events(5)
    busy = _slot(_status(lan))
    assert busy["state"] in ("prefill", "generate")
    stream.close()
    idle = _wait(lan, lambda s: _slot(s)["state"] == "idle")
    prompt_tokens = len(PROMPT)  # more than its token count
    # the slot keeps prompt + generated tokens as its cache: it stopped right after we left
    assert _slot(idle)["tokens"] <= prompt_tokens + len(received) + 16
    metrics = urllib.request.urlopen(urllib.request.Request(
        lan.url + "/metrics", headers=_auth(lan)), timeout=30).read().decode()
    assert 'loadout_generations_total{reason="cancelled"}' in metrics


def test_a_client_that_leaves_a_non_streaming_request_frees_its_slot(
        lan: ServerProcess) -> None:
    request = _Stream(lan, stream=False)
    _wait(lan, lambda s: _slot(s)["state"] == "generate" and _slot(s)["generated"] > 2)
    request.close()
    idle = _wait(lan, lambda s: _slot(s)["state"] == "idle")
    assert _slot(idle)["tokens"] < 400  # far from the 900 tokens it asked for


def test_a_full_queue_answers_503_with_retry_after_then_recovers(lan: ServerProcess) -> None:
    running = _Stream(lan)
    running.events(1)  # holds the only slot
    waiting = _Stream(lan)  # takes the only place in the queue
    _wait(lan, lambda s: s["engine"]["queue_length"] == 1)
    body = json.dumps({"model": lan.model, "prompt": "hi", "max_tokens": 2}).encode()
    req = urllib.request.Request(lan.url + "/v1/completions", data=body, headers=_auth(lan))
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=30)
    assert info.value.code == 503 and info.value.headers["Retry-After"] == "1"
    doc = json.loads(info.value.read())
    validate(doc, "ErrorResponse")
    assert doc["error"]["code"] == "queue_full"
    running.close()
    assert waiting.events(1)  # admitted once the slot was freed
    waiting.close()
    _wait(lan, lambda s: _slot(s)["state"] == "idle" and s["engine"]["queue_length"] == 0)
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert json.loads(resp.read())["choices"][0]["finish_reason"] in ("stop", "length")


def test_a_model_that_fails_to_load_is_reported_and_the_server_exits(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)
    result = subprocess.run(
        [sys.executable, "-m", "loadout", "serve", str(broken), "--port", "0",
         "--ready-json"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "LOADOUT_HOME": str(tmp_path)})
    assert result.returncode == 1
    event = json.loads(result.stdout.strip().splitlines()[-1])
    assert event["event"] == "error" and event["error"]
    assert "failed to load" in result.stderr
