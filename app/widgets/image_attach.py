"""Images for the next question: the input box that takes pasted and dropped pictures, and
the strip under it with an attach button, the waiting thumbnails and a remove button."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from app.accessible import set_name
from app.chat_images import (
    IMAGE_SUFFIXES,
    ImageFile,
    carries_images,
    from_file,
    from_mime,
    thumbnail,
)

log = logging.getLogger(__name__)

THUMB = 48
MAX_WAITING = 8


class QuestionInput(QPlainTextEdit):
    """The question box: text as usual; a pasted or dropped picture (or image file) is
    announced with ``sig_images_received`` instead of being inserted as text."""

    sig_images_received = Signal(list)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return carries_images(source) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        if carries_images(source):
            images = from_mime(source)
            if images:
                self.sig_images_received.emit(images)
            return
        super().insertFromMimeData(source)


class AttachStrip(QWidget):
    """The images waiting to go with the next question."""

    sig_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.images: list[ImageFile] = []
        self.attach_button = QPushButton()
        self.attach_button.clicked.connect(self.choose_files)
        self.clear_button = QPushButton()
        self.clear_button.clicked.connect(self.clear)
        self.label = QLabel()
        self._thumbs = QHBoxLayout()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.attach_button)
        layout.addLayout(self._thumbs)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.clear_button)
        self.retranslate()

    def add(self, images: list[ImageFile]) -> None:
        """Wait with these images too (at most :data:`MAX_WAITING` in all)."""
        room = MAX_WAITING - len(self.images)
        self.images += images[:max(0, room)]
        self._refresh()

    def take(self) -> list[ImageFile]:
        """The waiting images, handed over (the strip is empty after)."""
        images, self.images = self.images, []
        self._refresh()
        return images

    def clear(self) -> None:
        self.take()

    def choose_files(self) -> None:
        patterns = " ".join(f"*{s}" for s in IMAGE_SUFFIXES)
        files, _ = QFileDialog.getOpenFileNames(self, self.tr("Attach images"), "",
                                                self.tr("Images ({patterns})")
                                                .format(patterns=patterns))
        self.add_files([Path(f) for f in files])

    def add_files(self, paths: list[Path]) -> None:
        """Read image files and wait with them (files that are not pictures are skipped
        and said so)."""
        images: list[ImageFile] = []
        failed: list[str] = []
        for path in paths:
            image = from_file(path)
            if image is None:
                failed.append(path.name)
            else:
                images.append(image)
        self.add(images)
        if failed:
            self.label.setText(self.tr("Not a picture: {names}").format(
                names=", ".join(failed)))

    def _refresh(self) -> None:
        while self._thumbs.count():
            item = self._thumbs.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for image in self.images:
            thumb = QLabel()
            thumb.setPixmap(QPixmap.fromImage(thumbnail(image.data, THUMB)))
            thumb.setObjectName("attachedImage")
            self._thumbs.addWidget(thumb)
        self.clear_button.setVisible(bool(self.images))
        self.label.setText(self.tr("Images going with the next question: {count}")
                           .format(count=len(self.images)) if self.images else "")
        self.sig_changed.emit()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        self.attach_button.setText(self.tr("Attach image…"))
        self.attach_button.setToolTip(self.tr("Add a picture to the question (you can also "
                                              "paste one or drop it on the question box)"))
        self.clear_button.setText(self.tr("Remove images"))
        set_name(self.attach_button, self.tr("Attach image"))
        self._refresh()


__all__ = ["AttachStrip", "QuestionInput"]
