"""Errors of the desktop application."""

from __future__ import annotations

from pathlib import Path


class AppError(Exception):
    """Base class of every application error."""


class NoDisplayError(AppError, RuntimeError):
    """No graphical display is available to open a window on."""


class ModelFileError(AppError, ValueError):
    """A model file that cannot be read as a GGUF model: not one at all, or cut short.

    Args:
        path: the file.
        detail: what the reader found wrong.
    """

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{Path(path).name}: {detail}")
        self.path = Path(path)
        self.detail = detail
