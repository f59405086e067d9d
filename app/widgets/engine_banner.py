"""The banner shown above every page when the engine process died: why, and a retry (or,
when an RPC worker went away, planning again without it). At start it also says when
Loadout runs its CPU engine build although the computer has a GPU."""

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
    """Says the engine stopped, shows its last log lines, offers a safer retry; when a
    worker went away, offers to plan again without it instead. Or, once at start, says
    that the CPU engine build runs although there is a GPU (:meth:`show_engine_fallback`).

    Signals:
        sig_retry_requested: the user asked to load again with a safer plan.
        sig_replan_requested(tuple): the user asked to plan without these workers.
    """

    sig_retry_requested = Signal()
    sig_replan_requested = Signal(tuple)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("engineBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message = QLabel()
        self.message.setObjectName("engineBannerMessage")
        self.message.setWordWrap(True)
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumHeight(self.fontMetrics().lineSpacing() * 7)
        self.retry_button, self.dismiss_button = QPushButton(), QPushButton()
        self.replan_button = QPushButton()
        self.retry_button.clicked.connect(self.sig_retry_requested.emit)
        self.replan_button.clicked.connect(
            lambda: self.sig_replan_requested.emit(self.lost_workers))
        self.dismiss_button.clicked.connect(self.hide)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.dismiss_button)
        buttons.addWidget(self.retry_button)
        buttons.addWidget(self.replan_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.log_view)
        layout.addLayout(buttons)
        self._exit_code: int | None = None
        self.lost_workers: tuple[str, ...] = ()
        self.fallback = False  # showing the engine build fallback, not a death
        self.retranslate()
        self.hide()

    def show_death(self, log_text: str, exit_code: int | None,
                   lost_workers: tuple[str, ...] = ()) -> None:
        """Show that the engine died, with the last lines of its log; ``lost_workers``:
        the RPC workers that went away (then planning without them is offered)."""
        self._exit_code = exit_code
        self.lost_workers = tuple(lost_workers)
        self.fallback = False
        self.log_view.setVisible(True)
        self.retry_button.setVisible(not self.lost_workers)
        self.replan_button.setVisible(bool(self.lost_workers))
        lines = [line for line in log_text.splitlines() if line.strip()][-SHOWN_LINES:]
        self.log_view.setPlainText("\n".join(lines))
        self.retranslate()
        self.show()

    def show_engine_fallback(self, active: tuple[str, str] | None) -> None:
        """Say so when ``active`` (``engine_select.active()``: the build and its reason
        code) is the CPU build although a GPU was found; otherwise stay as it is."""
        if active is None or active[1] != "gpu_unusable":
            return
        self.fallback = True
        for widget in (self.log_view, self.retry_button, self.replan_button):
            widget.setVisible(False)
        self.retranslate()
        self.show()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        code = self._exit_code if self._exit_code is not None else "?"
        workers = ", ".join(self.lost_workers)
        if self.fallback:
            self.message.setText(self.tr(
                "Loadout runs its CPU engine build: this computer has a GPU, but no engine "
                "build here can use it (its driver's runtime is missing, or Loadout has no "
                "build for it). Models run much more slowly on the CPU. Settings → Engine "
                "shows the builds."))
        elif self.lost_workers:
            self.message.setText(self.tr(
                "The engine stopped (exit code {code}): worker {workers} went away or "
                "stopped answering, and the answer ended there. Loadout is still running. "
                "Plan again without it, or start the worker again and check it in "
                "Settings → Cluster.").format(code=code, workers=workers))
        else:
            self.message.setText(self.tr(
                "The engine stopped unexpectedly (exit code {code}); Loadout is still "
                "running. Its last log lines say why. A safer plan keeps more memory free "
                "(fewer layers on the GPU, smaller batches).").format(code=code))
        self.retry_button.setText(self.tr("Retry with a safer plan"))
        self.replan_button.setText(self.tr("Plan again without {workers}").format(
            workers=workers))
        self.dismiss_button.setText(self.tr("Dismiss"))
