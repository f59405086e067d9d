"""Errors of the hub package. Each also inherits the matching built-in where one fits."""

from __future__ import annotations

from engine.errors import EngineError


class HubError(EngineError):
    """Base class of every hub error."""


class HubOfflineError(HubError, ConnectionError):
    """The hub cannot be reached (offline mode, no network, timeout) and nothing is cached."""


class HubNotFoundError(HubError, FileNotFoundError):
    """The hub has no such repo, revision or file (or it is private or gated)."""


class BadSpecError(HubError, ValueError):
    """A model reference (``hf:OWNER/REPO/FILE.gguf`` or ``REPO[:QUANT]``) that cannot be read."""


class IntegrityError(HubError, ValueError):
    """A downloaded file whose sha256 differs from the hub's; the file has been removed."""


class UnverifiedFileError(HubError, PermissionError):
    """The hub gives no sha256 to check a file by, and unverified files were not allowed
    (nothing was downloaded)."""


class NotEnoughDiskError(HubError, OSError):
    """The destination folder has less free space than the download needs."""


class LibraryError(HubError, PermissionError):
    """A library action that is refused (e.g. deleting a file another tool owns)."""


class DownloadInProgressError(HubError, BlockingIOError):
    """The same file is being downloaded right now (by this or another Loadout process)."""


class UnsafeHubDataError(HubError, ValueError):
    """The hub sent a path, revision or id that could lead outside the download folder."""
