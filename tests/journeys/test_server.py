"""Journey 3: serve the loaded model to a client outside the app, then to the network
with a key, then stop serving."""

from __future__ import annotations

import socket
from collections.abc import Callable

import openai
import pytest

from tests.journeys.harness import QUESTION, App, engine_status

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def _served_url(app: App) -> str:
    text = app.text("serverLocalUrl")
    return text.split(": ", 1)[1] if text.startswith("On this computer: ") else ""


def _ask(url: str, key: str) -> str:
    client = openai.OpenAI(base_url=url, api_key=key, timeout=120, max_retries=0)
    model = client.models.list().data[0].id
    done = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], max_tokens=16,
        temperature=0)
    return done.choices[0].message.content or ""


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_server_switch_serves_an_openai_client_then_the_network_with_a_key_then_stops(
        start_app: Callable[..., App]) -> None:
    app = start_app()
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the model to load", 180)
    app.click_item("Pages", "Server")
    app.wait_control("Serve the loaded model")
    app.screenshot("server-page")
    app.click("Serve the loaded model")
    url = app.wait_for(lambda: _served_url(app), "the served address", 30)
    app.screenshot("serving-on-this-computer")
    assert "Paris" in _ask(url, "no-key-needed")

    app.click("Allow other devices on my network")
    app.wait_for(lambda: engine_status(app).startswith("Engine: loading")
                 or _served_url(app) != url, "the engine to restart", 60)
    app.wait_for(lambda: engine_status(app) == "Engine: ready" and _served_url(app),
                 "the engine listening on the network", 180)
    lan_url = _served_url(app)
    key = app.text("API key")
    assert key.startswith("sk-loadout-")
    app.screenshot("serving-to-the-network")
    with pytest.raises(openai.AuthenticationError):
        _ask(lan_url, "wrong-key")
    assert "Paris" in _ask(lan_url, key)
    port = int(lan_url.rsplit(":", 1)[1].split("/")[0])
    assert _port_open(port)

    app.click("Serve the loaded model")  # off
    app.wait_for(lambda: app.text("serverLocalUrl") == "Not serving.", "serving to stop", 60)
    app.wait_for(lambda: not _port_open(port), "the port to close", 60)
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the chat engine back", 180)
    app.screenshot("not-serving")
