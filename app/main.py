"""The desktop app's entry point: creates the QApplication and the main window."""

from __future__ import annotations

import logging
from importlib.metadata import version

from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

log = logging.getLogger(__name__)


class MainWindow(QMainWindow):
    """The main window: a thin shell that wires the pages together."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle(self.tr("Loadout"))
        self.resize(1280, 800)
        label = QLabel(self.tr("Loadout {version}").format(version=version("loadout")))
        self.setCentralWidget(label)


def run_app(argv: list[str]) -> int:
    """Create the application, show the main window and run the event loop."""
    app = QApplication.instance() or QApplication(argv)
    window = MainWindow()
    window.show()
    return int(app.exec())
