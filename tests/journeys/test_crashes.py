"""Journeys 4 and 5: the engine, then the app itself, killed in the middle of an answer."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from tests.journeys.harness import (
    LONG_ASK,
    QUESTION,
    App,
    answers_shown,
    ask,
    engine_processes_of,
    engine_status,
    transcript,
)

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def _answer_so_far(app: App) -> str:
    text = transcript(app)
    return text.split("Assistant", 1)[1].strip() if "Assistant" in text else ""


def _start_streaming(app: App) -> str:
    """Wait for the model, ask for a long answer, return what is shown once it streams."""
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the model to load", 180)
    ask(app, LONG_ASK)
    app.wait_for(lambda: len(_answer_so_far(app)) > 40, "the answer to stream", 120)
    app.screenshot("answer-streaming")
    return _answer_so_far(app)


def test_engine_killed_mid_answer_says_why_keeps_the_text_and_loads_on_the_next_question(
        start_app: Callable[..., App]) -> None:
    app = start_app()
    _start_streaming(app)
    (engine,) = app.engine_pids()
    os.kill(engine, signal.SIGKILL)  # what a native crash or the OOM killer does
    app.wait_for(lambda: engine_status(app) == "Engine: stopped unexpectedly",
                 "the status bar to say the engine stopped", 30)
    banner = app.wait_for(lambda: app.object("engineBannerMessage"), "the banner", 30)
    app.screenshot("engine-killed")
    assert "The engine stopped unexpectedly (exit code" in banner["text"]
    shown = _answer_so_far(app)
    assert len(shown) > 40  # what was shown before the crash stays
    assert "The answer failed" in transcript(app)
    assert app.find("Retry with a safer plan") is not None
    ask(app, QUESTION)  # a person just asks again
    app.wait_for(lambda: engine_status(app).startswith(("Engine: loading", "Engine: ready")),
                 "the engine to load again", 60)
    app.screenshot("loading-again")
    app.wait_for(lambda: answers_shown(app) >= 1 and "Paris" in transcript(app)
                 .rsplit("Assistant", 1)[-1], "the answer after the reload", 180)
    app.screenshot("answered-after-reload")
    assert app.object("engineBannerMessage") is None  # hidden: the engine runs again
    assert shown[:40] in transcript(app)
    assert engine_status(app) == "Engine: ready"


def test_app_killed_mid_answer_leaves_no_engine_and_keeps_what_was_shown(
        start_app: Callable[..., App]) -> None:
    app = start_app()
    shown = _start_streaming(app)
    assert engine_processes_of(app.home)
    app.kill()  # SIGKILL: nothing in the app runs again
    killed = time.monotonic()
    while engine_processes_of(app.home) and time.monotonic() - killed < 10:
        time.sleep(0.1)
    assert not engine_processes_of(app.home), "the engine outlived the app by 10 s"
    again = start_app(app.home)
    again.wait_for(lambda: _answer_so_far(again), "the conversation to reopen", 30)
    again.screenshot("reopened")
    conversations = again.find("Conversations") or {}
    assert [i["text"] for i in conversations.get("items", [])] == [LONG_ASK[:48]]
    assert _answer_so_far(again).startswith(shown[:40])
    assert len(_answer_so_far(again)) >= len(shown) - 5
