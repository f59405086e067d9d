"""The chat transcript: Markdown with a copy link under each code block.

A streaming answer re-renders only itself: the messages before it are rendered once, and
each update replaces the text after them, so an update costs what the answer costs, not
what the whole conversation costs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import (
    QGuiApplication,
    QImage,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QTextBrowser, QWidget

from app.chat_images import thumbnail
from app.chat_render import COPY_SCHEME, IMAGE_SCHEME, render
from app.chat_store import Message

log = logging.getLogger(__name__)

# Markdown without raw HTML: an answer's line that starts like HTML (``<?php``, ``<!x``,
# ``<!--``) would otherwise open an HTML block that swallows the rest of the transcript
_FEATURES = QTextDocument.MarkdownFeature(
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
    | QTextDocument.MarkdownFeature.MarkdownNoHTML.value)


class TranscriptView(QTextBrowser):
    """Shows a conversation; ``code_blocks`` are the blocks its copy links refer to."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self.follow_link)
        self.code_blocks: tuple[str, ...] = ()
        self._tail_start: int | None = None  # where the streaming answer starts
        self._history_blocks: tuple[str, ...] = ()
        # the bytes of an attachment by id (the chat page reads them from its store)
        self.image_source: Callable[[int], bytes | None] | None = None
        self.thumbnails_shown = 0  # thumbnails drawn (each image once per render)

    def loadResource(self, kind: int, name: QUrl | str) -> Any:
        """The thumbnail of an attachment (``loadout-image:ID``); other resources as Qt
        loads them."""
        url = name if isinstance(name, QUrl) else QUrl(name)
        if url.scheme() == IMAGE_SCHEME and self.image_source is not None:
            try:
                data = self.image_source(int(url.path()))
            except ValueError:
                data = None
            image = thumbnail(data) if data else QImage()
            if not image.isNull():
                self.thumbnails_shown += 1
                return image
            return QImage()
        return super().loadResource(kind, name)

    def show_messages(self, messages: Sequence[Message], error: str = "",
                      note: str = "") -> None:
        """Render the whole conversation (opened, or an answer finished), then ``note``."""
        self._tail_start = None
        rendered = render(messages, error, note=note)
        self.code_blocks = rendered.code_blocks
        self._keep_scrolled(lambda: self.document().setMarkdown(rendered.markdown, _FEATURES))

    def show_streaming(self, messages: Sequence[Message]) -> None:
        """Show ``messages`` whose last one is still arriving (re-renders only that one)."""
        if self._tail_start is None:
            history = render(messages[:-1])
            self._history_blocks = history.code_blocks
            self.document().setMarkdown(history.markdown, _FEATURES)
            cursor = QTextCursor(self.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())  # after the last rule
            self._tail_start = cursor.position()
        tail = render(messages[-1:], first_block=len(self._history_blocks))
        self.code_blocks = self._history_blocks + tail.code_blocks
        start = self._tail_start

        def replace_tail() -> None:
            cursor = QTextCursor(self.document())
            cursor.setPosition(start)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.insertMarkdown(tail.markdown, _FEATURES)

        self._keep_scrolled(replace_tail)

    def follow_link(self, url: QUrl) -> None:
        """A copy link puts its code block on the clipboard."""
        if url.scheme() != COPY_SCHEME:
            return
        try:
            block = self.code_blocks[int(url.path())]
        except (ValueError, IndexError):
            return
        QGuiApplication.clipboard().setText(block)

    def _keep_scrolled(self, change: Callable[[], None]) -> None:
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        change()
        if at_end:
            bar.setValue(bar.maximum())
