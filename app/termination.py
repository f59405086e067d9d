"""Signals that end the app (a logout's SIGTERM, Ctrl-C's SIGINT, ``kill``) close it as
its window's close button does: the engine is stopped and the conversations saved.

Python runs a signal handler only between Qt's events, and Qt's loop may sleep for long:
the signal wakes the loop through a socket (``signal.set_wakeup_fd``), and the window is
closed from there, on the UI thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket

from PySide6.QtCore import QSocketNotifier
from PySide6.QtWidgets import QApplication

log = logging.getLogger(__name__)


def quit_on_termination(app: QApplication) -> QSocketNotifier | None:
    """Close every window and quit on SIGTERM / SIGINT; returns what must stay alive while
    the loop runs (None where signals are not used, on Windows)."""
    if os.name != "posix":
        return None
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno())
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_args: None)  # handled below, on the UI thread
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, app)

    def on_signal() -> None:
        with contextlib.suppress(OSError):
            reader.recv(64)
        log.info("asked to quit by a signal")
        app.closeAllWindows()
        app.quit()

    notifier.activated.connect(on_signal)
    notifier.sockets = (reader, writer)  # type: ignore[attr-defined]  # live as long as it
    return notifier
