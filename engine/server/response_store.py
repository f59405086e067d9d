"""Stored Responses-API answers, so a later request can continue one by
``previous_response_id``: one JSON file per response in the user's data folder, bounded
in count and in bytes (the oldest go first).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.paths import paths

log = logging.getLogger(__name__)

_ID = re.compile(r"resp_[0-9a-f]{24}")


def default_folder() -> Path:
    """``<data>/responses`` (under ``LOADOUT_HOME`` when it is set)."""
    return paths().data / "responses"


@dataclass(frozen=True)
class StoreLimits:
    """How much the store keeps: at most ``max_count`` responses and ``max_bytes`` in all
    (one response larger than ``max_bytes`` is not stored)."""

    max_count: int = 512
    max_bytes: int = 64 << 20


class ResponseStore:
    """Responses kept on disk by id; each record is ``{"response": doc, "conversation":
    [chat messages]}``. Thread-safe; a file that cannot be read counts as absent.

    Args:
        folder: where the files live (created on the first write).
        limits: the count and byte bounds.
    """

    def __init__(self, folder: Path, limits: StoreLimits = StoreLimits()) -> None:
        self.folder = folder
        self.limits = limits
        self._lock = threading.Lock()

    def _path(self, rid: str) -> Path | None:
        return self.folder / f"{rid}.json" if _ID.fullmatch(rid) else None

    def put(self, rid: str, record: Mapping[str, Any]) -> bool:
        """Store ``record`` under ``rid``; False when it was not kept (too large, bad id,
        or the folder cannot be written)."""
        path = self._path(rid)
        data = json.dumps(record, separators=(",", ":")).encode("utf-8")
        if path is None or len(data) > self.limits.max_bytes:
            log.info("response %s not stored (%d bytes)", rid, len(data))
            return False
        with self._lock:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)
            except OSError:
                log.warning("could not store response %s in %s", rid, self.folder,
                            exc_info=True)
                return False
            self._evict(keep=path)
        return True

    def get(self, rid: str) -> dict[str, Any] | None:
        """The record stored under ``rid``, or None."""
        path = self._path(rid)
        if path is None:
            return None
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def delete(self, rid: str) -> bool:
        """Forget ``rid``; False when it was not stored."""
        path = self._path(rid)
        if path is None:
            return False
        with self._lock:
            try:
                path.unlink()
            except OSError:
                return False
        return True

    def _evict(self, keep: Path) -> None:
        """Remove the oldest files until both bounds hold, never ``keep`` (the one just
        written: a coarse clock, or files dated in the future, must not make it look the
        oldest). The lock is held."""
        files: list[tuple[int, int, Path]] = []
        for p in self.folder.glob("resp_*.json"):
            with contextlib.suppress(OSError):
                st = p.stat()
                if p != keep:
                    files.append((st.st_mtime_ns, st.st_size, p))
        files.sort()
        with contextlib.suppress(OSError):
            st = keep.stat()
            files.append((st.st_mtime_ns, st.st_size, keep))
        total = sum(size for _, size, _ in files)
        while files and (len(files) > self.limits.max_count or total > self.limits.max_bytes):
            _, size, p = files.pop(0)
            with contextlib.suppress(OSError):
                p.unlink()
            total -= size
