"""Accessible names for every control a person uses (what a screen reader says).

Qt already names a control that shows its own text (a button, a check box) by that text,
as it changes. Every other control is named here: an input beside a form label by the
label, one with only a placeholder or a tool tip by that, one in a tab or a group box by
its title. :func:`name_controls` runs after every retranslation of a window, page or
dialog and when a page is shown, so the names follow the language; names a page set
itself are left alone.
"""

from __future__ import annotations

from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

AUTO = "loadoutAutoName"  # a dynamic property: the name was derived here, not set by hand
CONTROLS = (QAbstractButton, QAbstractSpinBox, QAbstractSlider, QComboBox, QLineEdit,
            QPlainTextEdit, QTextEdit, QAbstractItemView, QGroupBox, QTabBar)


def _clean(text: str) -> str:
    return " ".join(text.replace("&&", "\0").replace("&", "").replace("\0", "&").split())


def _form_labels(root: QWidget) -> dict[int, str]:
    """id(field) -> the text of its label, for every form layout under ``root``."""
    out: dict[int, str] = {}
    for layout in root.findChildren(QFormLayout):
        for row in range(layout.rowCount()):
            label = layout.itemAt(row, QFormLayout.ItemRole.LabelRole)
            field = layout.itemAt(row, QFormLayout.ItemRole.FieldRole)
            if label is None or field is None:
                continue
            label_widget, field_widget = label.widget(), field.widget()
            if isinstance(label_widget, QLabel) and field_widget is not None:
                out[id(field_widget)] = _clean(label_widget.text())
    for shown in root.findChildren(QLabel):
        buddy = shown.buddy()
        if buddy is not None and shown.text():
            out.setdefault(id(buddy), _clean(shown.text()))
    return out


def derived_name(widget: QWidget, labels: dict[int, str]) -> str:
    """The name a control gets from what is shown with it ("" when nothing is)."""
    if isinstance(widget, QGroupBox) and widget.title():
        return _clean(widget.title())
    if isinstance(widget, QAbstractButton) and widget.text():
        return _clean(widget.text())
    if id(widget) in labels and labels[id(widget)]:
        return labels[id(widget)]
    if isinstance(widget, QLineEdit | QPlainTextEdit | QTextEdit) and \
            widget.placeholderText():
        return _clean(widget.placeholderText())
    if widget.toolTip():
        return _clean(widget.toolTip())
    return _context_name(widget)


def _context_name(widget: QWidget) -> str:
    """The tab or group box a control sits in, for one that shows no text of its own."""
    child, parent = widget, widget.parentWidget()
    while parent is not None:
        grand = parent.parentWidget()
        if isinstance(grand, QTabWidget) and grand.indexOf(child) >= 0:
            return _clean(grand.tabText(grand.indexOf(child)))
        if isinstance(parent, QGroupBox) and parent.title():
            return _clean(parent.title())
        child, parent = parent, grand
    return ""


def is_part(widget: QWidget) -> bool:
    """A piece of another control (a spin box's editor, a table's header): the screen
    reader names the control it belongs to."""
    return isinstance(widget, QHeaderView) or widget.objectName().startswith("qt_")


def spoken_name(widget: QWidget) -> str:
    """The name a screen reader says for ``widget``: its accessible name, else the one Qt
    gives it (a button's text; on Linux a combo box's current text, its label then
    coming through an accessibility relation)."""
    if widget.accessibleName():
        return widget.accessibleName()
    interface = QAccessible.queryAccessibleInterface(widget)
    if interface is None:
        return widget.accessibleName()
    return interface.text(QAccessible.Text.Name) or ""


def name_controls(root: QWidget) -> None:
    """Give every control under ``root`` (and ``root``) without a name of its own one."""
    labels = _form_labels(root)
    for widget in [root, *root.findChildren(QWidget)]:
        if not isinstance(widget, CONTROLS) or is_part(widget):
            continue
        if widget.property(AUTO):
            widget.setAccessibleName("")  # derived before: derive again
            widget.setProperty(AUTO, False)
        elif widget.accessibleName():
            continue  # named by its page
        if isinstance(widget, QAbstractButton | QGroupBox | QTabBar) and spoken_name(widget):
            continue  # Qt names it by its own text (an input's text is its value, not a name)
        name = derived_name(widget, labels)
        if name:
            widget.setAccessibleName(name)
            widget.setProperty(AUTO, True)


def set_name(widget: QWidget, name: str) -> None:
    """Name ``widget`` by hand (kept by :func:`name_controls`)."""
    widget.setAccessibleName(name)
    widget.setProperty(AUTO, False)
