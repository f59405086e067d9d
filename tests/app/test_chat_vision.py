"""Images in the chat window, on the real engine process: a synthetic vision model and
its projector, planned (the projector on the memory map), loaded, asked about a pasted
and a dropped picture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QUrl
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from tests.app.engine_window import close_window, open_window, wait_until
from tests.helpers.gguf_mmproj import VisionShape, png_bytes, write_vision_pair

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def window(qapp: QApplication, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import os

    model, _projector = write_vision_pair(tmp_path_factory.mktemp("vision-model"))
    previous = os.environ.get("LOADOUT_HOME")
    win = open_window(tmp_path_factory.mktemp("vision-home"), model)
    try:
        yield win
    finally:
        close_window(win)
        if previous is None:
            os.environ.pop("LOADOUT_HOME", None)
        else:
            os.environ["LOADOUT_HOME"] = previous


def _send_and_wait(window: Any) -> Any:
    chat = window.chat
    results: list[Any] = []
    chat.sig_answer_finished.connect(results.append)
    try:
        chat.send_button.click()
        wait_until(lambda: results, 120, "the answer")
    finally:
        chat.sig_answer_finished.disconnect(results.append)
    return results[0]


def test_the_plan_shows_the_projector_on_the_memory_map(window: Any) -> None:
    doc = window.plan.last_plan.to_json()
    assert doc["projector"]["device"] == "host"
    assert doc["projector"]["image_tokens"] == VisionShape().image_tokens
    bars = window.plan.memory_map.bars()
    host = next(b for b in bars if b.device_id == "host")
    segment = next(s for s in host.segments if s.kind == "projector")
    assert segment.nbytes == doc["projector"]["weights_bytes"] + \
        doc["projector"]["compute_bytes"]
    assert window.engine.spec.mmproj_offload is False
    assert "Reads images: 16 tokens each" in window.plan.fit_label.text()


def test_a_pasted_picture_is_asked_about_and_shown_as_a_thumbnail(window: Any) -> None:
    window.show_page("chat")
    chat = window.chat
    chat.new_conversation()
    chat.max_tokens.setValue(4)
    chat.temperature.setValue(0.0)
    mime = QMimeData()
    image = QImage()
    assert image.loadFromData(png_bytes(64, 48, seed=11))
    mime.setImageData(image)
    chat.input.insertFromMimeData(mime)  # what Ctrl+V does with a picture
    assert len(chat.attachments.images) == 1 and chat.input.toPlainText() == ""
    chat.input.setPlainText("What is in this picture?")
    shown = chat.transcript.thumbnails_shown
    result = _send_and_wait(window)
    assert chat.last_error == ""
    assert chat.attachments.images == []
    timings = result.timings
    assert timings["images"] == 1 and timings["image_tokens"] == VisionShape().image_tokens
    assert "encoded in" in chat.footer.text() and "TTFT" in chat.footer.text()
    assert chat.transcript.thumbnails_shown > shown
    question = next(m for m in chat.messages if m.role == "user")
    assert len(question.images) == 1


def test_a_follow_up_about_a_dropped_file_reuses_the_images_tokens(
        window: Any, tmp_path: Path) -> None:
    chat = window.chat
    chat.new_conversation()
    picture = tmp_path / "photo.png"
    picture.write_bytes(png_bytes(40, 40, seed=12))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(picture))])
    assert chat.input.canInsertFromMimeData(mime)
    chat.input.insertFromMimeData(mime)  # what a drop of the file does
    chat.input.setPlainText("Describe it.")
    first = _send_and_wait(window)
    assert first.timings["images"] == 1
    chat.input.setPlainText("And the colours?")
    second = _send_and_wait(window)
    assert second.timings["images"] == 1  # the history still carries the picture
    assert second.timings["cached_tokens"] > VisionShape().image_tokens


def test_a_file_that_is_not_a_picture_is_refused_in_the_strip(window: Any,
                                                              tmp_path: Path) -> None:
    chat = window.chat
    text = tmp_path / "notes.png"
    text.write_text("not an image", encoding="utf-8")
    chat.attachments.add_files([text])
    assert chat.attachments.images == []
    assert "notes.png" in chat.attachments.label.text()
