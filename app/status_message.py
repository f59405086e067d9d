"""The status bar's passing message, cut to the room its permanent figures leave.

QStatusBar draws a message in whatever width the permanent widgets (engine, model,
decode, VRAM, RAM) leave and runs it under them when it is longer. Here the message is
elided to that room (the whole of it is the bar's tooltip) and cut again when the bar
changes width.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QStatusBar, QWidget

log = logging.getLogger(__name__)


class StatusMessage(QObject):
    """Shows passing messages on ``bar`` beside its ``permanent`` widgets."""

    def __init__(self, bar: QStatusBar, permanent: Sequence[QWidget]) -> None:
        super().__init__(bar)
        self._bar = bar
        self._permanent = tuple(permanent)
        self._message = ""
        self._until = 0.0  # time.monotonic() when it goes
        bar.installEventFilter(self)
        bar.messageChanged.connect(self._on_message_changed)

    def show(self, message: str, timeout_ms: int = 10000) -> None:
        """Show ``message`` for ``timeout_ms``, cut to the room left."""
        self._message = message
        self._until = time.monotonic() + timeout_ms / 1000
        metrics = self._bar.fontMetrics()
        taken = sum(w.width() + 8 for w in self._permanent if w.isVisible())
        room = max(self._bar.width() - taken - 24, metrics.horizontalAdvance("M") * 8)
        self._bar.showMessage(metrics.elidedText(" ".join(message.split()),
                                                 Qt.TextElideMode.ElideRight, room),
                              timeout_ms)
        self._bar.setToolTip(message)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._bar and event.type() == QEvent.Type.Resize:
            left_ms = int((self._until - time.monotonic()) * 1000)
            if self._message and left_ms > 0 and self._bar.currentMessage():
                self.show(self._message, left_ms)
        return super().eventFilter(watched, event)

    def _on_message_changed(self, text: str) -> None:
        if not text:  # gone (timed out, or another message cleared it)
            self._message = ""
            self._bar.setToolTip("")
