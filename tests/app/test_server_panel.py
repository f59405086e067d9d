"""The server panel on the real engine process, used by the real ``openai`` client."""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.engine_launch import Binding, KeyRequiredError
from tests.app.engine_window import process_alive, wait_until, window_fixture

pytestmark = pytest.mark.slow

QUESTION = "What is the capital of France? Answer briefly."


@pytest.fixture(scope="module")
def window(qapp: QApplication, tmp_path_factory: pytest.TempPathFactory,
           demo_model: Path) -> Iterator[Any]:
    yield from window_fixture(tmp_path_factory.mktemp("server-home"), demo_model)


def _openai_answer(base_url: str, key: str) -> Any:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key=key or "none", max_retries=0, timeout=120)
    model = client.models.list().data[0].id
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], temperature=0,
        max_tokens=24)


def _models_status(window: Any, key: str | None) -> int:
    """``GET /v1/models`` of the window's engine with ``key``: the HTTP status."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(window.engine.endpoint.url + "/v1/models",
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_until_served_the_engine_answers_only_the_app_with_its_private_key(
        window: Any) -> None:
    from openai import AuthenticationError

    key = window.engine.app_key
    assert key.startswith("sk-loadout-") and window.engine.endpoint.api_key == key
    cmdline = Path(f"/proc/{window.engine.pid()}/cmdline")
    if cmdline.exists():
        assert key.encode() not in cmdline.read_bytes()
    assert _models_status(window, None) == 401
    assert _models_status(window, "sk-loadout-wrong") == 401
    assert _models_status(window, key) == 200
    with pytest.raises(AuthenticationError):
        _openai_answer(window.engine.endpoint.base_url, "")
    wait_until(lambda: window.server.memory.rowCount() > 0, 20,
               "the status poller's answer, sent with the private key")


def test_serving_on_this_computer_answers_the_openai_client_at_the_shown_url(
        window: Any) -> None:
    page = window.server
    window.show_page("server")
    assert page.base_url() == ""
    pid = window.engine.pid()
    page.serve_switch.setChecked(True)
    assert window.engine.pid() == pid  # already listening on loopback: no restart
    url = page.base_url()
    assert url and url in page.local_url.text()
    assert url in page.snippet_views["Python"].toPlainText()
    assert url in page.snippet_views["curl"].toPlainText()
    assert page.shown_key() == ""
    answer = _openai_answer(url, page.shown_key())
    assert "Paris" in (answer.choices[0].message.content or "")
    assert answer.usage is not None and answer.usage.completion_tokens > 0
    page.serve_switch.setChecked(False)  # closed again, still without a restart
    assert window.engine.pid() == pid and _models_status(window, None) == 401
    assert _models_status(window, window.engine.app_key) == 200
    page.serve_switch.setChecked(True)
    assert _models_status(window, None) == 200


def test_other_devices_only_with_a_key_and_the_client_works_with_the_shown_one(
        window: Any) -> None:
    page = window.server
    page.serve_switch.setChecked(True)
    with pytest.raises(KeyRequiredError):
        Binding(lan=True, port=0, api_key=None)
    pid = window.engine.pid()
    page.lan.setChecked(True)
    key = page.key.text()
    assert key.startswith("sk-loadout-") and len(key) > 40  # generated at once
    wait_until(lambda: window.engine.state == "ready" and window.engine.pid() != pid,
               what="the restart on every interface")
    assert window.engine.binding.lan and window.engine.binding.api_key == key
    assert page.shown_key() == key
    url = page.base_url()
    for name in ("curl", "Python", "JavaScript"):
        assert key in page.snippet_views[name].toPlainText()
    # without the key: refused
    request = urllib.request.Request(url + "/models")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    answer = _openai_answer(url, page.shown_key())
    assert "Paris" in (answer.choices[0].message.content or "")
    # the app itself keeps its private key (never the one it shows)
    assert window.engine.endpoint.api_key == window.engine.app_key != key
    assert _models_status(window, window.engine.app_key) == 200


def test_live_tables_show_slots_memory_and_throughput(window: Any) -> None:
    page = window.server
    wait_until(lambda: page.requests.rowCount() > 0 and page.memory.rowCount() > 0, 20,
               "the live status")
    assert page.requests.rowCount() == 2  # two parallel slots were planned
    assert page.memory.item(0, 0).text()  # the engine's device name
    assert page.throughput.values()


def test_a_chosen_port_restarts_the_engine_there(window: Any) -> None:
    from app.engine_launch import free_port

    page = window.server
    page.serve_switch.setChecked(True)
    port = free_port()
    pid = window.engine.pid()
    page.port.setValue(port)
    page.port.editingFinished.emit()
    wait_until(lambda: window.engine.state == "ready" and window.engine.pid() != pid,
               what="the restart on the chosen port")
    assert page.base_url().endswith(f":{port}/v1")
    assert f":{port}/v1" in page.snippet_views["curl"].toPlainText()
    page.port.setValue(0)
    pid = window.engine.pid()
    page.port.editingFinished.emit()  # "any free port": the one it has will do
    assert window.engine.pid() == pid


def test_turning_other_devices_off_restarts_on_loopback_without_a_key(window: Any) -> None:
    page = window.server
    pid = window.engine.pid()
    page.lan.setChecked(False)
    wait_until(lambda: window.engine.state == "ready" and window.engine.pid() != pid,
               what="the restart on loopback")
    assert not window.engine.binding.lan and window.engine.binding.api_key is None
    assert _models_status(window, None) == 200
    page.serve_switch.setChecked(False)
    assert page.base_url() == ""
    assert page.local_url.text() == "Not serving."
    assert _models_status(window, None) == 401


def test_screenshot_of_the_server_panel_serving_other_devices(window: Any, tmp_path: Path
                                                              ) -> None:
    window.resize(1280, 800)
    window.show_page("server")
    page = window.server
    page.serve_switch.setChecked(True)
    pid = window.engine.pid()
    page.lan.setChecked(True)
    wait_until(lambda: window.engine.state == "ready" and window.engine.pid() != pid,
               what="the restart on every interface")
    page.snippet_tabs.setCurrentIndex(1)
    # a client streams a long answer while the panel is captured
    client = threading.Thread(target=_long_stream, args=(page.base_url(), page.shown_key()))
    client.start()
    try:
        wait_until(lambda: any(v > 0 for v in page.throughput.values()[-1:]) and
                   page.requests.findItems("generating", Qt.MatchFlag.MatchExactly), 60,
                   "an active request in the table")
        QTest.qWait(1500)  # a few more points on the chart
        out = Path(os.environ.get("LOADOUT_SCREENSHOTS_DIR", tmp_path))
        out.mkdir(parents=True, exist_ok=True)
        image = window.grab().toImage()
        path = out / "server.png"
        assert image.save(str(path)) and path.stat().st_size > 10_000
    finally:
        client.join(120)
    assert not client.is_alive()


def _long_stream(base_url: str, key: str) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=120)
    model = client.models.list().data[0].id
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Tell a long story."}],
        max_tokens=160, stream=True)
    for _chunk in stream:
        pass


def test_unloading_from_the_plan_page_ends_the_engine_process(window: Any) -> None:
    pid = window.engine.pid()
    window.plan.unload_button.click()
    wait_until(lambda: window.engine.state == "unloaded", 30, "the unload")
    assert window.engine.pid() is None and not process_alive(pid)
    assert not window.banner.isVisible()  # asked for: not a crash
    assert window.status_engine.text() == "Engine: not loaded"
    assert not window.server.serve_switch.isEnabled()
    assert window.chat.send_button.isEnabled()  # asking loads it again
    assert not window.plan.unload_button.isVisible()
    assert window.plan.load_button.text() == "Load"
