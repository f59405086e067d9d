"""Models: pick the model to plan — the demo model, a local .gguf, or one found in a folder."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
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

from app.formatting import fmt_bytes
from app.state import AppState

log = logging.getLogger(__name__)

PATH_ROLE = Qt.ItemDataRole.UserRole


def find_models(folders: tuple[str, ...], limit: int = 500) -> list[Path]:
    """The .gguf files in ``folders`` (recursively; the first shard of split models)."""
    found: list[Path] = []
    for folder in folders:
        base = Path(folder).expanduser()
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.gguf")):
            if "-of-" in path.stem and not path.stem.split("-of-")[0].endswith("00001"):
                continue
            found.append(path)
            if len(found) >= limit:
                return found
    return found


class ModelsPage(QWidget):
    """The list of models Loadout knows; choosing one selects it for the Plan page."""

    sig_model_chosen = Signal(object)  # Path

    def __init__(self, state: AppState, demo_path: Path | None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self.demo_path = demo_path
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
        self.selected = QLabel()
        buttons = QHBoxLayout()
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.hint)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.selected)
        state.sig_settings_changed.connect(self.refresh)
        state.sig_model_changed.connect(self._update_selected)
        self.retranslate()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.title.setText(self.tr("Models"))
        self.hint.setText(self.tr("Pick a model to plan it. Folders to search are set in "
                                  "Settings."))
        self.open_button.setText(self.tr("Open a .gguf file…"))
        self.use_button.setText(self.tr("Plan this model"))
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the list: the demo model first, then the models found in folders."""
        self.list.clear()
        if self.demo_path is not None:
            item = QListWidgetItem(self.tr("Demo model (SmolLM2 135M Instruct, {size})").format(
                size=fmt_bytes(_size(self.demo_path))))
            item.setData(PATH_ROLE, str(self.demo_path))
            self.list.addItem(item)
        for path in find_models(self._state.settings.model_folders):
            item = QListWidgetItem(f"{path.name}  ·  {fmt_bytes(_size(path))}")
            item.setToolTip(str(path))
            item.setData(PATH_ROLE, str(path))
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)
        self._update_selected()

    def _update_selected(self) -> None:
        path = self._state.model_path
        self.selected.setText(
            self.tr("Selected: {name}").format(name=path.name) if path
            else self.tr("No model selected."))

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
