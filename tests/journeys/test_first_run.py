"""Journey 1: a person opens Loadout for the first time and asks a question at once."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

import pytest

from tests.journeys.harness import (
    QUESTION,
    App,
    answers_shown,
    current_page,
    engine_processes_of,
    engine_status,
    transcript,
)

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def test_first_run_opens_ready_to_chat_and_answers_a_question_typed_at_once(
        start_app: Callable[..., App]) -> None:
    app = start_app()
    app.screenshot("opened")
    assert current_page(app) == "Chat"
    focus = app.focus()
    assert focus is not None and focus["name"] == "Question"  # type at once, no click
    assert engine_status(app).startswith(("Engine: preparing to load", "Engine: loading",
                                          "Engine: ready"))  # loading from the start
    app.type(QUESTION)
    app.screenshot("question-typed")
    app.key("ctrl+Return")
    app.wait_for(lambda: QUESTION in transcript(app), "the question in the transcript", 30)
    app.screenshot("question-sent")
    app.wait_for(lambda: engine_status(app) == "Engine: ready" or answers_shown(app),
                 "the model to load", 180)
    app.wait_for(lambda: answers_shown(app) == 1, "the whole answer", 180)
    app.screenshot("answered")
    text = transcript(app)
    answer = text.split("Assistant", 1)[1]
    assert "Paris" in answer
    for figure in ("TTFT", "prefill", "decode", "end-to-end", "prompt tokens"):
        assert figure in answer
    assert app.text("statusModel") == "Model: SmolLM2-135M-Instruct.Q4_1.gguf"
    assert app.text("statusDecode").startswith("Decode: ") and "—" not in \
        app.text("statusDecode")
    # the sampling it used, as documented, shown in the panel ...
    panel = app.find("System prompt and sampling: temperature 0.2, top-p 0.9, "
                     "longest answer 1024 tokens")
    assert panel is not None
    app.click(panel["name"])
    app.wait_for(lambda: app.find("Temperature"), "the sampling fields", 10)
    assert app.text("Temperature") == "0.20" and app.text("Top-p") == "0.90"
    assert app.text("Longest answer (tokens)") == "1024"
    app.screenshot("sampling-shown")
    # ... and saved with the conversation
    db = sqlite3.connect(app.home / "data" / "chats.sqlite3")
    try:
        (sampling,) = db.execute("SELECT sampling FROM conversations").fetchone()
        (reason,) = db.execute("SELECT finish_reason FROM messages "
                               "WHERE role = 'assistant'").fetchone()
    finally:
        db.close()
    assert json.loads(sampling) == {"temperature": 0.2, "top_p": 0.9, "max_tokens": 1024}
    assert reason == "stop"  # whole, not cut at a token limit
    # a logout (SIGTERM) closes it as its close button does: the engine is stopped with it
    app.close()
    assert app.process.returncode == 0, app.log_tail()
    assert not engine_processes_of(app.home)
