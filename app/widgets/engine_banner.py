"""The banner shown above every page when the engine process died: why, and a retry."""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)

SHOWN_LINES = 12


class EngineBanner(QFrame):
    """Says the engine stopped, shows its last log lines, offers a safer retry.

    Signals:
        sig_retry_requested: the user asked to load again with a safer plan.
    """

    sig_retry_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("engineBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumHeight(self.fontMetrics().lineSpacing() * 7)
        self.retry_button, self.dismiss_button = QPushButton(), QPushButton()
        self.retry_button.clicked.connect(self.sig_retry_requested.emit)
        self.dismiss_button.clicked.connect(self.hide)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.dismiss_button)
        buttons.addWidget(self.retry_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.log_view)
        layout.addLayout(buttons)
        self._exit_code: int | None = None
        self.retranslate()
        self.hide()

    def show_death(self, log_text: str, exit_code: int | None) -> None:
        """Show that the engine died, with the last lines of its log."""
        self._exit_code = exit_code
        lines = [line for line in log_text.splitlines() if line.strip()][-SHOWN_LINES:]
        self.log_view.setPlainText("\n".join(lines))
        self.retranslate()
        self.show()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.message.setText(self.tr(
            "The engine stopped unexpectedly (exit code {code}); Loadout is still running. "
            "Its last log lines say why. A safer plan keeps more memory free (fewer layers "
            "on the GPU, smaller batches).").format(
            code=self._exit_code if self._exit_code is not None else "?"))
        self.retry_button.setText(self.tr("Retry with a safer plan"))
        self.dismiss_button.setText(self.tr("Dismiss"))
