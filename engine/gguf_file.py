"""Local GGUF files as ``read_at`` functions, and :func:`load_profile` for a path.

A split model (``name-00001-of-00003.gguf``) is read as one: the first shard is given,
the others are found next to it by name.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

from engine.errors import ModelNotFoundError
from planner.gguf import read_header, read_profile
from planner.profile import ModelProfile
from planner.projector import ProjectorProfile, projector_profile

log = logging.getLogger(__name__)

ReadAt = Callable[[int, int], bytes]
_SPLIT = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")
_cache: dict[tuple[str, int, int], ModelProfile] = {}
_cache_lock = threading.Lock()
_CACHE_MAX = 32


def file_read_at(handle: BinaryIO) -> ReadAt:
    """A ``read_at(offset, size)`` over an open binary file (positioned reads)."""
    if sys.platform != "win32":
        fd = handle.fileno()

        def pread_at(offset: int, size: int) -> bytes:
            return os.pread(fd, size, offset)

        return pread_at
    lock = threading.Lock()  # Windows has no pread: seek + read under a lock

    def seek_read_at(offset: int, size: int) -> bytes:
        with lock:
            handle.seek(offset)
            return handle.read(size)

    return seek_read_at


def split_shards(path: Path) -> list[Path]:
    """All files of the model whose first (or only) file is ``path``, in order.

    Raises:
        ModelNotFoundError: a shard of a split model is missing.
    """
    m = _SPLIT.match(path.name)
    if m is None:
        return [path]
    count = int(m.group("count"))
    shards = [path.with_name(f"{m.group('stem')}-{i:05d}-of-{count:05d}.gguf")
              for i in range(1, count + 1)]
    missing = [p.name for p in shards if not p.is_file()]
    if missing:
        raise ModelNotFoundError(f"split model {path.name}: missing {', '.join(missing)}")
    return shards


def load_profile(path: str | Path) -> ModelProfile:
    """Read the profile of the GGUF model at ``path`` (the first shard of a split model).

    Results are cached by (path, size, modification time).

    Raises:
        ModelNotFoundError: no such file, or a missing shard.
        planner.errors.GGUFError: the header cannot be read.
        planner.errors.UnsupportedModelError: an architecture or type we cannot price.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelNotFoundError(f"no such model file: {path}")
    shards = split_shards(path)
    stats = [p.stat() for p in shards]
    key = (str(path.resolve()), sum(s.st_size for s in stats),
           max(s.st_mtime_ns for s in stats))
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    with ExitStack() as stack:
        handles = [stack.enter_context(open(p, "rb")) for p in shards]
        readers = [(file_read_at(h), st.st_size) for h, st in zip(handles, stats, strict=True)]
        profile = read_profile(readers[0][0], readers[0][1], extra_shards=readers[1:])
    log.debug("read %s: %s, %d tensors, %d shard(s)", path.name, profile.architecture,
              len(profile.tensors), profile.shards)
    with _cache_lock:
        if len(_cache) >= _CACHE_MAX:
            _cache.pop(next(iter(_cache)))
        _cache[key] = profile
    return profile


def load_projector(path: str | Path) -> ProjectorProfile:
    """Read the profile of a vision projector (``mmproj-*.gguf``) from its header.

    Raises:
        ModelNotFoundError: no such file.
        planner.errors.GGUFError: the header cannot be read.
        ValueError: the file is not a vision projector.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelNotFoundError(f"no such projector file: {path}")
    with open(path, "rb") as handle:
        header = read_header(file_read_at(handle), path.stat().st_size)
    return projector_profile(header)
