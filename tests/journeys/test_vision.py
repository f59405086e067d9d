"""Journey 6: open a vision model (its projector beside it), see the projector on the
plan's memory map, load it, attach a picture in the chat window, ask about it and read the
answer with the image's encoding in its figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.gguf_mmproj import png_bytes, write_vision_pair
from tests.journeys.harness import App, answers_shown, ask, current_page, engine_status

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def test_attach_a_picture_ask_about_it_and_read_the_answer(
        start_app: Callable[..., App], tmp_path: Path) -> None:
    model, _projector = write_vision_pair(tmp_path / "models", stem="pixie")
    picture = tmp_path / "photo.png"
    picture.write_bytes(png_bytes(120, 90, seed=21))
    app = start_app()
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the demo to load", 180)
    app.key("ctrl+2")
    app.click("Open a .gguf file…")
    app.wait_for(lambda: len(app.windows()) == 2, "the file dialog", 30)
    app.type(str(model))
    app.key("Return")
    app.wait_for(lambda: len(app.windows()) == 1, "the file dialog to close", 30)
    app.focus_window()
    app.wait_for(lambda: current_page(app) == "Plan", "the Plan page", 60)
    app.wait_for(lambda: "Fits." in app.text("fitLabel"), "its plan", 60)
    app.screenshot("planned-with-projector")
    app.click("Load")
    app.wait_for(lambda: app.text("statusModel") == f"Model: {model.name}", "the load", 60)
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the model to load", 180)

    app.key("ctrl+4")
    app.click("Attach image")
    app.wait_for(lambda: len(app.windows()) == 2, "the image dialog", 30)
    app.type(str(picture))
    app.key("Return")
    app.wait_for(lambda: len(app.windows()) == 1, "the image dialog to close", 30)
    app.focus_window()
    app.screenshot("attached")
    ask(app, "What is in this picture?")
    app.wait_for(lambda: answers_shown(app) == 1, "its answer", 180)
    app.screenshot("answered")
    text = app.text("Conversation")
    assert "image(s) of 16 tokens, encoded in" in text, text[-400:]
