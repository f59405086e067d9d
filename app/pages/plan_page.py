"""Plan: the selected model on the selected machine — memory map, controls, speeds, advice.

Every control change builds a :class:`planner.request.Request` and plans off the UI
thread in the ``plan`` lane, where the newest request wins.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.accessible import set_name
from app.formatting import fmt_seconds, fmt_tokens, fmt_tps
from app.pages.whatif_dialog import WhatIfDialog
from app.plan_jobs import run_advice, run_plan, with_gpu_reserve
from app.plan_view import advice, memory_bars, messages, reads_from_disk, weights_on_gpu
from app.state import AppState
from app.texts import code_sentence, kv_text, spec_text, task_text
from app.theme import warning_color
from app.widgets.elided_label import ElidedLabel
from app.widgets.gpu_roles import GpuRoles
from app.widgets.memory_map import MemoryMap
from app.workers import Job, WorkerRunner
from engine import dry_run, run_records
from planner.inventory import Inventory
from planner.plan_types import Plan
from planner.projector import image_ttft_s
from planner.request import Request, Role, SpecMode, SpecRequest, TaskKind

log = logging.getLogger(__name__)

CONTEXT_STEPS: tuple[int, ...] = tuple(1 << n for n in range(11, 21))  # 2K .. 1M
KV_CHOICES = ("auto", "f16", "q8_0", "q4_0")
SPEC_CHOICES = ("auto", "off", "ngram", "mtp")
TASKS = tuple(t.value for t in TaskKind)
ADVICE_DELAY_MS = 250  # controls still this long -> work out the advice


class PlanPage(QWidget):
    """The Plan page; ``last_plan`` is the plan shown, ``plan_latency_s`` its latency."""

    sig_plan_shown = Signal(object)
    sig_advice_shown = Signal(object)
    sig_baseline_shown = Signal(object)
    sig_load_requested = Signal()
    sig_unload_requested = Signal()

    def __init__(self, state: AppState, runner: WorkerRunner,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._runner = runner
        self._busy = False
        self._requested_at = 0.0
        self.last_plan: Plan | None = None
        self.last_advice: Plan | None = None
        self.baseline_plan: Plan | None = None
        self.advice_pending = False
        self.last_request: Request | None = None
        self.plan_latency_s = 0.0
        self.plans_requested = 0
        self._planned_inventory: Inventory | None = None
        self._advice_timer = QTimer(self)
        self._advice_timer.setSingleShot(True)
        self._advice_timer.setInterval(ADVICE_DELAY_MS)
        self._advice_timer.timeout.connect(self._start_advice)
        self._build()
        state.sig_model_changed.connect(self.request_plan)
        state.sig_machine_changed.connect(self._on_whatif_changed)
        state.sig_machine_changed.connect(self._on_machine_changed)
        state.sig_settings_changed.connect(self._on_settings_changed)
        state.sig_runs_recorded.connect(self.request_plan)
        self._on_machine_changed()
        self.task.setCurrentIndex(max(0, TASKS.index(state.settings.default_task)
                                      if state.settings.default_task in TASKS else 0))

    # -- layout -----------------------------------------------------------------------
    def _build(self) -> None:
        self.title = ElidedLabel()  # a long file name never pushes the buttons away
        self.title.setObjectName("pageTitle")
        self.machine_label = QLabel()
        self.whatif_button = QPushButton()
        self.whatif_button.clicked.connect(self.open_whatif)
        self.back_button = QPushButton()
        self.back_button.clicked.connect(lambda: self._state.set_whatif(None))
        self.load_button = QPushButton()
        self.load_button.setObjectName("loadButton")
        self.load_button.setEnabled(False)
        self.load_button.clicked.connect(self.sig_load_requested.emit)
        self.unload_button = QPushButton()
        self.unload_button.setVisible(False)
        self.unload_button.clicked.connect(self.sig_unload_requested.emit)
        self._engine_state = "unloaded"
        self._engine_model: Path | None = None
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(self.machine_label)
        header.addWidget(self.whatif_button)
        header.addWidget(self.back_button)
        header.addWidget(self.load_button)
        header.addWidget(self.unload_button)

        self.controls = QGroupBox()
        self.context = QSlider(Qt.Orientation.Horizontal)
        self.context.setRange(0, len(CONTEXT_STEPS))
        self.context.setPageStep(1)
        self.context_value = QLabel()
        self.context_value.setMinimumWidth(self.fontMetrics().horizontalAdvance("M" * 8))
        ctx_row = QHBoxLayout()
        ctx_row.addWidget(self.context, 1)
        ctx_row.addWidget(self.context_value)
        self.parallel = QSpinBox()
        self.parallel.setRange(1, 64)
        self.kv = QComboBox()
        self.spec = QComboBox()
        self.task = QComboBox()
        for combo, choices in ((self.kv, KV_CHOICES), (self.spec, SPEC_CHOICES),
                               (self.task, TASKS)):
            for code in choices:
                combo.addItem("", code)
        self.form = QFormLayout(self.controls)
        self.form_labels = [QLabel() for _ in range(5)]
        for label, field in zip(self.form_labels, [ctx_row, self.parallel, self.kv, self.spec,
                                                   self.task], strict=True):
            self.form.addRow(label, field)  # type: ignore[call-overload]
        self.roles_box = QGroupBox()
        self.roles = GpuRoles()
        QVBoxLayout(self.roles_box).addWidget(self.roles)

        self.speed_box = QGroupBox()
        speed = QGridLayout(self.speed_box)
        self.speed_names = [QLabel() for _ in range(3)]
        self.speed_values = [QLabel() for _ in range(3)]
        for col, (name, value) in enumerate(zip(self.speed_names, self.speed_values,
                                                strict=True)):
            value.setObjectName("bigNumber")
            font = value.font()
            font.setPointSizeF(font.pointSizeF() * 1.8)
            font.setBold(True)
            value.setFont(font)
            name.setWordWrap(True)  # "time to first token (1024-token prompt)"
            speed.addWidget(value, 0, col)
            speed.addWidget(name, 1, col)
        self.fit_label = QLabel()
        self.fit_label.setObjectName("fitLabel")
        self.fit_label.setWordWrap(True)
        speed.addWidget(self.fit_label, 2, 0, 1, 3)
        self.compare_label = QLabel()
        self.compare_label.setWordWrap(True)
        self.compare_label.setVisible(False)
        speed.addWidget(self.compare_label, 3, 0, 1, 3)
        self.calibration_label = QLabel()  # this machine's correction, raw figures beside
        self.calibration_label.setWordWrap(True)
        self.calibration_label.setVisible(False)
        speed.addWidget(self.calibration_label, 4, 0, 1, 3)
        self.map_box = QGroupBox()
        self.memory_map = MemoryMap()
        QVBoxLayout(self.map_box).addWidget(self.memory_map)
        self.messages_box = QGroupBox()
        self.messages_label = QLabel()
        self.messages_label.setObjectName("planMessages")
        self.messages_label.setWordWrap(True)
        self.messages_label.setTextFormat(Qt.TextFormat.RichText)
        QVBoxLayout(self.messages_box).addWidget(self.messages_label)
        self.advice_box = QGroupBox()
        self.advice_label = QLabel()
        self.advice_label.setWordWrap(True)
        self.advice_label.setTextFormat(Qt.TextFormat.RichText)
        QVBoxLayout(self.advice_box).addWidget(self.advice_label)

        left = QVBoxLayout()
        left.addWidget(self.controls)
        left.addWidget(self.roles_box)
        left.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self.speed_box)
        right.addWidget(self.map_box)
        right.addWidget(self.messages_box)
        right.addWidget(self.advice_box)
        right.addStretch(1)
        body = QHBoxLayout()
        body.addLayout(left, 2)
        body.addLayout(right, 3)
        inner = QWidget()
        inner_layout = QVBoxLayout(inner)
        inner_layout.addLayout(header)
        inner_layout.addLayout(body, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(inner)
        QVBoxLayout(self).addWidget(scroll)
        self.context.valueChanged.connect(self._on_control_changed)
        self.parallel.valueChanged.connect(self._on_control_changed)
        for combo in (self.kv, self.spec, self.task):
            combo.currentIndexChanged.connect(self._on_control_changed)
        self.roles.sig_roles_edited.connect(self.request_plan)
        self.retranslate()

    # -- requests ---------------------------------------------------------------------
    def build_request(self) -> Request:
        """The Request the controls describe."""
        step = self.context.value()
        kv = self.kv.currentData()
        spec = self.spec.currentData()
        roles = self.roles.roles()
        return Request(
            context=CONTEXT_STEPS[step - 1] if step > 0 else None,
            parallel=self.parallel.value(),
            task=TaskKind(self.task.currentData() or "chat"),
            kv_type=None if kv in (None, "auto") else str(kv),
            spec=None if spec in (None, "auto") else SpecRequest(SpecMode(spec)),
            roles=tuple(Role(r) for r in roles) if roles is not None else None,
            gpu_order=self.roles.gpu_order(),
            host_reserve_bytes=self._state.settings.host_reserve_bytes,
            advise=False,
            projector=self._state.projector)

    def request_plan(self) -> None:
        """Plan again for the current model, machine and controls (newest wins)."""
        machine, profile = self._state.machine(), self._state.profile
        self._refresh_header()
        if machine is None or profile is None:
            self._show_empty()
            return
        inventory = with_gpu_reserve(machine, self._state.settings.gpu_reserve_bytes)
        self._planned_inventory = inventory
        request = self.build_request()
        self.last_request = request
        self.plans_requested += 1
        self._requested_at = time.perf_counter()

        path = self._state.model_path
        own_machine = self._state.whatif is None  # a what-if rig has no runs of its own

        def job(_job: Job) -> Plan:  # then llama.cpp's dry run of it (engine.dry_run)
            asked = dataclasses.replace(request, machine_runs=run_records.samples()) \
                if own_machine else request
            checked: Plan = dry_run.confirm_for(path, inventory, asked,
                                                run_plan(inventory, profile, asked))
            return checked

        # The plan itself comes first (fast); its advice costs several more plans, so it
        # starts once the controls have been still for a moment (see _on_plan_done).
        self.advice_pending = True
        self._advice_timer.stop()
        self._runner.submit("plan", job, self._on_plan_done, on_failed=self._on_plan_failed)

    def _request_baseline(self, request: Request) -> None:
        """In what-if mode, also plan for this machine, to compare the speeds."""
        detected, profile = self._state.detected, self._state.profile
        if self._state.whatif is None or detected is None or profile is None:
            return
        inventory = with_gpu_reserve(detected, self._state.settings.gpu_reserve_bytes)
        own = dataclasses.replace(request, roles=None, gpu_order=None)  # its own GPUs

        def job(_job: Job) -> Plan:  # this machine: corrected by its runs, as its own plan
            return run_plan(inventory, profile,
                            dataclasses.replace(own, machine_runs=run_records.samples()))

        self._runner.submit("baseline", job, self._on_baseline_done)

    def _on_baseline_done(self, plan: Plan) -> None:
        if self._state.whatif is None:
            return
        self.baseline_plan = plan
        self._show_baseline()
        self.sig_baseline_shown.emit(plan)

    def _show_baseline(self) -> None:
        if self.baseline_plan is None or self._state.whatif is None:
            self.compare_label.setVisible(False)
            return
        pred = self.baseline_plan.predicted
        self.compare_label.setText(self.tr(
            "This machine, for comparison: decode {decode} t/s, prefill {prefill} t/s, "
            "time to first token {ttft}.").format(
            decode=fmt_tps(pred.decode_tps), prefill=fmt_tps(pred.prefill_tps),
            ttft=fmt_seconds(pred.ttft_s)))
        self.compare_label.setVisible(True)

    def _on_whatif_changed(self) -> None:
        self.baseline_plan = None
        self.compare_label.setVisible(False)

    def set_busy(self, busy: bool) -> None:
        """Show that a model is being read."""
        self._busy = busy
        self._refresh_header()

    def open_whatif(self) -> None:
        """Edit the machine in the what-if dialog; accepting plans for the edited rig."""
        base = self._state.machine()
        if base is None:
            return
        dialog = WhatIfDialog(base, self._state.detected, self, self._runner.report_error)
        dialog.sig_rig_accepted.connect(self._state.set_whatif)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        self.whatif_dialog = dialog

    # -- results ----------------------------------------------------------------------
    def _start_advice(self) -> None:
        inventory, profile, request = self._planned_inventory, self._state.profile, \
            self.last_request
        if inventory is None or profile is None or request is None:
            return

        own_machine = self._state.whatif is None

        def advice_job(_job: Job) -> Plan:  # on this machine's runs, as the plan itself
            asked = dataclasses.replace(request, machine_runs=run_records.samples()) \
                if own_machine else request
            return run_advice(inventory, profile, asked)

        self._runner.submit("advice", advice_job,
                            lambda full: self._on_advice_done(request, full))

    def _on_plan_done(self, plan: Plan) -> None:
        self.plan_latency_s = time.perf_counter() - self._requested_at
        self._advice_timer.start()
        if self.last_request is not None:  # after the plan: never delays it
            self._request_baseline(self.last_request)
        self.last_plan = plan
        self._state.set_plan(plan)
        self._refresh_load_buttons()
        self._show_plan()
        self.sig_plan_shown.emit(plan)

    def _on_advice_done(self, request: Request, plan: Plan) -> None:
        if request != self.last_request:
            return  # a newer request is on its way
        self.advice_pending = False
        self.last_advice = plan
        self._show_advice()
        self.sig_advice_shown.emit(plan)

    def _show_advice(self) -> None:
        plan = self.last_advice if not self.advice_pending else None
        if plan is None:
            self.advice_label.setText(self.tr("Working out what would make this faster…"))
            return
        bottleneck, tips = advice(plan)
        lines = [f"<p><b>{code_sentence(bottleneck)}</b></p>"] if bottleneck else []
        for tip in tips:
            text = self.tr("{advice} → decode {tps} t/s").format(
                advice=code_sentence(tip.code, dict(tip.fields)), tps=fmt_tps(tip.decode_tps))
            lines.append(f"<p>• {text}</p>")
        self.advice_label.setText("".join(lines) or self.tr("No advice for this plan."))

    def set_engine_state(self, state: str, model: Path | None = None) -> None:
        """Follow the engine's state (Load while none runs, Unload while one does) and the
        model it runs (Load again for that one, Load for another)."""
        self._engine_state = state
        self._engine_model = model
        self._refresh_load_buttons()

    def _refresh_load_buttons(self) -> None:
        engine_model = self._engine_model
        selected = self._state.model_path
        running = self._engine_state in ("loading", "ready")
        this_one = running and (engine_model is None or selected is None
                                or Path(engine_model) == Path(selected))
        fits = self.last_plan is not None and self.last_plan.fits
        whatif = self._state.whatif is not None  # planned for hardware not here
        self.load_button.setEnabled(fits and not whatif and self._engine_state != "stopping")
        if whatif:
            self.load_button.setToolTip(self.tr("This plan is for the what-if rig: go back to "
                                                "this machine to load the model."))
        else:
            self.load_button.setToolTip(
                self.tr("Start the engine with this plan, then chat or serve it.") if fits
                else self.tr("This plan does not fit: change the request to load it."))
        self.load_button.setText(self.tr("Load again") if this_one else self.tr("Load"))
        self.unload_button.setVisible(running)

    def _on_plan_failed(self, _error: BaseException) -> None:
        self._show_empty()
        self.fit_label.setText(self.tr("No plan: the planner stopped with an error (see the "
                                       "message)."))

    def _show_empty(self) -> None:
        self.last_plan = None
        self._refresh_load_buttons()
        self.memory_map.set_bars(())
        for value in self.speed_values:
            value.setText("—")
        self.fit_label.setText(self.tr("Pick a model on the Models page to see its plan.")
                               if self._state.profile is None
                               else self.tr("Waiting for this machine's hardware…"))
        self.messages_label.setText("")
        self.advice_label.setText("")
        self.calibration_label.setVisible(False)

    def _show_plan(self) -> None:
        plan = self.last_plan
        if plan is None:
            self._show_empty()
            return
        inventory = self._state.machine()
        names = {g.index: g.name for g in inventory.gpus} if inventory else {}
        self.memory_map.set_bars(memory_bars(plan, names, self._state.profile))
        self.roles.set_planned(
            {r.gpu: r.role.value for r in plan.roles},
            {r.gpu: code_sentence(r.reason.value) for r in plan.roles if r.reason})
        pred, nominal = plan.predicted, plan.speed_nominal
        figures = (fmt_tps(pred.decode_tps), fmt_tps(pred.prefill_tps), fmt_seconds(pred.ttft_s))
        for value, figure in zip(self.speed_values, figures, strict=True):
            # a software device's speed is not predicted: its warning says why
            value.setText("—" if nominal else figure)
            value.setToolTip(self.tr("Nominal figure, not predicted for a software device: "
                                     "{figure}").format(figure=figure) if nominal else "")
        if pred.prompt_tokens:
            self.speed_names[2].setText(self.tr("time to first token ({tokens}-token prompt)")
                                        .format(tokens=pred.prompt_tokens))
        self._show_calibration(plan)
        if not plan.fits:
            summary = self.tr("Does not fit as asked, so it cannot be loaded: choose a shorter "
                              "context here, or a smaller model or quantization on the Models "
                              "page.")
        elif reads_from_disk(plan):
            summary = self.tr("Runs only by reading from disk. Context {context} per sequence "
                              "× {parallel}, KV {kv}, speculation {spec}.")
        else:
            summary = self.tr("Fits. Context {context} per sequence × {parallel}, KV {kv}, "
                              "speculation {spec}.")
        self.fit_label.setText(summary.format(
            context=fmt_tokens(plan.context), parallel=plan.parallel,
            kv=kv_text(plan.kv_type), spec=spec_text(plan.speculative.mode.value)))
        if plan.projector is not None:
            ttft = image_ttft_s(pred.ttft_s, pred.prefill_tps, plan.projector)
            self.fit_label.setText(self.fit_label.text() + " " + self.tr(
                "Reads images: {tokens} tokens each, time to first token with one image "
                "{ttft}.").format(tokens=plan.projector.image_tokens, ttft=fmt_seconds(ttft)))
        check = dry_run.check_of(plan)
        if check is not None:
            self.fit_label.setText(self.fit_label.text() + " " + self._check_text(check))
        on_gpu = weights_on_gpu(plan)
        items = [(m.warning, code_sentence(
            "fits_in_ram" if m.code == "fits" and not on_gpu else m.code, dict(m.fields)))
            for m in messages(plan)]
        warn_color = warning_color()
        self.messages_label.setText("".join(
            f'<p><span style="color: {warn_color}">⚠</span> {text}</p>' if warn
            else f"<p>• {text}</p>" for warn, text in items))
        self._show_advice()

    def _show_calibration(self, plan: Plan) -> None:
        runs = plan.calibration.runs if plan.calibration is not None else 0
        raw = plan.raw_predicted
        self.calibration_label.setVisible(runs > 0 and raw is not None)
        if runs > 0 and raw is not None:
            text = self.tr(
                "Calibrated on one run on this machine. Raw prediction: decode {decode} t/s, "
                "prefill {prefill} t/s, time to first token {ttft}.") if runs == 1 else self.tr(
                "Calibrated on {runs} runs on this machine. Raw prediction: decode {decode} "
                "t/s, prefill {prefill} t/s, time to first token {ttft}.")
            self.calibration_label.setText(text.format(
                runs=runs, decode=fmt_tps(raw.decode_tps), prefill=fmt_tps(raw.prefill_tps),
                ttft=fmt_seconds(raw.ttft_s)))

    def _check_text(self, check: dry_run.Check) -> str:
        rows = check.before or check.devices
        devices = ", ".join(f"{c.device} {c.error_pct:+.0f}%" for c in rows if not c.agrees)
        if check.status == "confirmed":
            return self.tr("Memory confirmed by llama.cpp.")
        if check.status == "corrected":
            return self.tr("Memory corrected by llama.cpp's dry run ({devices}).").format(
                devices=devices)
        return self.tr("llama.cpp's dry run differs ({devices}).").format(devices=devices)

    # -- events -----------------------------------------------------------------------
    def _on_control_changed(self) -> None:
        step = self.context.value()
        self.context_value.setText(fmt_tokens(CONTEXT_STEPS[step - 1]) if step
                                   else self.tr("Auto"))
        self.request_plan()

    def _on_machine_changed(self) -> None:
        inventory = self._state.machine()
        self.roles.set_gpus({g.index: g.name for g in inventory.gpus} if inventory else {})
        self.request_plan()

    def _on_settings_changed(self) -> None:
        self.request_plan()

    def _refresh_header(self) -> None:
        path = self._state.model_path
        if self._busy:
            self.title.setText(self.tr("Reading the model…"))
        else:
            self.title.setText(self.tr("Plan: {name}").format(name=path.name) if path
                               else self.tr("Plan"))
        whatif = self._state.whatif is not None
        self.machine_label.setText(self.tr("For: what-if rig") if whatif
                                   else self.tr("For: this machine"))
        self.back_button.setVisible(whatif)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self._refresh_header()
        self.whatif_button.setText(self.tr("What if…"))
        set_name(self.context, self.tr("Context"))
        self.back_button.setText(self.tr("Back to this machine"))
        self.load_button.setText(self.tr("Load"))
        self.unload_button.setText(self.tr("Unload"))
        self.unload_button.setToolTip(self.tr("Stop the engine: frees all its memory."))
        self._refresh_load_buttons()
        self.controls.setTitle(self.tr("Request"))
        for label, text in zip(self.form_labels, [
                self.tr("Context"), self.tr("Parallel slots"), self.tr("KV cache type"),
                self.tr("Speculation"), self.tr("Task")], strict=True):
            label.setText(text)
        for combo, name in ((self.kv, kv_text), (self.spec, spec_text), (self.task, task_text)):
            for i in range(combo.count()):
                combo.setItemText(i, name(str(combo.itemData(i))))
        step = self.context.value()
        self.context_value.setText(fmt_tokens(CONTEXT_STEPS[step - 1]) if step
                                   else self.tr("Auto"))
        self.roles_box.setTitle(self.tr("GPU roles and order"))
        self.speed_box.setTitle(self.tr("Predicted speed"))
        for label, text in zip(self.speed_names, [
                self.tr("decode t/s"), self.tr("prefill t/s"), self.tr("time to first token")],
                strict=True):
            label.setText(text)
        self.map_box.setTitle(self.tr("Where every byte goes"))
        self.messages_box.setTitle(self.tr("Warnings and reasons"))
        self.advice_box.setTitle(self.tr("What would make this faster"))
        self._show_plan()
        self._show_baseline()
