"""Light and dark themes: follow the system, or force one (screenshots, settings)."""

from __future__ import annotations

import logging
from enum import StrEnum

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

log = logging.getLogger(__name__)


class ThemeChoice(StrEnum):
    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"


# Memory-map segment colours: (light theme, dark theme).
SEGMENT_COLORS: dict[str, tuple[str, str]] = {
    "weights": ("#3b6fd8", "#5b8def"),
    "experts": ("#8a4fd0", "#a874ee"),
    "kv": ("#1f9d74", "#33c08f"),
    "compute": ("#d98a1c", "#f0a53a"),
    "projector": ("#c2477f", "#e0669c"),
    "reserve": ("#9a9a9a", "#6e6e6e"),
    "free": ("#e6e9ef", "#2c3038"),
    "over": ("#d23c3c", "#ff5c5c"),
}


# Sizes in points, so they follow the screen's DPI; colours come from the palette.
STYLE = """
QLabel#pageTitle { font-size: 15pt; font-weight: 600; }
QListWidget#sidebar { font-size: 11pt; outline: 0; }
QListWidget#sidebar::item { padding: 6px 4px; border: 0; }
QListWidget#sidebar::item:selected { background: palette(highlight);
                                     color: palette(highlighted-text); }
QToolButton:checked { background: palette(highlight); color: palette(highlighted-text); }
"""


def system_is_dark() -> bool:
    """Whether the platform asks for a dark theme."""
    hints = QGuiApplication.styleHints()
    return bool(hints.colorScheme() == Qt.ColorScheme.Dark)


def _dark_palette() -> QPalette:
    pal = QPalette()
    base, window, text = QColor("#1e2127"), QColor("#272b33"), QColor("#e6e6e6")
    roles = {
        QPalette.ColorRole.Window: window, QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base, QPalette.ColorRole.AlternateBase: window,
        QPalette.ColorRole.ToolTipBase: QColor("#33373f"), QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.Text: text, QPalette.ColorRole.Button: QColor("#30343c"),
        QPalette.ColorRole.ButtonText: text, QPalette.ColorRole.BrightText: QColor("#ff6b6b"),
        QPalette.ColorRole.Highlight: QColor("#3d7be0"),
        QPalette.ColorRole.HighlightedText: QColor("#ffffff"),
        QPalette.ColorRole.Link: QColor("#6ea8ff"), QPalette.ColorRole.Mid: QColor("#3a3f48"),
        QPalette.ColorRole.PlaceholderText: QColor("#8a8f98"),
    }
    for role, color in roles.items():
        pal.setColor(role, color)
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText,
                 QPalette.ColorRole.WindowText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#777b83"))
    return pal


def apply_theme(app: QApplication, choice: ThemeChoice | str = ThemeChoice.SYSTEM) -> bool:
    """Style ``app`` (Fusion, light or dark palette). Returns True when dark."""
    choice = ThemeChoice(choice)
    dark = system_is_dark() if choice is ThemeChoice.SYSTEM else choice is ThemeChoice.DARK
    app.setStyle("Fusion")
    app.setPalette(_dark_palette() if dark else app.style().standardPalette())
    app.setStyleSheet(STYLE)  # setting it again re-polishes every widget with the new palette
    app.setProperty("loadout_dark", dark)
    log.debug("theme %s (dark=%s)", choice, dark)
    return dark


def is_dark(app: QApplication | None = None) -> bool:
    """Whether the current palette is the dark one."""
    inst = app or QApplication.instance()
    return bool(inst is not None and inst.property("loadout_dark"))


def segment_color(kind: str, dark: bool) -> QColor:
    """The colour of one memory-map segment kind in the current theme."""
    light_c, dark_c = SEGMENT_COLORS.get(kind, ("#888888", "#888888"))
    return QColor(dark_c if dark else light_c)


def warning_color() -> str:
    """The colour of warnings (a CSS name) in the current theme: the compute segment's."""
    return segment_color("compute", is_dark()).name()
