"""A main window with the demo model loaded through the Plan page, shared by a module.

Loading takes seconds, so each test module loads once: the window is built with its own
``LOADOUT_HOME`` (conversations database included) and shut down at the module's end,
engine process included.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QThreadPool
from PySide6.QtTest import QTest

from planner.inventory import Inventory
from tests.app.conftest import rig_doc

READY_TIMEOUT_S = 120.0


def wait_until(condition: Callable[[], object], timeout_s: float = READY_TIMEOUT_S,
               what: str = "condition") -> None:
    """Run the event loop until ``condition()`` is true (fails the test after timeout)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        QTest.qWait(20)


def cpu_rig() -> Inventory:
    """This kind of machine without GPUs: the plan puts everything on the CPU."""
    return Inventory.from_json(rig_doc([]))


def open_window(home: Path, demo_model: Path, load: bool = True) -> Any:
    """A main window on ``home``; with ``load``, the demo planned at 4K and loaded."""
    from app.i18n import LanguageSwitcher
    from app.main import MainWindow
    from app.pages.plan_page import CONTEXT_STEPS
    from app.settings_store import AppSettings

    os.environ["LOADOUT_HOME"] = str(home)
    window = MainWindow(AppSettings(scan_other_apps=False), LanguageSwitcher(), detect=False)
    window.set_detected(cpu_rig())
    window.show()
    if not load:
        return window
    window.plan.context.setValue(CONTEXT_STEPS.index(4096) + 1)
    window.plan.parallel.setValue(2)
    window.select_model(demo_model)
    wait_until(lambda: window.plan.last_plan is not None
               and window.state.model_path == demo_model
               and not window.runner.busy("plan"), 60, "the plan")
    assert window.plan.load_button.isEnabled()
    window.load_seen = {"states": [], "progress": [], "bar_shown": False}

    def on_state(state: str) -> None:
        window.load_seen["states"].append(state)
        window.load_seen["bar_shown"] |= window.load_progress.isVisible()

    window.engine.sig_state_changed.connect(on_state)
    window.engine.sig_load_progressed.connect(window.load_seen["progress"].append)
    window.plan.load_button.click()
    assert window.load_progress.isVisible()  # the progress bar follows the load
    assert window.status_engine.text().startswith("Engine: loading")
    wait_until(lambda: window.engine.state in ("ready", "crashed"), what="the engine")
    assert window.engine.state == "ready", window.engine.log_text()
    return window


def close_window(window: Any) -> None:
    """Shut the window down; fail if a thread or the engine process is left."""
    pid = window.engine.pid()
    window.shutdown()
    window.close()
    window.deleteLater()
    assert window.runner.active_threads() == 0, "a worker thread leaked"
    assert QThreadPool.globalInstance().activeThreadCount() == 0
    if pid:
        assert not process_alive(pid), "the engine process was left running"
    # deleted now, not at some later event loop: a closed window left alive still gets
    # application-wide events (a language change retranslates its pages)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def window_fixture(home: Path, demo_model: Path) -> Iterator[Any]:
    """Body of a module-scoped fixture: yield a loaded window, then close it."""
    previous = os.environ.get("LOADOUT_HOME")
    window = open_window(home, demo_model)
    try:
        yield window
    finally:
        close_window(window)
        if previous is None:
            os.environ.pop("LOADOUT_HOME", None)
        else:
            os.environ["LOADOUT_HOME"] = previous
