"""Stopping the engine: a clean stop where the OS can ask for one, at once where not."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QProcess

from app.engine_process import ask_to_stop

# an engine stand-in that says how it was stopped
ENGINE = """
import signal, sys, time
def term(*_):
    print("asked", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("up", flush=True)
time.sleep(60)
"""


def _started(qtbot: object) -> QProcess:
    process = QProcess()
    process.start(sys.executable, ["-c", ENGINE])
    assert process.waitForStarted(10_000)
    assert process.waitForReadyRead(10_000)
    assert bytes(process.readAllStandardOutput().data()).strip() == b"up"
    return process


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_on_posix_the_engine_is_asked_to_stop_and_stops_cleanly(qtbot: object) -> None:
    process = _started(qtbot)
    ask_to_stop(process)
    assert process.waitForFinished(10_000)
    assert bytes(process.readAllStandardOutput().data()).strip() == b"asked"
    assert process.exitStatus() == QProcess.ExitStatus.NormalExit


def test_on_windows_the_engine_ends_at_once(qtbot: object,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # terminate() would post WM_CLOSE, which a console engine never receives
    process = _started(qtbot)
    monkeypatch.setattr(sys, "platform", "win32")
    ask_to_stop(process)
    assert process.waitForFinished(3_000)
    assert bytes(process.readAllStandardOutput().data()).strip() == b""
    assert process.exitStatus() == QProcess.ExitStatus.CrashExit
