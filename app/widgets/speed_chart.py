"""A small live line chart of a speed (decode t/s while an answer streams, or the server's
aggregate throughput). Paints the values it is given, newest on the right."""

from __future__ import annotations

import logging
from collections import deque

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.formatting import fmt_tps
from app.theme import is_dark, segment_color

log = logging.getLogger(__name__)


class SpeedChart(QWidget):
    """The last ``capacity`` values of one speed, scaled to the largest shown.

    Args:
        capacity: how many points are kept.
    """

    def __init__(self, capacity: int = 120, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._values: deque[float] = deque(maxlen=capacity)
        self.caption = ""
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumHeight(60)

    def sizeHint(self) -> QSize:
        return QSize(240, 70)

    def values(self) -> tuple[float, ...]:
        """The values shown, oldest first."""
        return tuple(self._values)

    def add(self, value: float) -> None:
        """Append a value (a new reading)."""
        self._values.append(max(0.0, float(value)))
        self.update()

    def clear(self) -> None:
        """Forget every value."""
        self._values.clear()
        self.update()

    def set_caption(self, text: str) -> None:
        """The name of what is charted (drawn in the corner)."""
        self.caption = text
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        rect = self.rect().adjusted(1, 1, -1, -1)
        painter.fillRect(rect, palette.base())
        painter.setPen(QPen(palette.mid().color()))
        painter.drawRect(rect)
        top = max(self._values, default=0.0)
        if len(self._values) >= 2 and top > 0:
            step = rect.width() / (self._values.maxlen or len(self._values))
            start = rect.right() - step * (len(self._values) - 1)
            points = QPolygonF([QPointF(start + i * step,
                                        rect.bottom() - 4 - (v / top) * (rect.height() - 22))
                                for i, v in enumerate(self._values)])
            pen = QPen(segment_color("weights", is_dark()))
            pen.setWidthF(2.0)
            painter.setPen(pen)
            painter.drawPolyline(points)
        painter.setPen(QPen(palette.text().color()))
        label = self.caption
        if self._values:
            label = f"{label}  {fmt_tps(self._values[-1])}" if label else fmt_tps(
                self._values[-1])
        painter.drawText(rect.adjusted(6, 2, -6, -2),
                         Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft, label)
        painter.end()
