"""The chat window on the real engine process (the demo model, loaded once here)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QBuffer, QByteArray
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.app.engine_window import close_window, open_window, wait_until, window_fixture

pytestmark = pytest.mark.slow

QUESTION = "What is the capital of France? Answer briefly."
LONG_ASK = "Write a very long story about a dragon who learns to cook. Use many chapters."


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chat-home")


@pytest.fixture(scope="module")
def window(qapp: QApplication, home: Path, demo_model: Path) -> Iterator[Any]:
    yield from window_fixture(home, demo_model)


def _ask(window: Any, text: str, **sampling: Any) -> Any:
    chat = window.chat
    chat.temperature.setValue(sampling.get("temperature", 0.0))
    chat.max_tokens.setValue(sampling.get("max_tokens", 48))
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    try:
        chat.input.setPlainText(text)
        chat.send_button.click()
        wait_until(lambda: results, 120, "the answer")
    finally:
        chat.sig_answer_finished.disconnect(results.append)
    return results[0]


def test_the_plan_page_loaded_the_engine_following_its_progress(window: Any) -> None:
    seen = window.load_seen
    assert seen["states"][:2] == ["loading", "ready"]
    assert seen["progress"][0] == 0.0 and seen["progress"][-1] == 1.0
    assert seen["progress"] == sorted(seen["progress"])
    assert not window.load_progress.isVisible() and window.load_progress.value() == 100
    assert window.plan.unload_button.isVisible()
    assert window.plan.load_button.text() == "Load again"
    # the engine carries out the plan shown: its context and slots
    doc = window.plan.last_plan.to_json()
    spec = window.engine.spec
    assert spec.n_seq_max == doc["parallel"] == 2
    assert spec.n_ctx == doc["context"] * doc["parallel"]


def test_answer_contains_paris_and_footer_shows_the_engines_four_speeds(window: Any) -> None:
    window.show_page("chat")
    window.chat.new_conversation()
    result = _ask(window, QUESTION)
    assert window.chat.last_error == ""
    assert "Paris" in result.text
    assert "Paris" in window.chat.transcript_text()
    timings = result.timings
    assert timings["generated_tokens"] > 1 and timings["decode_tps"] > 0
    footer = window.chat.footer.text()
    for name in ("TTFT", "prefill", "decode", "end-to-end"):
        assert name in footer
    # the figures shown are the engine's, not the app's own
    from app.formatting import fmt_tps

    assert f"decode {fmt_tps(timings['decode_tps'])} t/s" in footer
    assert f"end-to-end {fmt_tps(timings['e2e_tps'])} t/s" in footer
    assert f"decode {fmt_tps(timings['decode_tps'])} t/s" in window.chat.transcript_text()
    assert window.status_decode.text() == \
        f"Decode: {fmt_tps(timings['decode_tps'])} t/s (last answer)"
    # the live chart ends on the same figure (not on its last sample during the answer)
    assert window.chat.chart.values()[-1] == pytest.approx(timings["decode_tps"])
    assert footer.startswith("Last answer: TTFT ")
    assert window.status_engine.text() == "Engine: ready"
    # saved with its figures
    stored = window.chat.store.messages(window.chat.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].content == result.text and stored[1].timings == timings


def test_stop_mid_answer_keeps_what_was_shown_and_frees_the_slot(window: Any) -> None:
    chat = window.chat
    chat.new_conversation()
    chat.temperature.setValue(0.8)
    chat.max_tokens.setValue(2000)
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    chat.input.setPlainText(LONG_ASK)
    chat.send_button.click()
    assert chat.stop_button.isEnabled() and not chat.send_button.isEnabled()
    wait_until(lambda: len(chat.messages[-1].content) > 20 or results, 120, "text")
    assert not results, "the answer ended before it could be stopped"
    chat.stop_button.click()
    wait_until(lambda: results, 30, "the stop")
    chat.sig_answer_finished.disconnect(results.append)
    result = results[0]
    assert result.finish_reason == "cancelled"
    assert result.text and len(result.text) < 2000 * 3
    stored = chat.store.messages(chat.conversation_id)[-1]
    assert stored.finish_reason == "cancelled" and stored.content == result.text
    assert "Stopped." in chat.transcript_text()
    assert chat.send_button.isEnabled()
    # the engine cancelled it too: no slot keeps generating
    from app.engine_client import get_json

    def idle() -> bool:
        _, doc = get_json(window.engine.endpoint, "/v1/loadout/status")
        return doc["engine"]["slots_active"] == 0

    wait_until(idle, 10, "the slot to be freed")


def _slots(status: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list(((status or {}).get("engine") or {}).get("slots") or ())


def test_live_figures_are_the_engines_own_and_say_which(window: Any) -> None:
    """With a second client's answer in the other slot, the chat chart and the status bar
    show this answer's figure and the Server chart the engine's all-requests figure:
    neither a mean nor a sum of the slots, nor the other answer's."""
    import threading

    from app.engine_client import ChatStream
    from app.formatting import fmt_tps

    chat, poller = window.chat, window.engine.poller
    chat.new_conversation()
    chat.temperature.setValue(0.8)
    chat.max_tokens.setValue(2000)
    other = ChatStream(window.engine.endpoint, {
        "messages": [{"role": "user", "content": LONG_ASK}], "max_tokens": 2000,
        "temperature": 1.0, "loop_guard": "off"})
    reader = threading.Thread(target=lambda: list(other.deltas()), daemon=True)
    reader.start()
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    chat.input.setPlainText(LONG_ASK)
    chat.send_button.click()
    try:
        def both_decode() -> bool:
            slots = _slots(poller.last_status)
            return not results and chat.streamer.request_id is not None and \
                sum(s.get("decode_tps") is not None for s in slots) == 2 and \
                any(s["request_id"] == chat.streamer.request_id for s in slots)

        wait_until(both_decode, 120, "both answers decoding")
        status = poller.last_status
        assert status is not None
        slots = _slots(status)
        mine = next(s for s in slots if s["request_id"] == chat.streamer.request_id)
        theirs = next(s for s in slots if s is not mine)
        assert theirs["request_id"] is not None and theirs["request_id"] != mine["request_id"]
        figures = [s["decode_tps"] for s in slots]
        everyone = status["engine"]["decode_tps_all_requests"]
        assert chat.chart.values()[-1] == mine["decode_tps"] != sum(figures) / 2
        assert window.status_decode.text() == \
            f"Decode: {fmt_tps(mine['decode_tps'])} t/s (last answer)"
        assert window.server.throughput.values()[-1] == everyone != sum(figures)
        assert chat.chart.caption == "decode t/s, this answer"
        assert window.server.throughput.caption == "decode t/s, all requests"
    finally:
        chat.stop_button.click()
        other.cancel()
        wait_until(lambda: results, 30, "the stop")
        chat.sig_answer_finished.disconnect(results.append)
        reader.join(30)
    # stopped, the answer has no final figures: the bar keeps the last one the engine gave
    assert window.status_decode.text() == \
        f"Decode: {fmt_tps(chat.chart.values()[-1])} t/s (last answer)"


def test_regenerate_and_edit_and_resend(window: Any) -> None:
    chat = window.chat
    chat.new_conversation()
    first = _ask(window, "Name one colour.", max_tokens=8)
    conv = chat.conversation_id
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    chat.regenerate_button.click()
    wait_until(lambda: results, 120, "the regenerated answer")
    chat.sig_answer_finished.disconnect(results.append)
    roles = [m.role for m in chat.store.messages(conv)]
    assert roles == ["user", "assistant"]  # replaced, not appended
    assert chat.store.messages(conv)[1].content == results[0].text
    assert first.text  # greedy: same question, same answer
    assert results[0].text == first.text
    chat.edit_button.click()
    assert chat.input.toPlainText() == "Name one colour."
    assert chat.store.messages(conv) == []
    _ask(window, QUESTION)
    assert chat.store.messages(conv)[0].content == QUESTION


def test_system_prompt_and_sampling_are_kept_per_conversation(window: Any) -> None:
    chat = window.chat
    chat.new_conversation()
    chat.settings_box.setChecked(True)
    chat.system_prompt.setPlainText("You answer in one word.")
    _ask(window, QUESTION, temperature=0.3, max_tokens=16)
    conv = chat.store.conversation(chat.conversation_id)
    assert conv is not None and conv.system_prompt == "You answer in one word."
    assert conv.sampling["temperature"] == pytest.approx(0.3)
    assert conv.sampling["max_tokens"] == 16
    other = chat.conversation_id
    chat.new_conversation()
    assert chat.system_prompt.toPlainText() == ""
    chat.open_conversation(other)
    assert chat.system_prompt.toPlainText() == "You answer in one word."
    assert chat.max_tokens.value() == 16


def test_conversations_are_there_after_restarting_the_app(
        window: Any, home: Path, demo_model: Path) -> None:
    titles = [c.title for c in window.chat.store.conversations()]
    assert QUESTION in titles
    again = open_window(home, demo_model, load=False)
    try:
        shown = [again.chat.conversation_list.item(i).text()
                 for i in range(again.chat.conversation_list.count())]
        assert shown == titles
        conv = next(c for c in again.chat.store.conversations() if c.title == QUESTION)
        again.chat.open_conversation(conv.id)
        assert "Paris" in again.chat.transcript_text()
        assert "decode" in again.chat.transcript_text()  # the footer was saved too
    finally:
        close_window(again)
        os.environ["LOADOUT_HOME"] = str(home)


def start_long_answer(chat: Any) -> list[Any]:
    """Ask a long sampled answer in a new conversation and wait for its first text; the
    list collects the answer's end (``sig_answer_finished``), which the caller disconnects."""
    chat.new_conversation()
    chat.max_tokens.setValue(2000)
    chat.temperature.setValue(0.8)
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    chat.input.setPlainText(LONG_ASK)
    chat.send_button.click()
    wait_until(lambda: len(chat.messages[-1].content) > 10 or results, 120, "text")
    return results


def test_engine_killed_mid_answer_shows_why_and_a_safer_retry_loads_again(
        window: Any) -> None:
    chat = window.chat
    results = start_long_answer(chat)
    shown = chat.messages[-1].content
    pid = window.engine.pid()
    assert pid
    os.kill(pid, signal.SIGKILL)  # what a native crash or the OOM killer does
    wait_until(lambda: window.engine.state == "crashed" and results, 30, "the crash")
    chat.sig_answer_finished.disconnect(results.append)
    assert window.banner.isVisible()
    assert "exit code" in window.banner.message.text()
    assert window.banner.log_view.toPlainText().strip()  # the engine's last log lines
    assert window.status_engine.text() == "Engine: stopped unexpectedly"
    assert chat.last_error and chat.send_button.isEnabled()  # asking loads again
    # what was shown before the crash was saved
    stored = chat.store.messages(chat.conversation_id)[-1]
    assert stored.content.startswith(shown)
    old_spec = window.engine.spec
    window.banner.retry_button.click()
    assert not window.banner.isVisible()
    wait_until(lambda: window.engine.state == "loading", 60, "the safer plan")
    wait_until(lambda: window.engine.state in ("ready", "crashed"), what="the retry")
    assert window.engine.state == "ready", window.engine.log_text()
    new_spec = window.engine.spec
    assert new_spec.n_batch < old_spec.n_batch and new_spec.n_ubatch < old_spec.n_ubatch
    assert new_spec.n_gpu_layers >= 0 and (new_spec.n_gpu_layers < old_spec.n_gpu_layers
                                           or old_spec.n_gpu_layers <= 0)
    # planned again by the planner, with more memory kept free
    before, after = (p.to_json() for p in (window.plan.last_plan, window.control.retry_plan))
    reserve = {d["id"]: d["reserve_bytes"] for d in before["devices"]}
    assert any(d["reserve_bytes"] > reserve[d["id"]] for d in after["devices"])
    assert after["fits"] and new_spec.n_ctx == old_spec.n_ctx
    result = _ask(window, QUESTION)
    assert "Paris" in result.text


def test_screenshot_of_a_conversation_with_code_and_speeds(window: Any, tmp_path: Path
                                                          ) -> None:
    window.resize(1280, 800)
    window.show_page("chat")
    chat = window.chat
    chat.new_conversation()
    _ask(window, QUESTION)
    result = _ask(window, "Write a Python function that adds two numbers, in a code block.",
                  max_tokens=120)
    assert result.text
    QTest.qWait(50)
    out = Path(os.environ.get("LOADOUT_SCREENSHOTS_DIR", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    image = window.grab().toImage()
    path = out / "chat.png"
    assert image.save(str(path)) and path.stat().st_size > 10_000


def test_switching_conversation_mid_answer_stops_it_and_keeps_each_apart(window: Any
                                                                          ) -> None:
    chat = window.chat
    chat.new_conversation()
    _ask(window, QUESTION)
    first = chat.conversation_id
    first_messages = chat.store.messages(first)
    chat.new_conversation()
    chat.max_tokens.setValue(2000)
    chat.temperature.setValue(0.8)
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    chat.input.setPlainText(LONG_ASK)
    chat.send_button.click()
    second = chat.conversation_id
    wait_until(lambda: len(chat.messages[-1].content) > 10 or results, 120, "text")
    chat.open_conversation(first)  # stops the answer streaming into the second one
    wait_until(lambda: results, 30, "the stop")
    chat.sig_answer_finished.disconnect(results.append)
    assert chat.conversation_id == first
    assert chat.messages == first_messages and "Paris" in chat.transcript_text()
    stored = chat.store.messages(second)
    assert stored[-1].finish_reason == "cancelled" and stored[-1].content


def test_a_picture_for_a_model_without_a_projector_is_not_sent_and_says_why(
        window: Any) -> None:
    from app.chat_images import ImageFile

    chat = window.chat
    window.show_page("chat")
    chat.new_conversation()
    assert window.engine.state == "ready" and not window.engine.spec.mmproj_path
    png = QImage(8, 8, QImage.Format.Format_RGB32)
    png.fill(0xFF0000)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QBuffer.OpenModeFlag.WriteOnly)
    png.save(buffer, "PNG")
    chat.attachments.add([ImageFile("image/png", bytes(data.data()))])
    chat.input.setPlainText("What colour is this?")
    assert not chat.send()
    assert chat.input.toPlainText() == "What colour is this?"  # nothing lost
    assert len(chat.attachments.images) == 1 and chat.conversation_id is None
    text = chat.transcript_text()
    assert "does not read images, so the question was not sent" in text
    assert "Remove the pictures" in text
    chat.attachments.clear()  # without the picture it goes
    assert chat.send()
    wait_until(lambda: not chat.streamer.busy, 120, "the answer")
    assert "does not read images" not in chat.transcript_text()


def test_unloading_mid_answer_ends_it_as_stopped_not_as_failed(window: Any) -> None:
    # (last here: it unloads the module's engine)
    chat = window.chat
    window.show_page("chat")
    results = start_long_answer(chat)
    assert not results
    window.plan.unload_button.click()
    wait_until(lambda: results, 60, "the answer to end")
    chat.sig_answer_finished.disconnect(results.append)
    assert results[0].finish_reason == "cancelled" and chat.last_error == ""
    text = chat.transcript_text()
    assert "Stopped." in text and "Cut off" not in text
    wait_until(lambda: window.engine.state == "unloaded", 60, "the unload")
