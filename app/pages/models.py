"""Models: pick the model to plan — the demo model, a local .gguf, or one found on disk.

The list comes from the engine's library scan (Loadout's own downloads, folders the user
added, and, when the setting allows, the Hugging Face cache, LM Studio and Ollama),
run off the UI thread.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.accessible import set_name
from app.formatting import fmt_bytes
from app.pages.model_wizard import ModelWizard
from app.state import AppState
from app.texts import source_text
from app.theme import warning_color
from app.workers import Job, WorkerRunner

log = logging.getLogger(__name__)

PATH_ROLE = Qt.ItemDataRole.UserRole


def scan_models(folders: tuple[str, ...], other_apps: bool) -> tuple[Any, ...]:
    """The GGUF models in ``folders`` and Loadout's own folder (and other apps' folders).

    Returns ``engine.hub.library.LibraryEntry`` values, headers read.
    """
    from engine.hub import library

    roots = [r for r in library.default_roots()
             if other_apps or r.source is library.Source.LOADOUT]
    roots += [library.Root(Path(f).expanduser(), library.Source.FOLDER) for f in folders]
    return library.scan(roots)


def find_models(folders: tuple[str, ...]) -> list[Path]:
    """The model files in ``folders`` only (the first file of a split model)."""
    return [e.path for e in scan_models(folders, other_apps=False)
            if any(_inside(e.path, f) for f in folders)]


def _inside(path: Path, folder: str) -> bool:
    try:
        path.relative_to(Path(folder).expanduser())
    except ValueError:
        return False
    return True


class ModelsPage(QWidget):
    """The list of models Loadout knows; choosing one selects it for the Plan page.

    "Find a model for this machine…" opens the :class:`ModelWizard`, which downloads one
    and can ask for it to be loaded and chatted with (``sig_load_and_chat_requested``).
    """

    sig_model_chosen = Signal(object)  # Path
    sig_models_listed = Signal()
    sig_load_and_chat_requested = Signal(object)  # Path

    def __init__(self, state: AppState, runner: WorkerRunner, demo_path: Path | None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._runner = runner
        self.demo_path = demo_path
        self.entries: tuple[Any, ...] = ()
        self.opened: list[Path] = []  # models read from elsewhere (Open…) in this session
        self.wizard: ModelWizard | None = None
        self._scanning = False
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.list = QListWidget()
        self.list.itemActivated.connect(self._on_list_activated)
        self.open_button = QPushButton()
        self.open_button.clicked.connect(self._on_open_clicked)
        self.use_button = QPushButton()
        self.use_button.clicked.connect(self._on_use_clicked)
        self.rescan_button = QPushButton()
        self.rescan_button.clicked.connect(self.scan)
        self.wizard_button = QPushButton()
        self.wizard_button.clicked.connect(lambda: self.open_wizard())
        self.selected = QLabel()
        buttons = QHBoxLayout()
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.rescan_button)
        buttons.addStretch(1)
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(self.wizard_button)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.hint)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.selected)
        state.sig_settings_changed.connect(self.scan)
        state.sig_model_changed.connect(self._update_selected)
        self.retranslate()
        self.scan()

    def scan(self) -> None:
        """Look for models on disk again (off the UI thread)."""
        folders = self._state.settings.model_folders
        other_apps = self._state.settings.scan_other_apps

        def job(_job: Job) -> tuple[Any, ...]:
            return scan_models(folders, other_apps)

        self._scanning = True
        self._update_hint()
        self._runner.submit("library", job, self._on_scanned,
                            on_failed=lambda _e: self._on_scanned(()))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.title.setText(self.tr("Models"))
        set_name(self.list, self.tr("Models found"))
        self.open_button.setText(self.tr("Open a .gguf file…"))
        self.use_button.setText(self.tr("Plan this model"))
        self.rescan_button.setText(self.tr("Look again"))
        self.wizard_button.setText(self.tr("Find a model for this machine…"))
        self.wizard_button.setToolTip(self.tr("Models recommended for this machine's "
                                              "hardware, downloaded and ready to chat"))
        self._update_hint()
        self.refresh()

    def _update_hint(self) -> None:
        if self._scanning:
            self.hint.setText(self.tr("Looking for models on disk…"))
        else:
            self.hint.setText(self.tr("Pick a model to plan it. Folders to search are set in "
                                      "Settings."))

    def _on_scanned(self, entries: tuple[Any, ...]) -> None:
        self.entries = entries
        self._scanning = False
        self._update_hint()
        self.refresh()
        self.sig_models_listed.emit()

    def refresh(self) -> None:
        """Rebuild the list: the demo model first, then the models found on disk."""
        current = self.list.currentItem()
        keep = current.data(PATH_ROLE) if current is not None else None
        self.list.clear()
        if self.demo_path is not None:
            item = QListWidgetItem(self.tr("Demo model (SmolLM2 135M Instruct, {size})").format(
                size=fmt_bytes(_size(self.demo_path))))
            item.setData(PATH_ROLE, str(self.demo_path))
            self.list.addItem(item)
        for entry in self.entries:
            details = [entry.quant or "", fmt_bytes(entry.size_bytes),
                       source_text(entry.source.value),
                       self.tr("reads images") if entry.projector is not None else "",
                       self.tr("⚠ cannot be read as a model") if entry.error else ""]
            item = QListWidgetItem(" · ".join([entry.name, *[d for d in details if d]]))
            item.setToolTip(str(entry.path) if not entry.error else entry.error)
            item.setData(PATH_ROLE, str(entry.path))
            if entry.error:  # listed (it is there), but marked before anyone picks it
                item.setForeground(QColor(warning_color()))
            self.list.addItem(item)
        listed = {str(e.path) for e in self.entries}
        for path in self.opened:
            if str(path) in listed:
                continue
            item = QListWidgetItem(" · ".join([path.name, fmt_bytes(_size(path)), self.tr(
                "opened from {folder}").format(folder=path.parent)]))
            item.setToolTip(str(path))
            item.setData(PATH_ROLE, str(path))
            self.list.addItem(item)
        for row in range(self.list.count()):
            if self.list.item(row).data(PATH_ROLE) == keep:
                self.list.setCurrentRow(row)
                break
        else:
            if self.list.count():
                self.list.setCurrentRow(0)
        self._update_selected()

    def _update_selected(self) -> None:
        path = self._state.model_path
        if path is not None and not self._listed(Path(path)):  # read from elsewhere: list it
            self.opened.append(Path(path))
            self.refresh()
            return
        for row in range(self.list.count()):  # the list shows which one is selected
            if path is not None and self.list.item(row).data(PATH_ROLE) == str(path):
                self.list.setCurrentRow(row)
        self.selected.setText(
            self.tr("Selected: {name}").format(name=path.name) if path
            else self.tr("No model selected."))

    def _listed(self, path: Path) -> bool:
        return any(self.list.item(row).data(PATH_ROLE) == str(path)
                   for row in range(self.list.count()))

    def open_wizard(self, catalog_file: Path | None = None) -> ModelWizard:
        """Show the model wizard (the same one again, so a paused download can resume).

        Args:
            catalog_file: another catalog than the bundled one (a user's own, tests).
        """
        if self.wizard is None or self.wizard.catalog_file != catalog_file:
            if self.wizard is not None:
                self.wizard.reject()
                self.wizard.deleteLater()
            self.wizard = ModelWizard(self._state, self._runner, catalog_file, self)
            self.wizard.sig_download_finished.connect(lambda _path: self.scan())
            self.wizard.sig_plan_requested.connect(self.choose)
            self.wizard.sig_load_and_chat_requested.connect(self.sig_load_and_chat_requested)
        self.wizard.show()
        self.wizard.raise_()
        self.wizard.activateWindow()
        return self.wizard

    def choose(self, path: Path) -> None:
        """Select ``path`` as the model to plan."""
        self.sig_model_chosen.emit(Path(path))

    def _on_list_activated(self, item: QListWidgetItem) -> None:
        self.choose(Path(item.data(PATH_ROLE)))

    def _on_use_clicked(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.choose(Path(item.data(PATH_ROLE)))

    def _on_open_clicked(self) -> None:
        start = self._state.settings.model_folders[0] if self._state.settings.model_folders \
            else str(Path.home())
        name, _ = QFileDialog.getOpenFileName(self, self.tr("Open a GGUF model"), start,
                                              self.tr("GGUF models (*.gguf)"))
        if name:
            self.choose(Path(name))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
