"""Journey 2: open a .gguf from the Models page, shape its plan (context, a GPU role in a
what-if rig), load it, chat, then go back to the demo; the status bar follows each step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.gguf_factory import Shape, write_llama
from tests.journeys.harness import App, answers_shown, ask, current_page, engine_status

DEMO = "SmolLM2-135M-Instruct.Q4_1.gguf"

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def test_open_a_gguf_plan_it_on_a_what_if_rig_load_chat_and_back_to_the_demo(
        start_app: Callable[..., App], tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    model = write_llama(tmp_path / "models" / "tiny-llama.gguf", Shape(n_ctx_train=32768))
    app = start_app()
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the demo to load", 180)
    app.key("ctrl+2")
    app.click("Open a .gguf file…")
    app.wait_for(lambda: len(app.windows()) == 2, "the file dialog", 30)
    app.screenshot("file-dialog")
    app.type(str(model))
    app.key("Return")
    app.wait_for(lambda: len(app.windows()) == 1, "the file dialog to close", 30)
    app.focus_window()  # what a window manager does when a dialog closes
    app.wait_for(lambda: current_page(app) == "Plan", "the Plan page", 60)
    app.wait_for(lambda: "Fits." in app.text("fitLabel"), "its plan", 60)
    assert app.text("statusModel") == f"Model: {DEMO}"  # still the one running
    app.screenshot("planned")

    before = app.text("fitLabel")
    app.click("Context")  # the slider (a click moves it a step), then one more with a key
    app.key("Right")
    app.wait_for(lambda: app.text("fitLabel") != before and "Context 4K" in
                 app.text("fitLabel"), "the plan for a 4K context", 60)
    app.screenshot("context-changed")

    app.click("What if…")
    app.wait_for(lambda: len(app.windows()) == 2, "the what-if dialog", 30)
    app.click("Add GPU")
    app.wait_for(lambda: (app.find("GPUs") or {}).get("items"), "the GPU in the rig", 10)
    app.screenshot("whatif-rig")
    app.click("OK")
    app.wait_for(lambda: len(app.windows()) == 1, "the dialog to close", 30)
    app.focus_window()
    app.wait_for(lambda: app.find("GPU 0: Main") is not None, "the GPU's roles", 60)
    app.wait_for(lambda: (app.find("GPU 0: Main") or {}).get("checked"), "GPU 0 as Main", 60)
    app.screenshot("whatif-planned")
    app.click("GPU 0: Off")
    app.wait_for(lambda: (app.find("GPU 0: Off") or {}).get("checked"), "GPU 0 off", 30)
    app.wait_for(lambda: "No usable GPU" in app.text("planMessages")
                 or "CPU" in app.text("planMessages"), "the plan without the GPU", 60)
    app.screenshot("gpu-off")
    load = app.find("Load")
    assert load is not None and not load["enabled"]  # not a plan for this machine
    app.click("Back to this machine")
    app.wait_for(lambda: app.find("Load") is not None, "Load", 60)

    app.click("Load")
    app.wait_for(lambda: app.text("statusModel") == f"Model: {model.name}", "the load", 60)
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the model to load", 180)
    app.screenshot("loaded")
    app.key("ctrl+4")
    ask(app, "Hello")
    app.wait_for(lambda: answers_shown(app) == 1, "its answer", 180)
    app.screenshot("answered")
    assert app.text("statusModel") == f"Model: {model.name}"

    app.key("ctrl+2")  # back to the demo
    app.click_item("Models found", next(
        i["text"] for i in (app.find("Models found") or {})["items"] if "Demo model" in i["text"]))
    app.click("Plan this model")
    app.wait_for(lambda: app.text("pageTitle") == f"Plan: {DEMO}", "the demo planned", 60)
    assert app.text("statusModel") == f"Model: {model.name}"  # until the demo loads
    app.wait_for(lambda: app.find("Load") is not None, "Load (another model)", 60)
    app.click("Load")
    app.wait_for(lambda: engine_status(app) == "Engine: ready" and
                 app.text("statusModel") == f"Model: {DEMO}", "the demo loaded", 180)
    app.screenshot("demo-again")
