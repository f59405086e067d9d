"""The one place where errors from any worker or page become a readable message.

Every failure is logged with its traceback (to the log file) and shown once, in plain
language, in a non-blocking message box; the last message is kept for the status bar
and for tests.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from engine.errors import EngineError, ModelNotFoundError, OutOfMemoryError
from planner.errors import GGUFError, InventoryError, PlannerError, UnsupportedModelError

log = logging.getLogger(__name__)


def _tr(text: str) -> str:
    return QCoreApplication.translate("ErrorReporter", text)


def readable_message(exc: BaseException) -> str:
    """A sentence a user can act on, for any exception a job may raise."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, ModelNotFoundError):
        return _tr("The model file could not be found: {detail}").format(detail=detail)
    if isinstance(exc, GGUFError):
        return _tr("This file is not a GGUF model Loadout can read: {detail}").format(
            detail=detail)
    if isinstance(exc, UnsupportedModelError):
        return _tr("Loadout cannot plan this model yet: {detail}").format(detail=detail)
    if isinstance(exc, InventoryError):
        return _tr("The rig file is not valid: {detail}").format(detail=detail)
    if isinstance(exc, OutOfMemoryError | MemoryError):
        return _tr("Out of memory: {detail}").format(detail=detail)
    if isinstance(exc, PlannerError | EngineError):
        return _tr("{detail}").format(detail=detail)
    if isinstance(exc, PermissionError):
        return _tr("Permission denied: {detail}").format(detail=detail)
    if isinstance(exc, OSError):
        return _tr("A file could not be read or written: {detail}").format(detail=detail)
    return _tr("Something went wrong ({kind}): {detail}").format(
        kind=type(exc).__name__, detail=detail)


class ErrorReporter(QObject):
    """Shows errors to the user and writes them to the log.

    Args:
        parent_widget: the window message boxes belong to (None: no box, log only).
    """

    sig_error_reported = Signal(str)

    def __init__(self, parent_widget: QWidget | None = None) -> None:
        super().__init__(parent_widget)
        self._parent_widget = parent_widget
        self._box: QMessageBox | None = None
        self.last_message = ""

    def report(self, exc: BaseException) -> str:
        """Log ``exc`` with its traceback, show it, and return the message shown."""
        log.error("%s: %s", type(exc).__name__, exc, exc_info=exc)
        message = readable_message(exc)
        self.last_message = message
        self.sig_error_reported.emit(message)
        if self._parent_widget is not None:
            self._show(message)
        return message

    def _show(self, message: str) -> None:
        if self._box is None:
            self._box = QMessageBox(self._parent_widget)
            self._box.setIcon(QMessageBox.Icon.Warning)
            self._box.setStandardButtons(QMessageBox.StandardButton.Close)
        self._box.setWindowTitle(_tr("Loadout: something went wrong"))
        self._box.setText(message)
        self._box.setInformativeText(_tr("Details are in the log file."))
        self._box.open()  # non-blocking: workers and timers keep running

    def close(self) -> None:
        """Close the message box if one is open."""
        if self._box is not None:
            self._box.close()
