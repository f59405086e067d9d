"""The model wizard: machine → task → recommendations → download → load and chat.

Opened from the Models page. Each step is its own widget (:mod:`app.pages.wizard_steps`,
:mod:`app.pages.wizard_choose`, :mod:`app.pages.wizard_download`); this dialog holds them
in a stack with the step list on top and Back / Next below. The long work (ranking the
catalog, downloading) runs off the UI thread through the app's :class:`WorkerRunner`.
Closing the dialog pauses a running download (the partial file stays for a resume).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QSize, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.accessible import name_controls
from app.pages.wizard_choose import ChooseStep
from app.pages.wizard_download import BUSY_STAGES, DownloadStep
from app.pages.wizard_steps import DoneStep, MachineStep, TaskStep
from app.plan_jobs import with_gpu_reserve
from app.state import AppState
from app.workers import WorkerRunner
from planner.inventory import Inventory

log = logging.getLogger(__name__)

STEPS: tuple[str, ...] = ("machine", "task", "choose", "download", "done")


class ModelWizard(QDialog):
    """Finds, downloads and opens a model that suits this machine.

    Args:
        state: the app's shared state (the machine, the settings).
        runner: where ranking and downloading run.
        catalog_file: another catalog than the bundled one (None: the bundled one).
    """

    sig_load_and_chat_requested = Signal(object)  # Path
    sig_plan_requested = Signal(object)           # Path
    sig_download_finished = Signal(object)        # Path
    sig_step_changed = Signal(str)

    def __init__(self, state: AppState, runner: WorkerRunner,
                 catalog_file: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self.catalog_file = catalog_file
        self.machine_step = MachineStep()
        self.task_step = TaskStep(state.settings.default_task)
        self.choose_step = ChooseStep(runner, catalog_file)
        self.download_step = DownloadStep(runner)
        self.done_step = DoneStep()
        self.steps: dict[str, QWidget] = {
            "machine": self.machine_step, "task": self.task_step, "choose": self.choose_step,
            "download": self.download_step, "done": self.done_step}
        self._build()
        state.sig_machine_changed.connect(self._on_machine_changed)
        self.choose_step.sig_choice_changed.connect(self._refresh_nav)
        self.download_step.sig_stage_changed.connect(self._refresh_nav)
        self.download_step.sig_download_finished.connect(self._on_download_finished)
        self.done_step.sig_load_and_chat_requested.connect(self._on_load_and_chat_requested)
        self.done_step.sig_plan_requested.connect(self._on_plan_requested)
        self._on_machine_changed()
        self.retranslate()

    def _build(self) -> None:
        self.setMinimumSize(QSize(860, 600))
        self.resize(980, 700)
        self.progress_label = QLabel()
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.stack = QStackedWidget()
        for key in STEPS:
            self.stack.addWidget(self.steps[key])
        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        line.setFrameShadow(QFrame.Shadow.Sunken)
        self.back_button = QPushButton()
        self.back_button.clicked.connect(self.back)
        self.next_button = QPushButton()
        self.next_button.setDefault(True)
        self.next_button.clicked.connect(self.next_step)
        self.close_button = QPushButton()
        self.close_button.clicked.connect(self.reject)
        nav = QHBoxLayout()
        nav.addWidget(self.back_button)
        nav.addStretch(1)
        nav.addWidget(self.next_button)
        nav.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.progress_label)
        layout.addWidget(self.title)
        layout.addWidget(self.stack, 1)
        layout.addWidget(line)
        layout.addLayout(nav)

    # -- navigation -------------------------------------------------------------------
    def current_step(self) -> str:
        """The key of the step shown (one of :data:`STEPS`)."""
        return STEPS[self.stack.currentIndex()]

    def go_to(self, key: str) -> None:
        """Show step ``key``, then start its work when it has some."""
        self.stack.setCurrentIndex(STEPS.index(key))
        self.retranslate()
        self.sig_step_changed.emit(key)
        if key == "machine":
            self.machine_step.refresh()  # free disk space may have changed
        elif key == "choose":
            inventory = self.inventory()
            if inventory is not None:
                self.choose_step.start(inventory, self.task_step.task())
        elif key == "download":
            choice = self.choose_step.selected()
            if choice is not None:
                self.download_step.set_choice(
                    choice.spec, f"{choice.name} · {choice.quant}",
                    self.choose_step.downloaded_path(choice.spec))

    def next_step(self) -> None:
        """Go on to the next step (when the current one allows it)."""
        index = self.stack.currentIndex()
        if self._can_go_on() and index + 1 < len(STEPS):
            self.go_to(STEPS[index + 1])

    def back(self) -> None:
        """Go back one step."""
        index = self.stack.currentIndex()
        if index > 0 and self.download_step.stage not in BUSY_STAGES:
            self.go_to(STEPS[index - 1])

    def inventory(self) -> Inventory | None:
        """The machine to recommend for, as the Plan page sees it (GPU reserve applied)."""
        machine = self._state.machine()
        if machine is None:
            return None
        return with_gpu_reserve(machine, self._state.settings.gpu_reserve_bytes)

    def _can_go_on(self) -> bool:
        step = self.current_step()
        if step == "machine":
            return self._state.machine() is not None
        if step == "choose":
            return self.choose_step.can_continue()
        if step == "download":
            return self.download_step.stage == "complete"
        return step == "task"

    def _refresh_nav(self) -> None:
        step = self.current_step()
        self.back_button.setEnabled(self.stack.currentIndex() > 0
                                    and self.download_step.stage not in BUSY_STAGES)
        self.next_button.setVisible(step != "done")
        self.next_button.setDefault(step != "done")
        self.done_step.load_button.setDefault(step == "done")
        self.next_button.setEnabled(self._can_go_on())
        choice = self.choose_step.selected()
        if step == "task":
            self.next_button.setText(self.tr("Show recommendations"))
        elif step == "choose" and choice is not None \
                and self.choose_step.downloaded_path(choice.spec) is not None:
            self.next_button.setText(self.tr("Use this model"))
        elif step == "choose":
            self.next_button.setText(self.tr("Download this model"))
        else:
            self.next_button.setText(self.tr("Next"))
        offline = step == "choose" and choice is not None and choice.estimated
        self.next_button.setToolTip(self.tr("Downloading needs the internet: the model hub "
                                            "cannot be reached.") if offline else "")
        self._refresh_progress_label()

    def _refresh_progress_label(self) -> None:
        names = {"machine": self.tr("Machine"), "task": self.tr("Task"),
                 "choose": self.tr("Choose"), "download": self.tr("Download"),
                 "done": self.tr("Chat")}
        current = self.stack.currentIndex()
        palette = self.palette()
        strong = palette.color(QPalette.ColorRole.Highlight).name()
        faint = palette.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText).name()
        parts = []
        for index, key in enumerate(STEPS):
            text = f"{index + 1}. {names[key]}"
            if index == current:
                parts.append(f'<b style="color: {strong}">{text}</b>')
            elif index > current:
                parts.append(f'<span style="color: {faint}">{text}</span>')
            else:
                parts.append(text)
        self.progress_label.setText("  ›  ".join(parts))

    # -- events -----------------------------------------------------------------------
    def _on_machine_changed(self) -> None:
        self.machine_step.set_machine(self._state.machine(), self._state.whatif is not None)
        if self.current_step() == "choose":
            self.go_to("choose")  # plans for the new machine
        self._refresh_nav()

    def _on_download_finished(self, path: Path) -> None:
        self.done_step.set_model(self.download_step.title_text, path,
                                 self.download_step.unverified)
        self.sig_download_finished.emit(path)
        self.go_to("done")

    def _on_load_and_chat_requested(self, path: Path) -> None:
        self.sig_load_and_chat_requested.emit(path)
        self.accept()

    def _on_plan_requested(self, path: Path) -> None:
        self.sig_plan_requested.emit(path)
        self.accept()

    def reject(self) -> None:
        """Close; a running download is paused (Resume continues it later)."""
        self.download_step.pause()
        super().reject()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.LanguageChange, QEvent.Type.PaletteChange):
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.setWindowTitle(self.tr("Find a model for this machine"))
        titles = {"machine": self.tr("This machine"), "task": self.tr("What is it for?"),
                  "choose": self.tr("Recommended models"),
                  "download": self.tr("Download"), "done": self.tr("Ready to chat")}
        self.title.setText(titles[self.current_step()])
        self.back_button.setText(self.tr("Back"))
        self.close_button.setText(self.tr("Close"))
        self._refresh_nav()
        name_controls(self)
