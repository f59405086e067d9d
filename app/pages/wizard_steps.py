"""The model wizard's short steps: the machine, the task, and the finished download."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from app.formatting import fmt_bytes, fmt_gbps
from app.settings_store import TASK_KINDS
from app.texts import task_text
from app.wizard_jobs import free_disk_bytes, models_folder
from planner.inventory import Inventory

log = logging.getLogger(__name__)


def _hint_label() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    return label


class MachineStep(QWidget):
    """What the recommendations are planned for: GPUs, RAM, the disk downloads go to."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._inventory: Inventory | None = None
        self._whatif = False
        self.intro = _hint_label()
        self.form = QFormLayout()
        self.form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        self.gpu_name, self.gpu_value = QLabel(), QLabel()
        self.ram_name, self.ram_value = QLabel(), QLabel()
        self.cpu_name, self.cpu_value = QLabel(), QLabel()
        self.disk_name, self.disk_value = QLabel(), QLabel()
        for name, value in ((self.gpu_name, self.gpu_value), (self.ram_name, self.ram_value),
                            (self.cpu_name, self.cpu_value), (self.disk_name, self.disk_value)):
            name.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.form.addRow(name, value)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addSpacing(8)
        layout.addLayout(self.form)
        layout.addStretch(1)
        self.retranslate()

    def set_machine(self, inventory: Inventory | None, whatif: bool) -> None:
        """Show ``inventory`` (None: still detecting)."""
        self._inventory, self._whatif = inventory, whatif
        self.refresh()

    def refresh(self) -> None:
        """Fill in the figures (free disk space is read again each time)."""
        inv = self._inventory
        if inv is None:
            self.intro.setText(self.tr("Still detecting this machine's hardware… The next "
                                       "step opens as soon as it is known."))
            for value in (self.gpu_value, self.ram_value, self.cpu_value, self.disk_value):
                value.setText("—")
            return
        self.intro.setText(
            self.tr("Models are recommended for the edited what-if rig below (Plan page).")
            if self._whatif else
            self.tr("Models are recommended for this machine, as detected:"))
        gpus = [self.tr("{name}: {free} free of {total} VRAM, {bandwidth}").format(
            name=g.name, free=fmt_bytes(g.free_bytes), total=fmt_bytes(g.total_bytes),
            bandwidth=fmt_gbps(g.bandwidth_gbps)) for g in inv.gpus]
        self.gpu_value.setText("\n".join(gpus) if gpus else
                               self.tr("None: models run on the CPU, from RAM."))
        h = inv.host
        self.ram_value.setText(self.tr("{available} available of {total}, {bandwidth}").format(
            available=fmt_bytes(h.ram_available_bytes), total=fmt_bytes(h.ram_total_bytes),
            bandwidth=fmt_gbps(h.bandwidth_gbps)))
        self.cpu_value.setText(self.tr("{cpu}, {cores} cores").format(cpu=h.cpu,
                                                                       cores=h.cores))
        folder = models_folder()
        self.disk_value.setText(self.tr("{free} free in {folder}").format(
            free=fmt_bytes(free_disk_bytes(folder)), folder=folder))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.gpu_name.setText(self.tr("GPUs"))
        self.ram_name.setText(self.tr("Memory (RAM)"))
        self.cpu_name.setText(self.tr("Processor"))
        self.disk_name.setText(self.tr("Disk for downloads"))
        self.refresh()


class TaskStep(QWidget):
    """What the model is for: it changes the ranking and the speculation chosen."""

    def __init__(self, default_task: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.intro = _hint_label()
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        self.hints: dict[str, QLabel] = {}
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addSpacing(8)
        for task in TASK_KINDS:
            button = QRadioButton()
            font = button.font()
            font.setBold(True)
            button.setFont(font)
            hint = _hint_label()
            hint.setContentsMargins(button.iconSize().width() + 10, 0, 0, 6)
            self.group.addButton(button)
            self.buttons[task], self.hints[task] = button, hint
            layout.addWidget(button)
            layout.addWidget(hint)
        layout.addStretch(1)
        self.set_task(default_task if default_task in TASK_KINDS else TASK_KINDS[0])
        self.retranslate()

    def task(self) -> str:
        """The task chosen."""
        return next(t for t, b in self.buttons.items() if b.isChecked())

    def set_task(self, task: str) -> None:
        """Choose ``task``."""
        self.buttons[task].setChecked(True)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.intro.setText(self.tr("What will you use the model for? Models are rated per "
                                   "task, and the speed needed differs."))
        hints = {"chat": self.tr("Questions, explanations, everyday conversation."),
                 "code": self.tr("Writing, reviewing and fixing code; wants more speed."),
                 "agent": self.tr("Tool calls and multi-step tasks; wants more speed and no "
                                  "very low-bit files."),
                 "math": self.tr("Step-by-step reasoning with numbers."),
                 "creative": self.tr("Stories, letters, brainstorming.")}
        for task, button in self.buttons.items():
            button.setText(task_text(task))
            self.hints[task].setText(hints[task])


class DoneStep(QWidget):
    """The model is here: load it and chat, or look at its plan first."""

    sig_load_and_chat_requested = Signal(object)  # Path
    sig_plan_requested = Signal(object)           # Path

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path: Path | None = None
        self._name = ""
        self.unverified = False  # the hub gave no sha256 to check the download against
        self.message = QLabel()
        self.message.setWordWrap(True)
        font = self.message.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        self.message.setFont(font)
        self.where = _hint_label()
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.load_button = QPushButton()
        self.load_button.clicked.connect(self._on_load_clicked)
        self.plan_button = QPushButton()
        self.plan_button.clicked.connect(self._on_plan_clicked)
        buttons = QHBoxLayout()
        buttons.addWidget(self.load_button)
        buttons.addWidget(self.plan_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.where)
        layout.addSpacing(12)
        layout.addLayout(buttons)
        layout.addStretch(1)
        self.retranslate()

    def set_model(self, name: str, path: Path, unverified: bool = False) -> None:
        """The model that was downloaded (or was here already); ``unverified``: kept
        without a sha256 from the hub to check it by."""
        self._name, self.path, self.unverified = name, path, unverified
        self.retranslate()

    def _on_load_clicked(self) -> None:
        if self.path is not None:
            self.sig_load_and_chat_requested.emit(self.path)

    def _on_plan_clicked(self) -> None:
        if self.path is not None:
            self.sig_plan_requested.emit(self.path)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        if self.unverified:
            self.message.setText(self.tr("{name} is downloaded but not verified: the hub "
                                         "gave no sha256 to check it against.").format(
                name=self._name))
        else:
            self.message.setText(self.tr("✓ {name} is downloaded and verified.").format(
                name=self._name))
        self.where.setText(self.tr("Saved as {path}. It is listed on the Models page from "
                                   "now on.").format(path=self.path or ""))
        self.load_button.setText(self.tr("Load and chat"))
        self.load_button.setToolTip(self.tr("Plan it for this machine, start the engine, "
                                            "then open the chat."))
        self.plan_button.setText(self.tr("See its plan first"))
