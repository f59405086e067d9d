"""Errors of RPC workers, as the main side and the worker side meet them."""

from __future__ import annotations

from engine.errors import EngineError


class WorkerError(EngineError, ConnectionError):
    """A worker that cannot be used: unreachable, busy, wrong version, or it went away."""


class RemoteBindRefused(EngineError, PermissionError):
    """A worker asked to listen on a non-loopback address without the explicit flag."""
