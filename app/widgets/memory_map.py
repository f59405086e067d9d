"""The memory map: one bar per device, stacked by what the plan puts there.

Paints exactly the :class:`app.plan_view.MapBar` values it is given (tests check those,
not pixels); hovering a segment shows its bytes, share and layers.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFontMetrics,
    QHelpEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QResizeEvent,
)
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.formatting import fmt_bytes
from app.plan_view import MapBar, MapSegment
from app.texts import device_kind_text, role_text, segment_text
from app.theme import is_dark, segment_color

log = logging.getLogger(__name__)

LEGEND_KINDS = ("weights", "experts", "kv", "compute", "reserve", "free")


class MemoryMap(QWidget):
    """Horizontal stacked bars, one per device, with a legend and hover details."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bars: tuple[MapBar, ...] = ()
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)

    def bars(self) -> tuple[MapBar, ...]:
        """The bars currently shown."""
        return self._bars

    def set_bars(self, bars: tuple[MapBar, ...]) -> None:
        """Show new bars (a new plan)."""
        self._bars = bars
        self.updateGeometry()
        self.update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.updateGeometry()  # the legend may wrap onto more lines

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self.sizeHint().height()

    # -- geometry ---------------------------------------------------------------------
    def _row_height(self) -> int:
        return max(28, QFontMetrics(self.font()).height() * 2)

    def _label_width(self) -> int:
        metrics = QFontMetrics(self.font())
        widths = [metrics.horizontalAdvance(self._bar_label(b)) for b in self._bars]
        # up to 2/5 of the width: a worker's device is named with its HOST:PORT
        return min(max([metrics.horizontalAdvance("M" * 12), *widths]) + 16,
                   max(120, self.width() * 2 // 5))

    def sizeHint(self) -> QSize:
        rows = max(1, len(self._bars))
        return QSize(640, rows * (self._row_height() + 8) + self._legend_height() + 8)

    def minimumSizeHint(self) -> QSize:
        return QSize(320, self.sizeHint().height())

    def _legend_lines(self) -> list[list[str]]:
        metrics = QFontMetrics(self.font())
        box = metrics.height() - 4
        lines: list[list[str]] = [[]]
        x, width = 0, max(200, self.width() - 8)
        shown = any(seg.kind == "projector" for bar in self._bars for seg in bar.segments)
        for kind in LEGEND_KINDS + (("projector",) if shown else ()):
            step = box + 4 + metrics.horizontalAdvance(segment_text(kind)) + 16
            if x + step > width and lines[-1]:
                lines.append([])
                x = 0
            lines[-1].append(kind)
            x += step
        return lines

    def _legend_height(self) -> int:
        return len(self._legend_lines()) * (QFontMetrics(self.font()).height() + 4) + 8

    def _bar_rect(self, row: int) -> QRect:
        top = row * (self._row_height() + 8) + 4
        left = self._label_width()
        return QRect(left, top, max(10, self.width() - left - 8), self._row_height())

    def segment_rects(self, row: int) -> list[tuple[QRectF, MapSegment]]:
        """Where each segment of bar ``row`` is drawn (bars scale to their own capacity)."""
        bar = self._bars[row]
        rect = self._bar_rect(row)
        total = max(1, sum(s.nbytes for s in bar.segments))
        scale = rect.width() / total
        x = float(rect.left())
        out = []
        for seg in bar.segments:
            w = seg.nbytes * scale
            out.append((QRectF(x, rect.top(), w, rect.height()), seg))
            x += w
        return out

    def segment_at(self, pos: QPoint) -> tuple[MapBar, MapSegment] | None:
        """The bar and segment under ``pos`` (widget coordinates), if any."""
        for row, bar in enumerate(self._bars):
            for rect, seg in self.segment_rects(row):
                if rect.contains(pos.toPointF()):
                    return bar, seg
        return None

    # -- text -------------------------------------------------------------------------
    def _bar_label(self, bar: MapBar) -> str:
        name = bar.name if bar.kind == "gpu" else device_kind_text(bar.kind)
        if bar.role:
            name = f"{name} · {role_text(bar.role)}"
        return name

    def tooltip_for(self, bar: MapBar, seg: MapSegment) -> str:
        """The hover text of one segment."""
        share = 100.0 * seg.nbytes / bar.capacity_bytes if bar.capacity_bytes else 0.0
        lines = [f"<b>{self._bar_label(bar)}</b>",
                 self.tr("{kind}: {size} ({share:.0f}% of {capacity})").format(
                     kind=segment_text(seg.kind), size=fmt_bytes(seg.nbytes), share=share,
                     capacity=fmt_bytes(bar.capacity_bytes))]
        if seg.layers:
            spans = ", ".join(f"{a}–{b - 1}" if b - a > 1 else str(a) for a, b in seg.layers)
            lines.append(self.tr("Layers {spans}").format(spans=spans))
        return "<br>".join(lines)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            hit = self.segment_at(event.pos())
            if hit is None:
                QToolTip.hideText()
                event.ignore()
            else:
                QToolTip.showText(event.globalPos(), self.tooltip_for(*hit), self)
            return True
        return super().event(event)

    # -- painting ---------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        dark = is_dark()
        text_color = self.palette().windowText().color()
        metrics = QFontMetrics(self.font())
        for row, bar in enumerate(self._bars):
            rect = self._bar_rect(row)
            painter.setPen(text_color)
            label_rect = QRect(0, rect.top(), rect.left() - 8, rect.height() // 2)
            painter.drawText(label_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
                             metrics.elidedText(self._bar_label(bar),
                                                Qt.TextElideMode.ElideRight, label_rect.width()))
            sub = QRect(0, rect.top() + rect.height() // 2, rect.left() - 8, rect.height() // 2)
            painter.drawText(sub, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                             self.tr("{used} of {capacity}").format(
                                 used=fmt_bytes(bar.used_bytes),
                                 capacity=fmt_bytes(bar.capacity_bytes)))
            for seg_rect, seg in self.segment_rects(row):
                painter.fillRect(seg_rect, segment_color(seg.kind, dark))
                self._paint_segment_text(painter, seg_rect, seg, dark)
            painter.setPen(QPen(self.palette().mid().color(), 1))
            painter.drawRect(rect)
        self._paint_legend(painter, len(self._bars), dark)
        painter.end()

    def _paint_segment_text(self, painter: QPainter, rect: QRectF, seg: MapSegment,
                            dark: bool) -> None:
        metrics = QFontMetrics(self.font())
        text = fmt_bytes(seg.nbytes)
        if seg.layers and seg.kind in ("weights", "experts"):
            spans = ", ".join(f"{a}–{b - 1}" for a, b in seg.layers)
            longer = self.tr("{size} · layers {spans}").format(size=text, spans=spans)
            if metrics.horizontalAdvance(longer) + 8 <= rect.width():
                text = longer
        if metrics.horizontalAdvance(text) + 8 > rect.width():
            return
        light_bg = seg.kind == "free" and not dark
        painter.setPen(QColor("#202020") if light_bg else QColor("#ffffff"))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)

    def _paint_legend(self, painter: QPainter, rows: int, dark: bool) -> None:
        metrics = QFontMetrics(self.font())
        y = rows * (self._row_height() + 8) + 8
        box = metrics.height() - 4
        for line in self._legend_lines():
            x = 0
            for kind in line:
                name = segment_text(kind)
                painter.fillRect(QRect(x, y + 2, box, box), segment_color(kind, dark))
                painter.setPen(QPen(self.palette().mid().color(), 1))
                painter.drawRect(QRect(x, y + 2, box, box))
                painter.setPen(self.palette().windowText().color())
                painter.drawText(x + box + 4, y + metrics.ascent(), name)
                x += box + 4 + metrics.horizontalAdvance(name) + 16
            y += metrics.height() + 4
