"""Server: one switch to serve the loaded model over the OpenAI-compatible API.

The engine process already answers on 127.0.0.1, but only to this app (its private key);
serving on this computer opens it to other clients there, without a restart. Allowing
other devices restarts the engine bound to every interface, always with an API key
(generated here, shown and copyable). Live: the active and queued requests, the aggregate
decode throughput, memory per device.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.accessible import set_name
from app.engine_launch import Binding, lan_address, needs_restart, new_api_key
from app.engine_process import EngineProcess
from app.formatting import fmt_bytes, fmt_tps
from app.server_snippets import snippets
from app.widgets.speed_chart import SpeedChart
from app.widgets.table_headers import FittedHeader

log = logging.getLogger(__name__)


def aggregate_decode_tps(status: dict[str, Any]) -> float | None:
    """The engine's decode t/s of all requests (every slot's decoded tokens per second, of
    every loaded model when the server runs many); None when the engine gives none."""
    value = (status.get("engine") or {}).get("decode_tps_all_requests")
    return float(value) if isinstance(value, int | float) else None


def _cell(text: str) -> QTableWidgetItem:
    """A read-only table cell whose whole text is also its tooltip (a narrow column
    may wrap or elide it)."""
    item = QTableWidgetItem(text)
    item.setToolTip(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    return item


def served_models(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The models of a server that runs many (``loadout serve --library``), by id."""
    models = (status.get("engine") or {}).get("models")
    if not isinstance(models, dict):
        return {}
    return {str(k): v for k, v in models.items() if isinstance(v, dict)}


class ServerPage(QWidget):
    """The server panel. ``binding()`` is what the controls ask for."""

    sig_binding_applied = Signal(object)
    sig_library_chosen = Signal(bool)  # serve every model of the library (False: this one)

    def __init__(self, engine: EngineProcess, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._applying = False
        self._build()
        engine.sig_state_changed.connect(self._on_engine_state)
        engine.sig_engine_ready.connect(self._on_engine_ready)
        engine.poller.sig_status_received.connect(self._on_engine_status)
        self.retranslate()

    def _build(self) -> None:
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.state_label = QLabel()
        self.state_label.setWordWrap(True)
        self.serve_switch = QCheckBox()
        self.serve_switch.setObjectName("serveSwitch")
        self.serve_choice = QComboBox()
        self.serve_choice.setObjectName("serveChoice")
        self.serve_choice.addItems(["", ""])
        self.serve_choice.currentIndexChanged.connect(
            lambda index: self.sig_library_chosen.emit(index == 1))
        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.lan = QCheckBox()
        self.key = QLineEdit()
        self.key.setReadOnly(True)
        self.new_key_button, self.copy_key_button = QPushButton(), QPushButton()
        self.new_key_button.clicked.connect(self._on_new_key)
        self.copy_key_button.clicked.connect(lambda: self._copy(self.key.text()))
        key_row = QHBoxLayout()
        key_row.addWidget(self.key, 1)
        key_row.addWidget(self.new_key_button)
        key_row.addWidget(self.copy_key_button)
        self.settings_box = QGroupBox()
        form = QFormLayout(self.settings_box)
        self.form_labels = [QLabel() for _ in range(3)]
        form.addRow(self.serve_switch)
        form.addRow(self.form_labels[2], self.serve_choice)
        form.addRow(self.form_labels[0], self.port)
        form.addRow(self.lan)
        form.addRow(self.form_labels[1], key_row)
        self.serve_switch.toggled.connect(self._on_switch_toggled)
        self.lan.toggled.connect(self._on_lan_toggled)
        self.port.editingFinished.connect(self._on_port_edited)

        self.address_box = QGroupBox()
        self.local_url = QLabel()
        self.lan_url = QLabel()
        self.local_url.setObjectName("serverLocalUrl")
        self.lan_url.setObjectName("serverLanUrl")
        for label in (self.local_url, self.lan_url):
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_url_button = QPushButton()
        self.copy_url_button.clicked.connect(lambda: self._copy(self.base_url()))
        self.snippet_tabs = QTabWidget()
        self.snippet_views: dict[str, QPlainTextEdit] = {}
        for name in ("curl", "Python", "JavaScript"):
            view = QPlainTextEdit()
            view.setReadOnly(True)
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.snippet_views[name] = view
            self.snippet_tabs.addTab(view, name)
        self.copy_snippet_button = QPushButton()
        self.copy_snippet_button.clicked.connect(
            lambda: self._copy(self.snippet_tabs.currentWidget().toPlainText()))  # type: ignore[attr-defined]
        address = QGridLayout(self.address_box)
        address.addWidget(self.local_url, 0, 0)
        address.addWidget(self.copy_url_button, 0, 1)
        address.addWidget(self.lan_url, 1, 0, 1, 2)
        address.addWidget(self.snippet_tabs, 2, 0, 1, 2)
        address.addWidget(self.copy_snippet_button, 3, 1)

        self.requests_box = QGroupBox()
        self.requests = QTableWidget(0, 5)
        self.requests.verticalHeader().setVisible(False)
        self.requests.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.requests_header = FittedHeader(self.requests)
        self.queued_label = QLabel()
        self.throughput = SpeedChart()
        requests = QVBoxLayout(self.requests_box)
        requests.addWidget(self.requests, 1)
        requests.addWidget(self.queued_label)
        requests.addWidget(self.throughput)
        self.memory_box = QGroupBox()
        self.memory = QTableWidget(0, 3)
        self.memory.verticalHeader().setVisible(False)
        self.memory.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.memory_header = FittedHeader(self.memory)
        self.planned_label = QLabel()  # only when the server runs many models
        self.planned_label.setWordWrap(True)
        memory = QVBoxLayout(self.memory_box)
        memory.addWidget(self.memory)
        memory.addWidget(self.planned_label)
        self.planned_label.setVisible(False)
        self.models_box = QGroupBox()  # only when the server runs many models
        self.models = QTableWidget(0, 4)
        self.models.setObjectName("servedModels")
        self.models.verticalHeader().setVisible(False)
        self.models.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.models_header = FittedHeader(self.models)
        QVBoxLayout(self.models_box).addWidget(self.models)
        self.models_box.setVisible(False)

        left = QVBoxLayout()
        left.addWidget(self.settings_box)
        left.addWidget(self.address_box, 1)
        right = QVBoxLayout()
        right.addWidget(self.requests_box, 2)
        right.addWidget(self.memory_box, 1)
        right.addWidget(self.models_box, 1)
        body = QHBoxLayout()
        body.addLayout(left, 1)  # the live tables need the room more than the snippets
        body.addLayout(right, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.state_label)
        layout.addLayout(body, 1)

    # -- what the controls ask for ------------------------------------------------------
    def binding(self) -> Binding:
        """The binding the controls describe (serving off: loopback on any port).

        Raises:
            KeyRequiredError: other devices allowed without a key (the panel never does).
        """
        if not self.serve_switch.isChecked():
            return Binding()
        lan = self.lan.isChecked()
        return Binding(lan=lan, port=self.port.value(),
                       api_key=self.key.text() or None if lan else None, public=True)

    def library(self) -> bool:
        """Whether every model of the library is to be served (else the loaded one)."""
        return self.serve_choice.currentIndex() == 1

    def set_library(self, on: bool) -> None:
        """Show the saved choice (no signal)."""
        self.serve_choice.blockSignals(True)
        self.serve_choice.setCurrentIndex(1 if on else 0)
        self.serve_choice.blockSignals(False)

    def apply(self) -> None:
        """Restart the engine if it does not listen as the controls ask; open it to other
        clients or close it to them (no restart)."""
        if self._engine.state != "ready":
            self._refresh()
            return
        wanted = self.binding()
        if needs_restart(self._engine.binding, wanted, self._engine.port):
            self._engine.restart(wanted)
        elif wanted.public != self._engine.binding.public:
            self._engine.set_public(wanted.public)
        self._refresh()
        self.sig_binding_applied.emit(wanted)

    def base_url(self) -> str:
        """The base URL a client on this computer uses ("" when not serving)."""
        endpoint = self._engine.endpoint
        if not self.serve_switch.isChecked() or endpoint is None:
            return ""
        return endpoint.base_url

    def shown_key(self) -> str:
        """The key shown (what clients must send), "" when none is needed."""
        return self.key.text() if self._engine.binding.lan else ""

    # -- events -----------------------------------------------------------------------
    def _on_switch_toggled(self, _on: bool) -> None:
        self.apply()

    def _on_lan_toggled(self, on: bool) -> None:
        if on and not self.key.text():
            self._show_key(new_api_key())  # never other devices without a key
        if self.serve_switch.isChecked():
            self.apply()
        self._refresh()

    def _on_new_key(self) -> None:
        self._show_key(new_api_key())
        if self.serve_switch.isChecked() and self.lan.isChecked():
            self.apply()

    def _show_key(self, key: str) -> None:
        """Show ``key`` from its start (``sk-loadout-…``: what a user recognises) when
        the field is narrower than the key."""
        self.key.setText(key)
        self.key.setCursorPosition(0)

    def _on_port_edited(self) -> None:
        if self.serve_switch.isChecked():
            self.apply()

    def _on_engine_state(self, _state: str) -> None:
        self._refresh()

    def _on_engine_ready(self, _endpoint: object) -> None:
        self.apply()  # the switches may have moved while it was loading

    def _on_engine_status(self, status: dict[str, Any]) -> None:
        engine = status.get("engine") or {}
        slots = [s for s in engine.get("slots") or () if isinstance(s, dict)]
        self.requests.setRowCount(len(slots))
        for row, slot in enumerate(slots):
            tps = slot.get("decode_tps")
            seq = str(slot.get("seq", row))
            if slot.get("model"):  # the server runs many models: whose slot
                seq = f"#{seq} {slot['model']}"
            values = [seq, self._slot_state(str(slot.get("state", ""))),
                      str(slot.get("tokens", 0)), str(slot.get("generated", 0)),
                      fmt_tps(float(tps)) if isinstance(tps, int | float) else "—"]
            for col, value in enumerate(values):
                self.requests.setItem(row, col, _cell(value))
        self.requests.resizeRowsToContents()  # a long model name wraps, never cut
        self.queued_label.setText(self.tr("Waiting for a slot: {n}").format(
            n=int(engine.get("queued", 0) or 0)))
        throughput = aggregate_decode_tps(status)
        if throughput is not None:
            self.throughput.add(throughput)
        devices = [d for d in engine.get("devices") or () if isinstance(d, dict)]
        self.memory.setRowCount(len(devices))
        for row, dev in enumerate(devices):
            total, free = int(dev.get("total_bytes", 0)), int(dev.get("free_bytes", 0))
            for col, value in enumerate((str(dev.get("name", "")), fmt_bytes(free),
                                         fmt_bytes(total))):
                self.memory.setItem(row, col, _cell(value))
        self._show_planned(engine.get("planned_bytes"))
        self._show_models(served_models(status))

    def _show_planned(self, planned: object) -> None:
        """What the loaded models of a server that runs many plan on each device."""
        self.planned_label.setVisible(isinstance(planned, dict))
        if not isinstance(planned, dict):
            return
        ram = self.tr("RAM")
        parts = [f"{ram if device == 'host' else device} {fmt_bytes(int(n))}"
                 for device, n in sorted(planned.items()) if isinstance(n, int) and n > 0]
        self.planned_label.setText(self.tr("Planned for the loaded models: {memory}").format(
            memory=", ".join(parts) or "—"))

    def _show_models(self, models: dict[str, dict[str, Any]]) -> None:
        self.models_box.setVisible(bool(models))
        self.models.setRowCount(len(models))
        for row, (name, doc) in enumerate(models.items()):
            planned = doc.get("planned_bytes") or {}
            memory = sum(int(v) for v in planned.values() if isinstance(v, int))
            tps = doc.get("predicted_decode_tps")
            values = (name, self._model_state(str(doc.get("state", ""))),
                      fmt_bytes(memory) if memory else "—",
                      fmt_tps(float(tps)) if isinstance(tps, int | float) else "—")
            for col, value in enumerate(values):
                self.models.setItem(row, col, _cell(value))
        self.models.resizeRowsToContents()

    def _model_state(self, state: str) -> str:
        return {"loaded": self.tr("loaded"), "loading": self.tr("loading"),
                "on_disk": self.tr("on disk"), "unloading": self.tr("unloading")
                }.get(state, state)

    def _slot_state(self, state: str) -> str:
        return {"idle": self.tr("idle"), "prefill": self.tr("reading the prompt"),
                "generate": self.tr("generating")}.get(state, state)

    def _copy(self, text: str) -> None:
        if text:
            QGuiApplication.clipboard().setText(text)

    def _refresh(self) -> None:
        state = self._engine.state
        loaded = state in ("ready", "loading")
        self.serve_switch.setEnabled(loaded)
        self.key.setEnabled(self.lan.isChecked())
        self.new_key_button.setEnabled(self.lan.isChecked())
        self.copy_key_button.setEnabled(self.lan.isChecked() and bool(self.key.text()))
        if state == "ready" and self._engine.library and self._engine.pinned is None:
            self.state_label.setText(self.tr("The loaded model is not in the library: it is "
                                             "served alone."))
        elif state == "ready" and self.serve_switch.isChecked() and self._engine.library:
            self.state_label.setText(self.tr("Serving every model in the library."))
        elif state == "ready" and self.serve_switch.isChecked():
            self.state_label.setText(self.tr("Serving {model}.").format(
                model=self._engine.endpoint.model if self._engine.endpoint else ""))
        elif state == "loading":
            self.state_label.setText(self.tr("The engine is starting…"))
        elif state == "ready":
            self.state_label.setText(self.tr("The loaded model answers only this app until "
                                             "you turn the server on."))
        else:
            self.state_label.setText(self.tr("Load a model from the Plan page to serve it."))
        url = self.base_url()
        key = self.shown_key()
        self.local_url.setText(self.tr("On this computer: {url}").format(url=url) if url
                               else self.tr("Not serving."))
        address = lan_address() if self._engine.binding.lan else None
        lan_url = url.replace("127.0.0.1", address) if url and address else ""
        self.lan_url.setText(self.tr("From other devices: {url}").format(url=lan_url)
                             if lan_url else "")
        self.lan_url.setVisible(bool(lan_url))
        self.copy_url_button.setEnabled(bool(url))
        model = self._engine.endpoint.model if self._engine.endpoint else "MODEL"
        for name, text in snippets(url or "http://127.0.0.1:PORT/v1", key or None,
                                   model).items():
            self.snippet_views[name].setPlainText(text)

    # -- texts ------------------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.title.setText(self.tr("Server"))
        self.settings_box.setTitle(self.tr("OpenAI-compatible server"))
        self.serve_switch.setText(self.tr("Serve the loaded model"))
        self.form_labels[0].setText(self.tr("Port"))
        self.form_labels[1].setText(self.tr("API key"))
        self.form_labels[2].setText(self.tr("Serve"))
        self.serve_choice.setItemText(0, self.tr("this model"))
        self.serve_choice.setItemText(1, self.tr("every model in the library"))
        self.serve_choice.setToolTip(self.tr(
            "Every model: the engine restarts serving the demo, Loadout's downloads, the "
            "folders added in Settings and other apps' models (LM Studio, Ollama, the "
            "Hugging Face cache), each loaded on demand; the loaded model stays loaded for "
            "Chat."))
        set_name(self.serve_choice, self.tr("Which models to serve"))
        self.port.setSpecialValueText(self.tr("Any free port"))
        self.lan.setText(self.tr("Allow other devices on my network"))
        self.lan.setToolTip(self.tr("Restarts the engine listening on every network "
                                    "interface; clients must then send the API key."))
        self.key.setPlaceholderText(self.tr("For other devices"))
        set_name(self.key, self.tr("API key"))
        self.new_key_button.setText(self.tr("New key"))
        self.copy_key_button.setText(self.tr("Copy key"))
        self.address_box.setTitle(self.tr("Address and examples"))
        self.copy_url_button.setText(self.tr("Copy URL"))
        self.copy_snippet_button.setText(self.tr("Copy example"))
        self.requests_box.setTitle(self.tr("Requests"))
        self.requests_header.set_titles(
            [self.tr("Slot"), self.tr("State"), self.tr("Tokens held"), self.tr("Generated"),
             self.tr("decode t/s, its answer")],
            [self.tr("Each slot answers one request at a time"), "",
             self.tr("Tokens of the prompt and answer its KV cache holds"),
             self.tr("Tokens generated for this request so far"),
             self.tr("This request's own decode speed, as the engine measures it (the chart "
                     "below adds every request together)")])
        self.queued_label.setText(self.tr("Waiting for a slot: {n}").format(n=0))
        self.throughput.set_caption(self.tr("decode t/s, all requests"))
        self.throughput.setToolTip(self.tr(
            "The tokens every request together decodes per second, over the last few "
            "seconds, as the engine measures it"))
        self.memory_box.setTitle(self.tr("Memory per device"))
        self.memory_header.set_titles([self.tr("Device"), self.tr("Free"), self.tr("Total")])
        self.models_box.setTitle(self.tr("Models served"))
        self.models_header.set_titles(
            [self.tr("Model"), self.tr("State"), self.tr("Memory planned"),
             self.tr("Predicted decode t/s")],
            ["", "", self.tr("What the plan of this model holds in memory, all devices "
                             "together"),
             self.tr("The decode speed its plan predicts on this machine")])
        self._refresh()
