"""A one-line label that never widens its page: text that does not fit ends in "…".

A page title such as "Plan: Qwen3-Coder-30B-A3B-Instruct-UD-Q4_K_XL.gguf" (a file name
without spaces, so it cannot wrap) made the whole page wider than a small window and
pushed the buttons beside it out of sight. This label asks only for a few characters of
room, shows what fits, and keeps the whole text in its tooltip when it is cut.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

log = logging.getLogger(__name__)


class ElidedLabel(QLabel):
    """A plain-text, one-line QLabel that elides on the right instead of growing."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        # its whole text when there is room, down to a few characters when there is not
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(self.fontMetrics().horizontalAdvance("M" * 6), hint.height())

    def shown_text(self) -> str:
        """The text as drawn now (ends in "…" when cut)."""
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             max(0, self.contentsRect().width()))

    def setText(self, text: str) -> None:
        super().setText(text)
        self._update_tip()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_tip()

    def _update_tip(self) -> None:
        self.setToolTip(self.text() if self.shown_text() != self.text() else "")

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setFont(self.font())
        painter.setPen(self.palette().windowText().color())
        painter.drawText(self.contentsRect(), self.alignment(), self.shown_text())
