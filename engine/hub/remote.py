"""Remote profiles: ``hf:OWNER/REPO/FILE.gguf`` read through ranged HTTP reads of the header.

Only the header is fetched (a few MB, never the weights), split GGUFs included; the bytes
and the file's size / sha256 are cached under ``paths().cache / "hub"``, so a model once
seen can be planned again offline. The result is the same ``ModelProfile`` a local file
gives, hence an exact Plan before downloading.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.hub import hubapi
from engine.hub.errors import BadSpecError, HubError, HubOfflineError
from engine.paths import paths

if TYPE_CHECKING:
    from planner.profile import ModelProfile

log = logging.getLogger(__name__)

FIRST_FETCH = 1 << 20          # the first read of a header asks for 1 MiB
MAX_STEP = 32 << 20            # a header grows by at most 32 MiB per request
CHECK_AFTER_S = 6 * 3600.0     # a cached header older than this is checked (one HEAD)
_SPLIT = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class HubSpec:
    """A file on the hub: ``hf:OWNER/REPO/PATH/IN/REPO.gguf[@REVISION]``."""

    repo: str
    filename: str
    revision: str = "main"

    def __str__(self) -> str:
        suffix = "" if self.revision == "main" else f"@{self.revision}"
        return f"hf:{self.repo}/{self.filename}{suffix}"


def parse_spec(spec: str) -> HubSpec:
    """Parse ``hf:OWNER/REPO/FILE.gguf`` (optionally ``@REVISION``).

    Raises:
        BadSpecError: not of that form.
    """
    body = spec[3:] if spec.startswith("hf:") else spec
    revision = "main"
    if "@" in body:
        body, revision = body.rsplit("@", 1)
    parts = [p for p in body.split("/") if p]
    if len(parts) < 3 or not parts[-1].lower().endswith(".gguf") or ".." in parts:
        raise BadSpecError(f"{spec!r}: expected hf:OWNER/REPO/FILE.gguf")
    repo = hubapi.check_repo_id("/".join(parts[:2]))
    return HubSpec(repo=repo, filename="/".join(parts[2:]), revision=revision or "main")


def shard_names(filename: str) -> tuple[str, ...]:
    """All files of a split GGUF named like ``X-00001-of-00003.gguf``; else just ``filename``."""
    m = _SPLIT.match(filename)
    if not m:
        return (filename,)
    count = int(m["count"])
    return tuple(f"{m['stem']}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1))


def _cache_dir() -> Path:
    return paths().cache / "hub"


def _key(repo: str, filename: str, revision: str) -> str:
    return hashlib.sha256(f"{repo}\0{filename}\0{revision}".encode()).hexdigest()[:32]


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (readers see the old or the new file, never half).

    The cache is best effort: a failure is logged, never raised.
    """
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        log.warning("cannot write the hub cache file %s: %s", path, exc)
        tmp.unlink(missing_ok=True)


class RemoteFileReader:
    """``read_at(offset, size)`` over one hub file, caching the header prefix on disk.

    Reads that extend the cached prefix fetch at least as much again (1 MiB first), so a
    header of a few MB takes a handful of requests; reads far past the prefix are fetched
    alone and not cached. ``bytes_fetched`` counts bytes that came over the network.
    """

    def __init__(self, repo: str, filename: str, revision: str = "main",
                 timeout: float = hubapi.DEFAULT_TIMEOUT_S,
                 max_age_s: float = CHECK_AFTER_S) -> None:
        self.repo = repo
        self.filename = filename
        self.revision = revision
        self.timeout = timeout
        self.bytes_fetched = 0
        self.bytes_asked = 0           # furthest byte the caller asked for
        self.requests = 0
        self._location: str | None = None
        folder = _cache_dir()
        key = _key(repo, filename, revision)
        self._meta_path = folder / f"{key}.json"
        self._prefix_path = folder / f"{key}.head"
        self.size, self.sha256 = self._load_meta(max_age_s)
        self._prefix = bytearray(self._prefix_path.read_bytes()) if self._prefix_path.exists() \
            else bytearray()

    def _load_meta(self, max_age_s: float) -> tuple[int, str | None]:
        cached: tuple[int, str | None, float] | None = None
        try:
            doc = json.loads(self._meta_path.read_text())
            cached = int(doc["size"]), doc.get("sha256"), float(doc.get("checked_at", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if cached is not None and (hubapi.is_offline() or time.time() - cached[2] < max_age_s):
            return cached[0], cached[1]
        try:  # first read, or a cached header old enough to check it is still current
            meta = self._head()
        except HubOfflineError:
            if cached is None:
                raise
            return cached[0], cached[1]
        if cached is not None and (cached[0], cached[1]) != (meta.size, meta.etag):
            log.info("hf:%s/%s changed on the hub; its header is read again",
                     self.repo, self.filename)
            self._prefix_path.unlink(missing_ok=True)
        self._save_meta(meta.size, meta.etag)
        return meta.size, meta.etag

    def _head(self) -> hubapi.FileMeta:
        try:
            meta = hubapi.head_file(self.repo, self.filename, self.revision, self.timeout)
        except HubOfflineError as exc:
            raise HubOfflineError(f"{exc}; hf:{self.repo}/{self.filename} was never read "
                                  "online, so nothing is cached") from exc
        self._location = meta.location
        return meta

    def _save_meta(self, size: int, sha256: str | None) -> None:
        doc = {"repo": self.repo, "filename": self.filename, "revision": self.revision,
               "size": size, "sha256": sha256, "checked_at": time.time()}
        _write_atomically(self._meta_path, json.dumps(doc).encode())

    def _fetch(self, start: int, length: int) -> bytes:
        if self._location is None:
            meta = self._head()
            if (meta.size, meta.etag) != (self.size, self.sha256):  # changed upstream
                log.info("hf:%s/%s changed on the hub; re-reading its header",
                         self.repo, self.filename)
                self.size, self.sha256 = meta.size, meta.etag
                self._save_meta(meta.size, meta.etag)
                self._prefix = bytearray()
                if start > 0:
                    raise HubError(f"hf:{self.repo}/{self.filename} changed while being read")
            self._location = meta.location
        assert self._location is not None
        data = hubapi.read_range(self._location, start, length, self.timeout)
        self.bytes_fetched += len(data)
        self.requests += 1
        return data

    def read_at(self, offset: int, size: int) -> bytes:
        """Return up to ``size`` bytes at ``offset`` (fewer only at the end of the file)."""
        if offset < 0 or size < 0:
            raise ValueError("offset and size must be >= 0")
        end = min(offset + size, self.size)
        if offset >= end:
            return b""
        self.bytes_asked = max(self.bytes_asked, end)
        have = len(self._prefix)
        if end <= have:
            return bytes(self._prefix[offset:end])
        if offset > have + MAX_STEP:  # far away: tensor data, not the header
            return self._fetch(offset, end - offset)
        want = min(self.size, max(end, have + max(FIRST_FETCH, min(have, MAX_STEP))))
        self._prefix += self._fetch(have, want - have)
        if len(self._prefix) < min(want, self.size):
            raise HubError(f"hf:{self.repo}/{self.filename}: the hub sent a short read")
        _write_atomically(self._prefix_path, bytes(self._prefix))
        return bytes(self._prefix[offset:end])


@dataclass(frozen=True)
class RemoteRead:
    """A remote profile and what it cost: bytes fetched over the network vs file size."""

    profile: ModelProfile
    file_bytes: int
    bytes_fetched: int           # over the network in this call (0 when cached)
    header_bytes: int            # furthest byte the parser asked for, all shards
    requests: int
    shards: tuple[str, ...]


def read_remote(spec: str | HubSpec, timeout: float = hubapi.DEFAULT_TIMEOUT_S,
                max_age_s: float = CHECK_AFTER_S) -> RemoteRead:
    """Read the profile of a hub GGUF (all shards of a split one) from its headers.

    Args:
        spec: ``hf:OWNER/REPO/FILE.gguf`` (any shard of a split model) or a :class:`HubSpec`.
        timeout: seconds per network operation.
        max_age_s: a cached header older than this is checked against the hub (a file
            re-uploaded under the same name is read again); offline, the cache is used.

    Raises:
        BadSpecError: a malformed spec.
        HubOfflineError: the hub cannot be reached and the header is not cached.
        HubNotFoundError: no such repo or file.
        GGUFError: the file is not a readable GGUF.
    """
    from planner.gguf import read_profile

    hub = parse_spec(spec) if isinstance(spec, str) else spec
    names = shard_names(hub.filename)
    readers = [RemoteFileReader(hub.repo, n, hub.revision, timeout, max_age_s) for n in names]
    first, rest = readers[0], readers[1:]
    profile = read_profile(first.read_at, first.size,
                           extra_shards=[(r.read_at, r.size) for r in rest])
    return RemoteRead(profile=profile, file_bytes=sum(r.size for r in readers),
                      bytes_fetched=sum(r.bytes_fetched for r in readers),
                      header_bytes=sum(r.bytes_asked for r in readers),
                      requests=sum(r.requests for r in readers), shards=names)


def load_remote_profile(spec: str, timeout: float = hubapi.DEFAULT_TIMEOUT_S) -> ModelProfile:
    """The ``ModelProfile`` of ``hf:OWNER/REPO/FILE.gguf`` from ranged reads of its header.

    What ``engine.models`` should call for an ``hf:`` MODEL used header-only (plan,
    recommend). See :func:`read_remote` for the errors.
    """
    return read_remote(spec, timeout).profile


def is_hub_spec(spec: str) -> bool:
    """True for ``hf:...`` model references."""
    return spec.startswith("hf:")


__all__ = ["BadSpecError", "HubSpec", "RemoteFileReader", "RemoteRead", "is_hub_spec",
           "load_remote_profile", "parse_spec", "read_remote", "shard_names"]
