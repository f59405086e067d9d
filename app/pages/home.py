"""Home: this machine at a glance — GPUs, RAM, disks — detected off the UI thread."""

from __future__ import annotations

import logging
import statistics
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app import calibration_job
from app.formatting import fmt_bytes, fmt_gbps, fmt_tps
from app.state import AppState
from app.texts import disk_kind_text, plan_roles, role_text
from app.workers import Job, WorkerRunner

log = logging.getLogger(__name__)


def _fit_rows(table: QTableWidget, minimum_rows: int = 1) -> None:
    """Make ``table`` exactly as tall as its rows (no empty expanse below them)."""
    rows = max(minimum_rows, table.rowCount())
    height = table.horizontalHeader().height() + 2 * table.frameWidth() + 2
    height += sum(table.rowHeight(r) for r in range(table.rowCount()))
    height += (rows - table.rowCount()) * table.verticalHeader().defaultSectionSize()
    table.setFixedHeight(height)


def _table(columns: int) -> QTableWidget:
    table = QTableWidget(0, columns)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    table.verticalHeader().setVisible(False)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


class HomePage(QWidget):
    """This machine: each GPU (name, VRAM, bandwidth, role), RAM, disks."""

    sig_detect_requested = Signal()
    sig_whatif_requested = Signal()

    sig_measured = Signal(object)  # the calibration's document, once it is recorded

    def __init__(self, state: AppState, runner: WorkerRunner | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._runner = runner
        # what "Measure this machine" runs: ``loadout calibrate MODEL --json ARGUMENTS``
        self.measure_model = "demo"
        self.measure_arguments: list[str] = []
        self._detecting = False
        self._step = ""
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.status = QLabel()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy indicator while detection runs
        self.progress.setMaximumWidth(240)
        self.progress.setVisible(False)
        self.detect_button = QPushButton()
        self.detect_button.clicked.connect(self.sig_detect_requested)
        self.whatif_button = QPushButton()
        self.whatif_button.clicked.connect(self.sig_whatif_requested)
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addStretch(1)
        top.addWidget(self.progress)
        top.addWidget(self.detect_button)
        top.addWidget(self.whatif_button)
        self.measure_button = QPushButton()
        self.measure_button.setEnabled(runner is not None)
        self.measure_button.clicked.connect(self.start_measuring)
        self.stop_measure_button = QPushButton()  # a minute is long: it can be stopped
        self.stop_measure_button.setVisible(False)
        self.stop_measure_button.clicked.connect(self.stop_measuring)
        self._measure_stopped = False
        self.measure_progress = QProgressBar()
        self.measure_progress.setMaximumWidth(240)
        self.measure_progress.setVisible(False)
        self.measure_status = QLabel()
        self.measure_status.setWordWrap(True)
        measure_row = QHBoxLayout()
        measure_row.addWidget(self.measure_button)
        measure_row.addWidget(self.stop_measure_button)
        measure_row.addWidget(self.measure_progress)
        measure_row.addWidget(self.measure_status, 1)

        self.gpu_box = QGroupBox()
        self.gpu_table = _table(5)
        self.no_gpu = QLabel()
        gpu_layout = QVBoxLayout(self.gpu_box)
        gpu_layout.addWidget(self.gpu_table)
        gpu_layout.addWidget(self.no_gpu)
        self.host_box = QGroupBox()
        self.host_label = QLabel()
        self.host_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        QVBoxLayout(self.host_box).addWidget(self.host_label)
        self.disk_box = QGroupBox()
        self.disk_table = _table(3)
        QVBoxLayout(self.disk_box).addWidget(self.disk_table)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addLayout(measure_row)
        layout.addWidget(self.gpu_box)
        layout.addWidget(self.host_box)
        layout.addWidget(self.disk_box)
        layout.addStretch(1)
        state.sig_detected_changed.connect(self.refresh)
        state.sig_plan_changed.connect(lambda _plan: self.refresh())
        self.retranslate()

    def set_detecting(self, detecting: bool) -> None:
        """Show or hide the detection progress state."""
        self._detecting = detecting
        self._step = ""
        self.progress.setRange(0, 0)  # busy until the first step reports
        self.progress.setVisible(detecting)
        self.detect_button.setEnabled(not detecting)
        self._update_status()

    def set_progress(self, step: str, fraction: float) -> None:
        """Show which detection step runs and how far it got."""
        self._detecting = True
        self._step = step
        self.progress.setVisible(True)
        self.progress.setRange(0, 100)
        self.progress.setValue(int(fraction * 100))
        self._update_status()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.title.setText(self.tr("This machine"))
        self.detect_button.setText(self.tr("Detect again"))
        self.whatif_button.setText(self.tr("What if…"))
        self.whatif_button.setToolTip(self.tr("Plan for an edited machine: add or remove "
                                              "GPUs, change RAM, open or save rig files"))
        self.measure_button.setText(self.tr("Measure this machine"))
        self.measure_button.setAccessibleName(self.tr("Measure this machine"))
        self.measure_button.setToolTip(self.tr(
            "Run a small model for about a minute, so that speed predictions learn this "
            "machine"))
        self.stop_measure_button.setText(self.tr("Stop"))
        self.stop_measure_button.setToolTip(self.tr(
            "Stop measuring (the runs it already made still count)"))
        self.gpu_box.setTitle(self.tr("GPUs"))
        self.host_box.setTitle(self.tr("Memory and CPU"))
        self.disk_box.setTitle(self.tr("Disks"))
        self.no_gpu.setText(self.tr("No GPU found: models run on the CPU from RAM."))
        self.gpu_table.setHorizontalHeaderLabels([
            self.tr("GPU"), self.tr("VRAM free / total"), self.tr("Bandwidth"),
            self.tr("Role"), self.tr("Why")])
        self.disk_table.setHorizontalHeaderLabels([
            self.tr("Folder"), self.tr("Kind"), self.tr("Read speed")])
        self.refresh()

    def _update_status(self) -> None:
        if self._detecting:
            steps = {"host": self.tr("Detecting hardware: CPU and RAM…"),
                     "gpus": self.tr("Detecting hardware: GPUs…"),
                     "engine": self.tr("Detecting hardware: engine devices…"),
                     "host_bandwidth": self.tr("Measuring RAM bandwidth…"),
                     "cpu_cores": self.tr("Measuring what one CPU core computes…"),
                     "gpu_bandwidth": self.tr("Measuring GPU bandwidth…"),
                     "disks": self.tr("Measuring disk read speed…"),
                     "done": self.tr("Detection finished.")}
            self.status.setText(steps.get(self._step, self.tr("Detecting hardware…")))
        elif self._state.detected is None:
            self.status.setText(self.tr("Hardware not detected yet."))
        else:
            self.status.setText(self.tr("Detected."))

    def refresh(self) -> None:
        """Fill the tables from the detected inventory and the newest plan's roles."""
        self._update_status()
        inv = self._state.detected
        gpus = inv.gpus if inv is not None else ()
        roles = plan_roles(self._state.plan) if self._state.whatif is None else {}
        self.gpu_table.setRowCount(len(gpus))
        for row, gpu in enumerate(gpus):
            role, reason = roles.get(gpu.index, ("", ""))
            cells = [gpu.name, f"{fmt_bytes(gpu.free_bytes)} / {fmt_bytes(gpu.total_bytes)}",
                     fmt_gbps(gpu.bandwidth_gbps),
                     role_text(role) if role else self.tr("pick a model to see"),
                     reason]
            for col, text in enumerate(cells):
                self.gpu_table.setItem(row, col, QTableWidgetItem(text))
        self.gpu_table.resizeRowsToContents()
        _fit_rows(self.gpu_table)
        self.gpu_table.setVisible(bool(gpus))
        self.no_gpu.setVisible(inv is not None and not gpus)
        if inv is None:
            self.host_label.setText("—")
        else:
            h = inv.host
            self.host_label.setText(self.tr(
                "RAM {available} available of {total} · {bandwidth} · {cpu}, "
                "{cores} cores / {threads} threads").format(
                available=fmt_bytes(h.ram_available_bytes), total=fmt_bytes(h.ram_total_bytes),
                bandwidth=fmt_gbps(h.bandwidth_gbps), cpu=h.cpu, cores=h.cores,
                threads=h.threads))
        disks = inv.disks if inv is not None else ()
        self.disk_table.setRowCount(len(disks))
        for row, disk in enumerate(disks):
            cells = [disk.path, disk_kind_text(disk.kind.value), fmt_gbps(disk.read_gbps)]
            for col, text in enumerate(cells):
                self.disk_table.setItem(row, col, QTableWidgetItem(text))
        self.disk_table.resizeRowsToContents()
        _fit_rows(self.disk_table)

    # -- measuring this machine (loadout calibrate in a child process) ---------------------
    def start_measuring(self) -> None:
        """Run the one-minute calibration off the UI thread; the next plan uses it."""
        if self._runner is None or self._runner.busy("calibrate"):
            return
        argv = calibration_job.command(self.measure_model, extra=self.measure_arguments)

        def job(j: Job) -> Any:
            return calibration_job.measure(argv, j.progress, lambda: j.cancelled)

        self.measure_button.setEnabled(False)
        self._measure_stopped = False
        self.stop_measure_button.setVisible(True)
        self.stop_measure_button.setEnabled(True)
        self.measure_progress.setRange(0, 0)  # busy while the model loads
        self.measure_progress.setVisible(True)
        self.measure_status.setText(self.tr("Measuring this machine: loading a small model…"))
        self._runner.submit("calibrate", job, self._on_measured,
                            on_progress=self._on_measure_progress,
                            on_failed=self._on_measure_failed)

    def stop_measuring(self) -> None:
        """End the calibration running (its process is ended; nothing more is recorded)."""
        if self._runner is None or not self._runner.busy("calibrate"):
            return
        self._measure_stopped = True
        self.stop_measure_button.setEnabled(False)
        self.measure_status.setText(self.tr("Stopping the measurement…"))
        self._runner.cancel("calibrate")

    def _on_measure_progress(self, value: object) -> None:
        if not isinstance(value, calibration_job.RunProgress):
            return
        self.measure_status.setText(self.tr(
            "Measuring this machine: run {run}, decode {decode} t/s, prefill {prefill} t/s…"
            ).format(run=value.run, decode=fmt_tps(value.decode_tps),
                     prefill=fmt_tps(value.prefill_tps)))

    def _on_measured(self, doc: Any) -> None:
        self.measure_button.setEnabled(True)
        self.stop_measure_button.setVisible(False)
        self.measure_progress.setVisible(False)
        if not isinstance(doc, dict):
            self.measure_status.setText(self.tr("Measuring stopped.") if self._measure_stopped
                                        else "")
            if self._measure_stopped:
                self._state.sig_runs_recorded.emit()  # runs made before the stop count
            return
        runs = [r for r in doc.get("runs", []) if isinstance(r, dict)]
        decode = [float(r.get("decode_tps") or 0.0) for r in runs]
        predicted = doc.get("predicted") or {}
        calibration = predicted.get("calibration") or {}
        self.measure_status.setText(self.tr(
            "Measured {count} runs: decode {decode} t/s (median). Plans are now calibrated "
            "on {runs} runs on this machine.").format(
            count=len(runs), decode=fmt_tps(statistics.median(decode) if decode else 0.0),
            runs=int(calibration.get("runs", 0))))
        self._state.sig_runs_recorded.emit()
        self.sig_measured.emit(doc)

    def _on_measure_failed(self, exc: BaseException) -> None:
        self.measure_button.setEnabled(True)
        self.stop_measure_button.setVisible(False)
        self.measure_progress.setVisible(False)
        self.measure_status.setText(self.tr("Measuring failed: {error}").format(error=exc))
