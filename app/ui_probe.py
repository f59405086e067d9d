"""A read-only window into the app for tests that drive it like a person (off by default).

With ``LOADOUT_UI_PROBE=/path/to/socket`` set, the app listens on that local socket and
answers one JSON request per line with where its visible widgets are on the screen and
what they show: a test finds a control by its accessible name, then clicks or types on it
with real input events (``xdotool`` on the X server). The probe only reads: it never
calls a slot, sets a value or sends an event, so everything a test does goes through the
same input a person's mouse and keyboard give.

Requests (``op``):
    ``find``   controls whose accessible name is ``name`` (all visible ones; not labels)
    ``object`` widgets whose object name is ``name``
    ``focus``  the widget with the keyboard focus
    ``texts``  every visible widget's text (of every visible window)
    ``windows`` the visible top-level windows with their X window ids
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from PySide6.QtCore import QObject, QPoint
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSlider,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QGroupBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QProgressBar,
    QTableWidget,
    QTextEdit,
    QTreeWidget,
    QWidget,
)

from app.accessible import spoken_name

log = logging.getLogger(__name__)

ENV = "LOADOUT_UI_PROBE"


def widget_text(widget: QWidget) -> str:
    """What ``widget`` shows as text (its value for number fields)."""
    if isinstance(widget, QLabel | QAbstractButton | QLineEdit):
        return widget.text()
    if isinstance(widget, QPlainTextEdit | QTextEdit):
        return widget.toPlainText()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QAbstractSpinBox):
        return widget.text()
    if isinstance(widget, QGroupBox):
        return widget.title()
    if isinstance(widget, QProgressBar):
        return str(widget.value())
    if isinstance(widget, QAbstractSlider):
        return str(widget.value())
    return ""


def _items(widget: QWidget) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(widget, QListWidget):
        viewport = widget.viewport()
        for row in range(widget.count()):
            item = widget.item(row)
            rect = widget.visualItemRect(item)
            top_left = viewport.mapToGlobal(rect.topLeft())
            out.append({"text": item.text(), "x": top_left.x(), "y": top_left.y(),
                        "w": rect.width(), "h": rect.height(),
                        "selected": item.isSelected()})
    elif isinstance(widget, QTableWidget):
        for column in range(widget.columnCount()):
            header = widget.horizontalHeaderItem(column)
            out.append({"text": header.text() if header is not None else "",
                        "header": True})
        for row in range(widget.rowCount()):
            cells = [widget.item(row, c) for c in range(widget.columnCount())]
            out.append({"text": " | ".join(c.text() for c in cells if c is not None)})
    elif isinstance(widget, QTreeWidget):
        viewport = widget.viewport()
        for row in range(widget.topLevelItemCount()):
            node = widget.topLevelItem(row)
            if node is None:
                continue
            rect = widget.visualItemRect(node)
            top_left = viewport.mapToGlobal(rect.topLeft())
            out.append({"text": " | ".join(node.text(c) for c in range(widget.columnCount())),
                        "x": top_left.x(), "y": top_left.y(), "w": rect.width(),
                        "h": rect.height(), "selected": node.isSelected()})
    elif isinstance(widget, QComboBox):
        out = [{"text": widget.itemText(i)} for i in range(widget.count())]
    return out


def describe(widget: QWidget) -> dict[str, Any]:
    """Where ``widget`` is on the screen and what it shows."""
    top_left = widget.mapToGlobal(QPoint(0, 0))
    doc: dict[str, Any] = {
        "name": spoken_name(widget), "object": widget.objectName(),
        "class": type(widget).__name__, "x": top_left.x(), "y": top_left.y(),
        "w": widget.width(), "h": widget.height(), "visible": widget.isVisible(),
        "enabled": widget.isEnabled(), "focused": widget.hasFocus(),
        "text": widget_text(widget), "tooltip": widget.toolTip(),
        "window": widget.window().windowTitle(),
    }
    if isinstance(widget, QAbstractButton):
        doc["checked"] = widget.isChecked()
    items = _items(widget)
    if items:
        doc["items"] = items
    return doc


def _visible_widgets() -> list[QWidget]:
    out: list[QWidget] = []
    for top in QApplication.topLevelWidgets():
        if top.isVisible():
            out.append(top)
            out.extend(w for w in top.findChildren(QWidget) if w.isVisible())
    return out


def answer(request: dict[str, Any]) -> Any:
    """The answer to one request (see the module's docstring)."""
    op = request.get("op")
    name = str(request.get("name", ""))
    if op == "find":
        return [describe(w) for w in _visible_widgets()
                if not isinstance(w, QLabel) and spoken_name(w) == name]
    if op == "object":
        return [describe(w) for w in _visible_widgets() if w.objectName() == name]
    if op == "focus":
        focused = QApplication.focusWidget()
        return describe(focused) if focused is not None else None
    if op == "texts":
        return [{"class": type(w).__name__, "name": spoken_name(w),
                 "text": widget_text(w), "tooltip": w.toolTip(),
                 "items": [i["text"] for i in _items(w)]} for w in _visible_widgets()]
    if op == "windows":
        active = QApplication.activeWindow()
        return [{"title": w.windowTitle(), "id": int(w.winId()), "active": w is active,
                 "class": type(w).__name__, **{k: describe(w)[k] for k in "xywh"}}
                for w in QApplication.topLevelWidgets() if w.isVisible()]
    return {"error": f"unknown op {op!r}"}


class UiProbe(QObject):
    """The probe's local socket server (runs on the UI thread, answers between events)."""

    def __init__(self, path: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        from PySide6.QtNetwork import QLocalServer

        QLocalServer.removeServer(path)
        self._server = QLocalServer(self)
        self._server.newConnection.connect(self._on_server_connection)
        if not self._server.listen(path):
            log.error("the UI probe cannot listen on %s: %s", path,
                      self._server.errorString())
        self._buffers: dict[int, bytes] = {}

    def _on_server_connection(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._on_socket_ready(s))
            socket.disconnected.connect(socket.deleteLater)

    def _on_socket_ready(self, socket: Any) -> None:
        key = id(socket)
        data = self._buffers.get(key, b"") + bytes(socket.readAll().data())
        *lines, rest = data.split(b"\n")
        self._buffers[key] = rest
        for line in lines:
            try:
                reply = answer(json.loads(line))
            except Exception as exc:
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            socket.write(json.dumps(reply).encode() + b"\n")
            socket.flush()


def start_if_asked(parent: QObject) -> UiProbe | None:
    """Start the probe when ``LOADOUT_UI_PROBE`` names a socket path."""
    path = os.environ.get(ENV)
    if not path:
        return None
    log.warning("UI probe listening on %s (for tests that drive the window)", path)
    return UiProbe(path, parent)
