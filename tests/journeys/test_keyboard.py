"""Journey 8: everything a person does first, with the keyboard only."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.journeys.harness import (
    QUESTION,
    App,
    answers_shown,
    current_page,
    engine_status,
    tab_to,
)

PAGES = ("Home", "Models", "Plan", "Chat", "Server", "Settings")

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def test_keyboard_only_reaches_every_page_and_does_every_main_action(
        start_app: Callable[..., App]) -> None:
    app = start_app()
    app.type(QUESTION)  # the question box has the focus from the start
    app.key("ctrl+Return")
    app.wait_for(lambda: answers_shown(app) == 1, "the answer", 240)
    app.screenshot("answered")
    for number, page in enumerate(PAGES, start=1):
        app.key(f"ctrl+{number}")
        app.wait_for(lambda page=page: current_page(app) == page, f"the {page} page", 10)
        app.screenshot(f"page-{page}")

    app.key("ctrl+5")  # Server: on, then off
    tab_to(app, "Serve the loaded model")
    app.key("space")
    app.wait_for(lambda: app.text("serverLocalUrl").startswith("On this computer: http"),
                 "serving", 30)
    app.screenshot("serving")
    app.key("space")
    app.wait_for(lambda: app.text("serverLocalUrl") == "Not serving.", "not serving", 60)
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the engine", 180)

    app.key("ctrl+3")  # Plan: unload, then load again
    tab_to(app, "Unload")
    app.key("space")
    app.wait_for(lambda: engine_status(app) == "Engine: not loaded", "the unload", 60)
    app.screenshot("unloaded")
    tab_to(app, "Load")
    app.key("space")
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the load", 180)
    app.screenshot("loaded-again")

    app.key("ctrl+4")  # Chat: the question box has the focus again
    focus = app.focus()
    assert focus is not None and focus["name"] == "Question"
    app.type("And of Italy? One word.")
    app.key("ctrl+Return")
    app.wait_for(lambda: answers_shown(app) == 2, "the second answer", 240)
    app.screenshot("second-answer")

    app.key("ctrl+2")  # Models: the wizard opens, Escape closes it
    tab_to(app, "Find a model for this machine…")
    app.key("space")
    app.wait_for(lambda: len(app.windows()) == 2, "the wizard", 30)
    app.screenshot("wizard")
    app.key("Escape")
    app.wait_for(lambda: len(app.windows()) == 1, "the wizard to close", 30)
