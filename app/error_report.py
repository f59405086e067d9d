"""The one place where errors from any worker or page become a readable message.

Every failure is logged with its traceback (to the log file) and shown once, in plain
language, in a non-blocking message box; the last message is kept for the status bar
and for tests.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.errors import ModelFileError
from app.texts import QT_TRANSLATE_NOOP
from engine.errors import EngineError, ModelNotFoundError, OutOfMemoryError
from planner.errors import GGUFError, InventoryError, PlannerError, UnsupportedModelError

log = logging.getLogger(__name__)


_MODEL_FILE = QT_TRANSLATE_NOOP(
    "ErrorReporter", "{name} cannot be read as a GGUF model ({detail}). If it was "
    "downloaded, it may be incomplete: download it again. Otherwise open a .gguf model "
    "file (for a model split in parts, its first part).")
_MESSAGES: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((ModelNotFoundError,), QT_TRANSLATE_NOOP(
        "ErrorReporter", "The model file could not be found: {detail}")),
    ((GGUFError,), QT_TRANSLATE_NOOP(
        "ErrorReporter", "This file is not a GGUF model Loadout can read: {detail}")),
    ((UnsupportedModelError,), QT_TRANSLATE_NOOP(
        "ErrorReporter", "Loadout cannot plan this model yet: {detail}")),
    ((InventoryError,), QT_TRANSLATE_NOOP("ErrorReporter", "The rig file is not valid: {detail}")),
    ((OutOfMemoryError, MemoryError),
     QT_TRANSLATE_NOOP("ErrorReporter", "Out of memory: {detail}")),
    ((PlannerError, EngineError), QT_TRANSLATE_NOOP("ErrorReporter", "{detail}")),
    ((PermissionError,), QT_TRANSLATE_NOOP("ErrorReporter", "Permission denied: {detail}")),
    ((OSError,), QT_TRANSLATE_NOOP(
        "ErrorReporter", "A file could not be read or written: {detail}")),
)
_OTHER = QT_TRANSLATE_NOOP("ErrorReporter", "Something went wrong ({kind}): {detail}")
_TITLE = QT_TRANSLATE_NOOP("ErrorReporter", "Loadout: something went wrong")
_SEE_LOG = QT_TRANSLATE_NOOP("ErrorReporter", "Details are in the log file, in {folder}")


def _tr(text: str) -> str:
    return QCoreApplication.translate("ErrorReporter", text)


def readable_message(exc: BaseException) -> str:
    """A sentence a user can act on, for any exception a job may raise."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, ModelFileError):
        return _tr(_MODEL_FILE).format(name=exc.path.name, detail=exc.detail)
    for kinds, text in _MESSAGES:
        if isinstance(exc, kinds):
            return _tr(text).format(detail=detail)
    return _tr(_OTHER).format(kind=type(exc).__name__, detail=detail)


def _log_folder() -> str:
    """Where the log file is (Settings links it too)."""
    from engine.paths import paths

    try:
        return str(paths().logs)
    except Exception:  # the message must show whatever the folder's state
        log.exception("the log folder is unknown")
        return "?"


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
        self._box.setWindowTitle(_tr(_TITLE))
        self._box.setText(message)
        self._box.setInformativeText(_tr(_SEE_LOG).format(folder=_log_folder()))
        self._box.open()  # non-blocking: workers and timers keep running

    def close(self) -> None:
        """Close the message box if one is open."""
        if self._box is not None:
            self._box.close()
