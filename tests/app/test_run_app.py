"""``loadout`` with no arguments: the app starts, shows its window, and quits cleanly.

Runs in a child process: ``QApplication.exec()`` ends the application's event loop for
good, which the other tests of this process still need.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from app.main import MainWindow, run_app

app = QApplication(sys.argv)

def look_and_quit():
    shown = [w for w in app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
    w = shown[0]
    print("windows", len(shown), w.windowTitle(), w.sidebar.count(), w.current_page())
    print("model", w.state.model_path.name if w.state.model_path else None)
    app.quit()

QTimer.singleShot(4000, look_and_quit)
sys.exit(run_app(["loadout"]))
"""


def test_run_app_opens_the_main_window_and_returns_on_quit(loadout_home: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LOADOUT_HOME=str(loadout_home))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "windows 1 Loadout 6 chat" in done.stdout
    assert "model SmolLM2-135M-Instruct.Q4_1.gguf" in done.stdout  # planned from the start
