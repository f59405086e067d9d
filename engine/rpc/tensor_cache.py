"""The worker's tensor cache, kept under a size bound.

The RPC server keeps every large tensor a main sends in its cache folder, without any
bound; a file removed here is simply sent again by the next main that needs it.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_CACHE_MAX_BYTES = 20 << 30
CACHE_PRUNE_EVERY_S = 2.0


def prune_cache(folder: Path, max_bytes: int) -> int:
    """Remove the least recently used files of ``folder`` until it holds at most
    ``max_bytes``. Returns the bytes removed.
    """
    entries = []
    for path in folder.rglob("*"):
        try:
            st = path.stat()
        except OSError:
            continue
        if path.is_file():
            entries.append((max(st.st_atime, st.st_mtime), st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, path in sorted(entries):
        if total - removed <= max_bytes:
            break
        try:
            path.unlink()
        except OSError:
            continue
        removed += size
    if removed:
        log.info("RPC cache: removed %d bytes to stay under %d", removed, max_bytes)
    return removed


def keep_cache_bounded(folder: Path, max_bytes: int) -> None:
    """Prune ``folder`` now and then every few seconds, on a daemon thread."""

    def loop() -> None:
        while True:
            try:
                prune_cache(folder, max_bytes)
            except OSError:
                log.warning("RPC cache: could not prune %s", folder, exc_info=True)
            time.sleep(CACHE_PRUNE_EVERY_S)

    folder.mkdir(parents=True, exist_ok=True)
    prune_cache(folder, max_bytes)
    threading.Thread(target=loop, name="loadout-rpc-cache", daemon=True).start()
