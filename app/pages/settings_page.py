"""Settings: model folders, language, theme, memory reserves, default task, log folder,
the engine build, and the cluster's RPC workers."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QUrl, Signal
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.accessible import set_name
from app.cluster_control import ClusterControl
from app.formatting import GIB, MIB
from app.i18n import LANGUAGES
from app.pages.cluster_section import ClusterSection
from app.pages.engine_section import EngineSection
from app.settings_store import TASK_KINDS, AppSettings
from app.state import AppState
from app.texts import task_text
from app.workers import WorkerRunner
from engine.paths import paths

log = logging.getLogger(__name__)


class SettingsPage(QWidget):
    """Edits :class:`AppSettings`; every change applies at once.

    The Cluster section (with ``cluster``) edits the RPC workers: it lives here, beside
    the model folders, because it is a saved list of places the app draws on; Home and
    the Plan page then show the workers' devices like this machine's own. The Engine
    section shows the engine build running and, in a bundle, chooses the next one
    (``runner`` looks at the installed engine off the UI thread).
    """

    sig_settings_edited = Signal(object)  # AppSettings

    def __init__(self, state: AppState, cluster: ClusterControl | None = None,
                 runner: WorkerRunner | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._loading = False
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.folders = QListWidget()
        self.folders.setMaximumHeight(120)
        self.add_folder = QPushButton()
        self.add_folder.clicked.connect(self._on_add_folder_clicked)
        self.remove_folder = QPushButton()
        self.remove_folder.clicked.connect(self._on_remove_folder_clicked)
        folder_buttons = QHBoxLayout()
        folder_buttons.addWidget(self.add_folder)
        folder_buttons.addWidget(self.remove_folder)
        folder_buttons.addStretch(1)
        self.other_apps = QCheckBox()
        self.other_apps.toggled.connect(self._on_field_changed)
        folder_box = QVBoxLayout()
        folder_box.addWidget(self.folders)
        folder_box.addLayout(folder_buttons)
        folder_box.addWidget(self.other_apps)
        self.other_apps_note = QLabel()  # the apps by name: too long for one checkbox line
        self.other_apps_note.setWordWrap(True)
        self.other_apps_note.setIndent(self.fontMetrics().horizontalAdvance("M") * 2)
        folder_box.addWidget(self.other_apps_note)

        self.language = QComboBox()
        self.theme = QComboBox()
        self.gpu_reserve = QSpinBox()
        self.gpu_reserve.setRange(256, 16384)
        self.gpu_reserve.setSingleStep(256)
        self.host_reserve = QDoubleSpinBox()
        self.host_reserve.setRange(0.5, 64.0)
        self.host_reserve.setSingleStep(0.5)
        self.host_reserve.setDecimals(1)
        self.task = QComboBox()
        self.log_link = QLabel()
        self.log_link.setOpenExternalLinks(True)

        self.form = QFormLayout()
        self.labels = [QLabel() for _ in range(7)]
        rows = [folder_box, self.language, self.theme, self.gpu_reserve, self.host_reserve,
                self.task, self.log_link]
        for label, field in zip(self.labels, rows, strict=True):
            self.form.addRow(label, field)  # type: ignore[call-overload]
        form_box = QWidget()
        form_box.setLayout(self.form)
        form_box.setMaximumWidth(self.fontMetrics().horizontalAdvance("M") * 56)
        self.engine = EngineSection(runner)
        self.engine.setMaximumWidth(self.fontMetrics().horizontalAdvance("M") * 64)
        self.cluster = ClusterSection(cluster) if cluster is not None else None
        column = QVBoxLayout()
        column.addWidget(form_box)
        column.addWidget(self.engine)
        if self.cluster is not None:
            self.cluster.setMaximumWidth(self.fontMetrics().horizontalAdvance("M") * 64)
            column.addWidget(self.cluster)
        column.addStretch(1)
        inner = QWidget()
        inner.setLayout(column)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(inner)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(scroll, 1)
        for combo in (self.language, self.theme, self.task):
            combo.currentIndexChanged.connect(self._on_field_changed)
        self.gpu_reserve.valueChanged.connect(self._on_field_changed)
        self.host_reserve.valueChanged.connect(self._on_field_changed)
        state.sig_settings_changed.connect(self.load)
        self.retranslate()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() == QEvent.Type.PaletteChange:
            self.load()  # the log folder link takes its colour from the palette
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.title.setText(self.tr("Settings"))
        set_name(self.folders, self.tr("Model folders"))
        names = [self.tr("Model folders"), self.tr("Language"), self.tr("Theme"),
                 self.tr("Kept free on each GPU"), self.tr("Kept free in RAM"),
                 self.tr("Default task"), self.tr("Log folder")]
        for label, name in zip(self.labels, names, strict=True):
            label.setText(name)
        self.add_folder.setText(self.tr("Add folder…"))
        self.other_apps.setText(self.tr("Also list other apps' models"))
        self.other_apps_note.setText(self.tr("LM Studio's, Ollama's and the Hugging Face "
                                             "cache's, read only"))
        self.remove_folder.setText(self.tr("Remove"))
        self.gpu_reserve.setSuffix(" MiB")
        self.host_reserve.setSuffix(" GiB")
        self.load()

    def load(self) -> None:
        """Show the current settings."""
        s = self._state.settings
        self._loading = True
        try:
            self.folders.clear()
            self.folders.addItems(list(s.model_folders))
            self.other_apps.setChecked(s.scan_other_apps)
            self.language.clear()
            self.language.addItem(self.tr("Same as the system"), "")
            for code, name in LANGUAGES.items():
                self.language.addItem(name, code)
            self.language.setCurrentIndex(max(0, self.language.findData(s.language)))
            self.theme.clear()
            for code, name in (("system", self.tr("Same as the system")),
                               ("light", self.tr("Light")), ("dark", self.tr("Dark"))):
                self.theme.addItem(name, code)
            self.theme.setCurrentIndex(max(0, self.theme.findData(s.theme)))
            self.gpu_reserve.setValue(s.gpu_reserve_bytes // MIB)
            self.host_reserve.setValue(s.host_reserve_bytes / GIB)
            self.task.clear()
            for kind in TASK_KINDS:
                self.task.addItem(task_text(kind), kind)
            self.task.setCurrentIndex(max(0, self.task.findData(s.default_task)))
            folder = paths().logs
            color = QApplication.palette().link().color().name()
            self.log_link.setText(f'<a href="{QUrl.fromLocalFile(str(folder)).toString()}" '
                                  f'style="color: {color}">{folder}</a>')
        finally:
            self._loading = False

    def current(self) -> AppSettings:
        """The settings as the page shows them."""
        folders = tuple(self.folders.item(i).text() for i in range(self.folders.count()))
        return self._state.settings.with_changes(
            model_folders=folders,
            language=str(self.language.currentData() or ""),
            theme=str(self.theme.currentData() or "system"),
            gpu_reserve_bytes=self.gpu_reserve.value() * MIB,
            host_reserve_bytes=int(self.host_reserve.value() * GIB),
            default_task=str(self.task.currentData() or "chat"),
            scan_other_apps=self.other_apps.isChecked(),
        )

    def add_model_folder(self, folder: Path) -> None:
        """Add ``folder`` to the folders searched for models."""
        if str(folder) not in self._state.settings.model_folders:
            self.folders.addItem(str(folder))
            self._on_field_changed()

    def _on_field_changed(self) -> None:
        if not self._loading:
            self.sig_settings_edited.emit(self.current())

    def _on_add_folder_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Folder with GGUF models"))
        if folder:
            self.add_model_folder(Path(folder))

    def _on_remove_folder_clicked(self) -> None:
        row = self.folders.currentRow()
        if row >= 0:
            self.folders.takeItem(row)
            self._on_field_changed()
