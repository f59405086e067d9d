"""What-if: edit the machine (add or remove GPUs, change RAM), open or save rig files."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import services
from app.accessible import name_controls, set_name
from app.formatting import GIB, fmt_bytes, fmt_gbps
from planner.gpus import GPU_TABLE
from planner.inventory import Inventory

log = logging.getLogger(__name__)


class WhatIfDialog(QDialog):
    """Edits a copy of an inventory; ``sig_rig_accepted`` carries the edited one."""

    sig_rig_accepted = Signal(object)  # Inventory

    def __init__(self, base: Inventory, detected: Inventory | None,
                 parent: QWidget | None = None,
                 on_error: Callable[[BaseException], object] | None = None) -> None:
        super().__init__(parent)
        self._on_error = on_error
        self.rig = base
        self._detected = detected
        self.gpu_list = QListWidget()
        self.card = QComboBox()
        for spec in GPU_TABLE:
            if not spec.unified_memory:
                self.card.addItem(f"{spec.name} · {fmt_bytes(spec.vram_bytes)} · "
                                  f"{fmt_gbps(spec.bandwidth_gbps)}", spec.key)
        self.add_button = QPushButton()
        self.add_button.clicked.connect(self._on_add_clicked)
        self.remove_button = QPushButton()
        self.remove_button.clicked.connect(self._on_remove_clicked)
        add_row = QHBoxLayout()
        add_row.addWidget(self.card, 1)
        add_row.addWidget(self.add_button)
        add_row.addWidget(self.remove_button)
        self.ram = QDoubleSpinBox()
        self.ram.setRange(1, 4096)
        self.ram.setDecimals(1)  # a machine's 23.5 GiB is not shown as 24
        self.ram.setSuffix(" GiB")
        self.ram_bw = QDoubleSpinBox()
        self.ram_bw.setRange(1, 2000)
        self.ram_bw.setDecimals(0)
        self.ram_bw.setSuffix(" GB/s")
        self.ram.valueChanged.connect(self._on_ram_changed)
        self.ram_bw.valueChanged.connect(self._on_ram_changed)
        self.form = QFormLayout()
        self.ram_label, self.bw_label = QLabel(), QLabel()
        self.form.addRow(self.ram_label, self.ram)
        self.form.addRow(self.bw_label, self.ram_bw)
        self.open_button, self.save_button, self.reset_button = (
            QPushButton(), QPushButton(), QPushButton())
        self.open_button.clicked.connect(self._on_open_clicked)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.reset_button.clicked.connect(self._on_reset_clicked)
        files = QHBoxLayout()
        files.addWidget(self.open_button)
        files.addWidget(self.save_button)
        files.addWidget(self.reset_button)
        files.addStretch(1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.gpus_label = QLabel()
        layout = QVBoxLayout(self)
        layout.addWidget(self.gpus_label)
        layout.addWidget(self.gpu_list)
        layout.addLayout(add_row)
        layout.addLayout(self.form)
        layout.addLayout(files)
        layout.addWidget(self.buttons)
        self.resize(640, 480)
        self.retranslate()
        self.set_rig(base)

    def set_rig(self, rig: Inventory) -> None:
        """Show ``rig`` (the copy being edited)."""
        self.rig = rig
        self.gpu_list.clear()
        for gpu in rig.gpus:
            self.gpu_list.addItem(f"{gpu.index}: {gpu.name} · {fmt_bytes(gpu.total_bytes)} · "
                                  f"{fmt_gbps(gpu.bandwidth_gbps)}")
        for spin, value in ((self.ram, rig.host.ram_total_bytes / GIB),
                            (self.ram_bw, rig.host.bandwidth_gbps)):
            spin.blockSignals(True)
            spin.setValue(round(value, spin.decimals()))
            spin.blockSignals(False)

    def add_gpu(self, key: str) -> None:
        """Add a GPU from the table of common cards (all of its memory free)."""
        spec = next(s for s in GPU_TABLE if s.key == key)
        self.set_rig(self.rig.with_gpus((*self.rig.gpus, spec.to_gpu(len(self.rig.gpus)))))

    def remove_gpu(self, position: int) -> None:
        """Remove the GPU at ``position``."""
        gpus = tuple(g for i, g in enumerate(self.rig.gpus) if i != position)
        self.set_rig(self.rig.with_gpus(gpus))

    def set_ram(self, total_bytes: int, bandwidth_gbps: float | None = None) -> None:
        """Change the RAM (what is available grows or shrinks with it)."""
        host = self.rig.host
        in_use = max(0, host.ram_total_bytes - host.ram_available_bytes)
        new_host = dataclasses.replace(
            host, ram_total_bytes=total_bytes,
            ram_available_bytes=max(0, total_bytes - in_use),
            bandwidth_gbps=bandwidth_gbps or host.bandwidth_gbps)
        self.set_rig(dataclasses.replace(self.rig, host=new_host))

    def accept(self) -> None:
        self.sig_rig_accepted.emit(self.rig)
        super().accept()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.setWindowTitle(self.tr("What if: edit the machine"))
        self.gpus_label.setText(self.tr("GPUs"))
        set_name(self.gpu_list, self.tr("GPUs"))
        set_name(self.card, self.tr("GPU to add"))
        self.add_button.setText(self.tr("Add GPU"))
        self.remove_button.setText(self.tr("Remove selected"))
        self.ram_label.setText(self.tr("RAM"))
        self.bw_label.setText(self.tr("RAM bandwidth"))
        self.open_button.setText(self.tr("Open rig file…"))
        self.save_button.setText(self.tr("Save rig file…"))
        self.reset_button.setText(self.tr("Back to this machine"))
        self.reset_button.setEnabled(self._detected is not None)
        name_controls(self)

    def _on_add_clicked(self) -> None:
        self.add_gpu(str(self.card.currentData()))

    def _on_remove_clicked(self) -> None:
        row = self.gpu_list.currentRow()
        if row >= 0:
            self.remove_gpu(row)

    def _on_ram_changed(self) -> None:
        self.set_ram(int(self.ram.value() * GIB), self.ram_bw.value())

    def _on_reset_clicked(self) -> None:
        if self._detected is not None:
            self.set_rig(self._detected)

    def _on_open_clicked(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, self.tr("Open a rig file"), "",
                                              self.tr("Rig files (*.json)"))
        if name:
            try:
                self.set_rig(services.read_rig(Path(name)))
            except (OSError, ValueError) as exc:  # InventoryError and bad JSON included
                self._report(exc)

    def _on_save_clicked(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, self.tr("Save the rig file"), "rig.json",
                                              self.tr("Rig files (*.json)"))
        if name:
            try:
                services.write_rig(self.rig, Path(name))
            except OSError as exc:
                self._report(exc)

    def _report(self, exc: BaseException) -> None:
        if self._on_error is None:
            raise exc
        self._on_error(exc)
