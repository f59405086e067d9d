"""The first minutes: Chat opens ready, the demo loads at once, a question asked while it
loads waits and is answered, and every sampling default is the documented one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from app.chat_store import DEFAULT_SAMPLING, ChatStore
from tests.app.engine_window import close_window, cpu_rig, wait_until

QUESTION = "What is the capital of France? Answer briefly."


@pytest.fixture
def fresh_home(tmp_path: Path) -> Iterator[Path]:
    previous = os.environ.get("LOADOUT_HOME")
    os.environ["LOADOUT_HOME"] = str(tmp_path)
    yield tmp_path
    if previous is None:
        os.environ.pop("LOADOUT_HOME", None)
    else:
        os.environ["LOADOUT_HOME"] = previous


def test_the_first_conversation_is_saved_with_the_documented_sampling(
        qapp: QApplication, fresh_home: Path) -> None:
    from app.engine_process import EngineProcess
    from app.pages.chat_page import ChatPage

    engine = EngineProcess()
    chat = ChatPage(engine, ChatStore(fresh_home / "chats.sqlite3"))
    try:
        assert chat.sampling() == DEFAULT_SAMPLING  # before any conversation exists
        for key, value in (("temperature", "0.2"), ("top-p", "0.9"), ("1024", "1024")):
            assert key in chat.settings_box.title() and value in chat.settings_box.title()
        wanted: list[bool] = []
        chat.sig_load_wanted.connect(lambda: wanted.append(True))
        chat.input.setPlainText(QUESTION)
        assert chat.send_button.isEnabled()
        chat.send_button.click()
        assert wanted == [True]  # nothing loading: asking starts a load
        assert chat.waiting and chat.input.toPlainText() == ""
        conv = chat.store.conversations()[0]
        assert conv.sampling == DEFAULT_SAMPLING and conv.title == QUESTION
        assert [m.role for m in chat.store.messages(conv.id)] == ["user"]
        assert "waits for the model" in chat.transcript_text()
        assert not chat.send_button.isEnabled() and chat.stop_button.isEnabled()
        chat.stop_button.click()  # the person gives up waiting: the question stays
        assert not chat.waiting and chat.send_button.isEnabled()
        assert "waits for the model" not in chat.transcript_text()
    finally:
        chat.shutdown()
        engine.shutdown()


@pytest.mark.slow
def test_the_app_opens_on_chat_loads_the_demo_and_answers_a_question_asked_at_once(
        qapp: QApplication, fresh_home: Path, demo_model: Path) -> None:
    from app.i18n import LanguageSwitcher
    from app.main import MainWindow
    from app.settings_store import AppSettings, load_settings

    window: Any = MainWindow(AppSettings(scan_other_apps=False), LanguageSwitcher(),
                             detect=False)
    try:
        window.set_detected(cpu_rig())  # a machine without a GPU
        window.show()
        window.start_ready_to_chat()
        assert window.current_page() == "chat"
        chat = window.chat
        assert chat.engine_label.text() in ("Preparing the model…", "The model is loading…")
        chat.input.setPlainText(QUESTION)
        chat.send_button.click()  # at once, while the model is planned and loaded
        assert chat.waiting
        results: list[Any] = []
        chat.sig_answer_finished.connect(results.append)
        wait_until(lambda: window.engine.state in ("loading", "ready", "crashed"), 60,
                   "the load to start")
        wait_until(lambda: results, 180, "the answer")
        assert window.engine.state == "ready", window.engine.log_text()
        result = results[0]
        assert "Paris" in result.text and result.finish_reason == "stop"
        assert "decode" in chat.transcript_text()
        conv = chat.store.conversations()[0]
        assert conv.sampling == DEFAULT_SAMPLING
        # the plan of a machine without a GPU says so
        window.show_page("plan")
        assert "Everything fits in RAM." in window.plan.messages_label.text()
        assert "GPU memory" not in window.plan.messages_label.text()
        # the next start loads this model again
        assert load_settings().last_model == str(demo_model)
        saved = json.loads((fresh_home / "config" / "app-settings.json").read_text())
        assert saved["last_model"] == str(demo_model)
    finally:
        close_window(window)


def test_every_control_of_every_page_has_an_accessible_name(
        qapp: QApplication, fresh_home: Path, rig: Any) -> None:
    from PySide6.QtWidgets import QWidget

    from app.accessible import CONTROLS, is_part, spoken_name
    from app.i18n import LanguageSwitcher
    from app.main import PAGES, MainWindow
    from app.settings_store import AppSettings

    window: Any = MainWindow(AppSettings(scan_other_apps=False), LanguageSwitcher(),
                             detect=False)
    try:
        window.set_detected(rig)
        window.show()
        unnamed: list[str] = []
        window.plan.open_whatif()
        wizard = window.models.open_wizard()
        qapp.processEvents()
        dialogs = [w for w in qapp.topLevelWidgets() if w.isVisible() and w is not window]
        assert len(dialogs) == 2
        for key in PAGES:
            window.show_page(key)
            qapp.processEvents()
            for widget in [*window.findChildren(QWidget),
                           *(w for d in dialogs for w in d.findChildren(QWidget))]:
                if isinstance(widget, CONTROLS) and widget.isVisible() and not is_part(widget) \
                        and not spoken_name(widget):
                    unnamed.append(f"{key}: {type(widget).__name__} "
                                   f"{widget.objectName()!r} in "
                                   f"{type(widget.parent()).__name__}")
        assert not unnamed, "\n".join(unnamed)
        wizard.close()
    finally:
        for dialog in qapp.topLevelWidgets():
            if dialog is not window:
                dialog.close()
        window.shutdown()
        window.close()
