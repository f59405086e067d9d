"""What is known about each downloaded file's integrity, for the library, the app and the CLI.

Every download's sha256 is computed. It is *verified* when it equals the hash the hub
gave (the listing's LFS id, or the ``X-Linked-Etag`` of the file); a file for which the
hub gave no hash is kept but recorded as *unverified*. The record is one JSON document
in the data folder, keyed by the file's absolute path.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from engine.paths import paths

log = logging.getLogger(__name__)

_lock = threading.Lock()


@dataclass(frozen=True)
class Verification:
    """One file's record.

    Attributes:
        sha256: the hash of the bytes on disk.
        verified: it equals the hub's hash.
        source: where the hub's hash came from: ``listing``, ``etag``, or None (no hash).
    """

    sha256: str
    verified: bool
    source: str | None


def _store() -> Path:
    return paths().data / "verification.json"


def _load() -> dict[str, dict[str, object]]:
    try:
        doc = json.loads(_store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def record(path: Path, sha256: str, source: str | None) -> Verification:
    """Record the hash of ``path``; ``source`` None means the hub gave none to compare."""
    entry = Verification(sha256=sha256, verified=source is not None, source=source)
    with _lock:
        doc = _load()
        doc[str(Path(path).absolute())] = {"sha256": sha256, "verified": entry.verified,
                                           "source": source, "stamp": _stamp(path)}
        store = _store()
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_name(store.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        os.replace(tmp, store)
    if not entry.verified:
        log.warning("%s: the hub gave no sha256; the file is kept but unverified", path)
    return entry


def verification_of(path: Path) -> Verification | None:
    """The record of a downloaded file (None: not downloaded by Loadout)."""
    item = _load().get(str(Path(path).absolute()))
    if not isinstance(item, dict) or not isinstance(item.get("sha256"), str):
        return None
    source = item.get("source")
    return Verification(sha256=str(item["sha256"]), verified=bool(item.get("verified")),
                        source=source if isinstance(source, str) else None)


def known_hash(path: Path) -> str | None:
    """The recorded sha256 of ``path`` if the file is unchanged since (same size and
    modification time), so that an accepted file is not hashed again on every pull."""
    item = _load().get(str(Path(path).absolute()))
    try:
        unchanged = isinstance(item, dict) and item.get("stamp") == _stamp(path)
    except OSError:
        return None
    return str(item["sha256"]) if unchanged and isinstance(item, dict) else None
