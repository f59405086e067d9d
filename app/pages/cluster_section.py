"""The Cluster section of the Settings page: RPC workers by address, what each serves.

Adding, removing and checking go through :class:`app.cluster_control.ClusterControl`
(probes run off the UI thread); this widget only shows the list and takes the clicks.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.cluster_control import CHECKING, LOST, REACHABLE, ClusterControl, WorkerStatus
from app.formatting import fmt_bytes
from app.theme import warning_color

log = logging.getLogger(__name__)

WORKER_COMMAND = "loadout worker --host 0.0.0.0 --port 50052 --allow-remote"
TABLE_ROWS_SHOWN = 4


class ClusterSection(QGroupBox):
    """Workers (address and state), an address field with Add, Remove, Check again."""

    def __init__(self, cluster: ClusterControl, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("clusterSection")
        self._cluster = cluster
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.warning = QLabel()
        self.warning.setObjectName("clusterWarning")
        self.warning.setWordWrap(True)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.command = QLineEdit(WORKER_COMMAND)
        self.command.setReadOnly(True)  # selectable, to copy to the other computer
        self.command.setObjectName("workerCommand")
        self.table = QTableWidget(0, 2)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._refresh_buttons)
        self.empty = QLabel()
        self.error = QLabel()
        self.error.setObjectName("workerAddressError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        self.address = QLineEdit()
        self.address.setObjectName("workerAddress")
        self.address.returnPressed.connect(self._on_add_clicked)
        self.address.textEdited.connect(lambda _text: self.error.setVisible(False))
        self.add_button = QPushButton()
        self.add_button.clicked.connect(self._on_add_clicked)
        self.remove_button = QPushButton()
        self.remove_button.clicked.connect(self._on_remove_clicked)
        self.check_button = QPushButton()
        self.check_button.clicked.connect(lambda: self._cluster.check())
        add_row = QHBoxLayout()
        add_row.addWidget(self.address, 1)
        add_row.addWidget(self.add_button)
        buttons = QHBoxLayout()
        buttons.addWidget(self.remove_button)
        buttons.addWidget(self.check_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        for widget in (self.intro, self.warning, self.hint, self.command, self.table,
                       self.empty):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        layout.addLayout(add_row)
        layout.addWidget(self.error)
        cluster.sig_workers_changed.connect(self.refresh)
        self.retranslate()

    # -- texts ------------------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() == QEvent.Type.PaletteChange:
            self._color_warning()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.setTitle(self.tr("Cluster"))
        self.intro.setText(self.tr(
            "Pool other computers' GPUs (or RAM) with this one: each runs a worker, and its "
            "devices join the plan and the memory map."))
        self.warning.setText(self.tr(
            "⚠ The RPC protocol has no authentication and no encryption: add workers on a "
            "trusted local network only."))
        self.hint.setText(self.tr("On the other computer, run:"))
        self.table.setHorizontalHeaderLabels([self.tr("Worker"), self.tr("State")])
        self.empty.setText(self.tr("No workers: plans use this computer only."))
        self.address.setPlaceholderText(self.tr("Address, e.g. 192.168.1.7:50052"))
        self.add_button.setText(self.tr("Add"))
        self.remove_button.setText(self.tr("Remove"))
        self.check_button.setText(self.tr("Check again"))
        self._color_warning()
        self.refresh()

    def _color_warning(self) -> None:
        color = warning_color()
        for label in (self.warning, self.error):
            label.setStyleSheet(f"color: {color}")

    def state_text(self, worker: WorkerStatus) -> str:
        """One worker's state as a sentence."""
        if worker.state == CHECKING:
            return self.tr("Checking…")
        if worker.state == REACHABLE:
            parts = []
            for i, gpu in enumerate(worker.devices):
                name = self.tr("CPU {index}") if gpu.worker_cpu else self.tr("GPU {index}")
                parts.append(self.tr("{device}: {free} free of {total}").format(
                    device=name.format(index=i), free=fmt_bytes(gpu.free_bytes),
                    total=fmt_bytes(gpu.total_bytes)))
            return self.tr("Reachable, {count} device(s): {devices}").format(
                count=len(worker.devices), devices="; ".join(parts))
        if worker.state == LOST:
            return self.tr("Left out: it went away while the engine was using it. Start it "
                           "again there, then check again.")
        return self.tr("Unreachable: {reason}").format(reason=self.reason_text(worker.reason))

    def reason_text(self, reason: str) -> str:
        """Why a worker cannot be used, from its reason code."""
        texts = {
            "refused": self.tr("nothing listens at that port (is the worker running?)"),
            "timeout": self.tr("no answer in time (wrong address, or a firewall?)"),
            "busy": self.tr("busy: it serves another Loadout now"),
            "version": self.tr("it speaks another protocol version (use the same Loadout "
                               "version on both computers)"),
            "protocol": self.tr("it answered, but not as a Loadout worker"),
            "no_devices": self.tr("it serves no device"),
            "bad_address": self.tr("not a worker address"),
        }
        if reason in texts:
            return texts[reason]
        detail = reason.removeprefix("unreachable:").strip()
        return self.tr("cannot be reached ({detail})").format(detail=detail or reason)

    # -- list -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Show every worker and its state."""
        selected = self.selected()
        workers = self._cluster.workers()
        self.table.setRowCount(len(workers))
        for row, worker in enumerate(workers):
            address = QTableWidgetItem(worker.endpoint)
            address.setData(Qt.ItemDataRole.UserRole, worker.endpoint)
            state = QTableWidgetItem(self.state_text(worker))
            state.setToolTip(state.text())
            self.table.setItem(row, 0, address)
            self.table.setItem(row, 1, state)
            if worker.endpoint == selected:
                self.table.selectRow(row)
        self.table.resizeRowsToContents()
        shown = range(min(TABLE_ROWS_SHOWN, len(workers)))  # more rows scroll
        self.table.setFixedHeight(self.table.horizontalHeader().sizeHint().height()
                                  + 2 * self.table.frameWidth() + 2
                                  + sum(self.table.rowHeight(r) for r in shown))
        self.table.setVisible(bool(workers))
        self.empty.setVisible(not workers)
        self._refresh_buttons()

    def selected(self) -> str | None:
        """The address of the worker selected in the list."""
        row = self.table.currentRow()
        item = self.table.item(row, 0) if row >= 0 else None
        if item is None or not self.table.selectionModel().hasSelection():
            return None
        return str(item.data(Qt.ItemDataRole.UserRole))

    def select(self, endpoint: str) -> None:
        """Select the row of ``endpoint``."""
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == endpoint:
                self.table.selectRow(row)

    def _refresh_buttons(self) -> None:
        self.remove_button.setEnabled(self.selected() is not None)
        self.check_button.setEnabled(bool(self._cluster.workers()))

    # -- events -----------------------------------------------------------------------
    def _on_add_clicked(self) -> None:
        text = self.address.text().strip()
        if not text:
            return
        try:
            address = self._cluster.add(text)
        except ValueError:
            self.error.setText(self.tr(
                "“{text}” is not a worker address. Write HOST:PORT, for example "
                "192.168.1.7:50052 (the port is 50052 when left out).").format(text=text))
            self.error.setVisible(True)
            return
        self.error.setVisible(False)
        self.address.clear()
        self.select(address)

    def _on_remove_clicked(self) -> None:
        endpoint = self.selected()
        if endpoint is not None:
            self._cluster.remove(endpoint)
