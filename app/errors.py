"""Errors of the desktop application."""

from __future__ import annotations


class AppError(Exception):
    """Base class of every application error."""


class NoDisplayError(AppError, RuntimeError):
    """No graphical display is available to open a window on."""
