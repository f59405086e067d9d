"""One writer per partial download, across threads and processes.

A lock file beside the partial holds the writer's process id. A lock left by a process
that no longer runs (a crash, a power cut) is taken over, so a resume after a restart is
never blocked.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from engine.hub.errors import DownloadInProgressError

log = logging.getLogger(__name__)

_held: set[Path] = set()
_held_lock = threading.Lock()


def _owner(lock: Path) -> int | None:
    try:
        return int(lock.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the download lock of ``path`` (a partial file) for the ``with`` block.

    Raises:
        DownloadInProgressError: another thread or a live process holds it.
    """
    lock = path.with_name(path.name + ".lock")
    key = lock.resolve()
    with _held_lock:
        if key in _held:
            raise DownloadInProgressError(f"{path.name} is already being downloaded")
        _held.add(key)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                break
            except FileExistsError:
                owner = _owner(lock)
                if owner is not None and owner != os.getpid() and psutil.pid_exists(owner):
                    raise DownloadInProgressError(
                        f"{path.name} is being downloaded by process {owner}") from None
                log.info("taking over the stale download lock %s (process %s)", lock, owner)
                lock.unlink(missing_ok=True)
        else:
            raise DownloadInProgressError(f"{path.name}: cannot take the lock {lock}")
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)
    finally:
        with _held_lock:
            _held.discard(key)
