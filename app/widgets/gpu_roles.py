"""GPU roles: a Main / Helper / Off switch per GPU, and the order their layers follow."""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QGridLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QWidget,
)

from app.accessible import set_name
from app.texts import role_text

log = logging.getLogger(__name__)

ROLES = ("main", "helper", "off")


class GpuRoles(QWidget):
    """One row per GPU. The planner's roles show until the user switches one.

    ``overrides`` holds the roles the user chose (GPU index -> role); ``order`` the GPU
    indices in the order their layer ranges follow.
    """

    sig_roles_edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._names: dict[int, str] = {}
        self._planned: dict[int, str] = {}
        self.overrides: dict[int, str] = {}
        self.order: list[int] = []
        self.buttons: dict[tuple[int, str], QToolButton] = {}
        self.name_labels: dict[int, QLabel] = {}
        self.reset_button = QPushButton()
        self.reset_button.clicked.connect(self._on_reset_clicked)
        self.empty = QLabel()
        self._rebuild()

    def set_gpus(self, names: dict[int, str]) -> None:
        """New machine: GPU index -> name. Clears the user's choices."""
        self._names = dict(names)
        self.overrides = {}
        self.order = sorted(names)
        self._rebuild()

    def set_planned(self, roles: dict[int, str], reasons: dict[int, str] | None = None
                    ) -> None:
        """The roles the newest plan gave (shown where the user chose nothing), and why
        (shown when hovering the GPU's name)."""
        self._planned = dict(roles)
        for index, label in self.name_labels.items():
            label.setToolTip((reasons or {}).get(index, ""))
        self._sync_checks()

    def roles(self) -> tuple[str, ...] | None:
        """One role per GPU in inventory order, or None when the planner decides."""
        if not self.overrides:
            return None
        return tuple(self.overrides.get(i, self._planned.get(i, "helper"))
                     for i in sorted(self._names))

    def gpu_order(self) -> tuple[int, ...] | None:
        """GPU indices in the user's order, or None when unchanged."""
        return tuple(self.order) if self.order != sorted(self._names) else None

    def set_role(self, index: int, role: str) -> None:
        """Switch GPU ``index`` to ``role`` (as a click does)."""
        self.overrides[index] = role
        self._sync_checks()
        self.sig_roles_edited.emit()

    def move_gpu(self, index: int, step: int) -> None:
        """Move GPU ``index`` earlier (-1) or later (+1) in the order."""
        pos = self.order.index(index)
        new = max(0, min(len(self.order) - 1, pos + step))
        if new != pos:
            self.order.insert(new, self.order.pop(pos))
            self._rebuild()
            self.sig_roles_edited.emit()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        for (index, role), button in self.buttons.items():
            button.setText(role_text(role))
            set_name(button, self.tr("GPU {index}: {role}").format(
                index=index, role=role_text(role)))
        self.reset_button.setText(self.tr("Let the planner choose"))
        self.empty.setText(self.tr("No GPU: everything runs on the CPU."))
        for widget in self.findChildren(QToolButton, "moveUp"):
            widget.setToolTip(self.tr("Earlier in the order (holds the first layers)"))
            set_name(widget, self.tr("Earlier in the order"))
        for widget in self.findChildren(QToolButton, "moveDown"):
            widget.setToolTip(self.tr("Later in the order"))
            set_name(widget, self.tr("Later in the order"))

    def _rebuild(self) -> None:
        while self._grid.count():
            item = self._grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None and widget not in (self.reset_button, self.empty):
                widget.deleteLater()
        self.buttons = {}
        self.name_labels = {}
        for row, index in enumerate(self.order):
            name = QLabel(f"{index}: {self._names.get(index, '?')}")
            self.name_labels[index] = name
            self._grid.addWidget(name, row, 0)
            group = QButtonGroup(self)
            for col, role in enumerate(ROLES, start=1):
                button = QToolButton()
                button.setCheckable(True)
                button.setObjectName(f"role_{index}_{role}")
                button.clicked.connect(lambda _c=False, i=index, r=role: self.set_role(i, r))
                group.addButton(button)
                self._grid.addWidget(button, row, col)
                self.buttons[(index, role)] = button
            up, down = QToolButton(), QToolButton()
            up.setObjectName("moveUp")
            down.setObjectName("moveDown")
            up.setArrowType(up.arrowType().UpArrow)
            down.setArrowType(down.arrowType().DownArrow)
            up.clicked.connect(lambda _c=False, i=index: self.move_gpu(i, -1))
            down.clicked.connect(lambda _c=False, i=index: self.move_gpu(i, +1))
            self._grid.addWidget(up, row, 4)
            self._grid.addWidget(down, row, 5)
        self._grid.addWidget(self.empty, len(self.order), 0, 1, 6)
        self._grid.addWidget(self.reset_button, len(self.order) + 1, 0, 1, 6)
        self.empty.setVisible(not self.order)
        self.reset_button.setVisible(bool(self.order))
        self._grid.setColumnStretch(0, 1)
        self.retranslate()
        self._sync_checks()

    def _sync_checks(self) -> None:
        for (index, role), button in self.buttons.items():
            chosen = self.overrides.get(index, self._planned.get(index))
            button.setChecked(chosen == role)
            user = index in self.overrides
            font = button.font()
            font.setBold(user and chosen == role)
            button.setFont(font)

    def _on_reset_clicked(self) -> None:
        self.overrides = {}
        self.order = sorted(self._names)
        self._rebuild()
        self.sig_roles_edited.emit()
