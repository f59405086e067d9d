"""Column titles that stay readable however narrow their column gets.

A table whose columns share the width (``QHeaderView.Stretch``) cut a long title ("decode
t/s, its answer") to its middle letters at a small window or in another language. Here a
title wider than its column is broken into lines (at spaces, or between CJK characters),
the header grows to hold them, and the whole title is also the column's tooltip.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHeaderView, QStyle, QTableWidget, QTableWidgetItem

log = logging.getLogger(__name__)

_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_TOKENS = re.compile(rf"[{_CJK}][，。、：；）」』]?|[^\s{_CJK}]+|\s+")


def wrap_title(text: str, width: int, metrics: QFontMetrics) -> str:
    """``text`` broken into lines no wider than ``width`` pixels where it can be (a single
    word wider than that stays whole on its line)."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    lines: list[str] = []
    line = ""
    for token in _TOKENS.findall(text):
        if token.isspace():
            line += token
            continue
        candidate = line + token
        if line.strip() and metrics.horizontalAdvance(candidate.rstrip()) > width:
            lines.append(line.rstrip())
            line = token
        else:
            line = candidate
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def title_room(header: QHeaderView, section: int) -> int:
    """The pixels a title has in ``section`` (its size less the style's margins)."""
    margin = header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
    return max(1, header.sectionSize(section) - 2 * margin - 4)


class FittedHeader(QObject):
    """Keeps the column titles of ``table`` whole: set them with :meth:`set_titles`; they
    are broken into lines again whenever a column changes width."""

    def __init__(self, table: QTableWidget) -> None:
        super().__init__(table)
        self._table = table
        self._titles: list[str] = []
        self._tips: list[str] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.refit)
        table.horizontalHeader().sectionResized.connect(lambda *_: self._timer.start())

    @property
    def titles(self) -> tuple[str, ...]:
        """The titles as set (one line each)."""
        return tuple(self._titles)

    def set_titles(self, titles: Sequence[str], tips: Sequence[str] = ()) -> None:
        """Show ``titles`` (each column's ``tips`` entry, when given, explains it)."""
        self._titles = list(titles)
        self._tips = [*tips, *[""] * (len(titles) - len(tips))]
        for col, title in enumerate(self._titles):
            item = self._table.horizontalHeaderItem(col)
            if item is None:
                item = QTableWidgetItem()
                self._table.setHorizontalHeaderItem(col, item)
            tip = self._tips[col]
            item.setToolTip(f"{title}: {tip}" if tip else title)
        self.refit()

    def refit(self) -> None:
        """Break each title to its column's width now."""
        header = self._table.horizontalHeader()
        metrics = header.fontMetrics()
        for col, title in enumerate(self._titles):
            item = self._table.horizontalHeaderItem(col)
            text = wrap_title(title, title_room(header, col), metrics)
            if item is not None and item.text() != text:
                item.setText(text)
