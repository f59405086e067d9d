"""Downloads from the hub: planned first, resumable, verified, with progress and cancel.

``plan_download(spec)`` lists what ``REPO[:QUANT]`` (or ``hf:OWNER/REPO/FILE.gguf``) means
(all shards of a split file), where it goes and whether the disk has room; ``download``
carries that plan out. Bytes go to ``NAME.part`` beside the target (or the hub cache's
``blobs/SHA.incomplete``, as huggingface_hub names them) with a small state file under
``paths().data / "downloads"``, so a paused or interrupted download continues where it
stopped, also after a restart. Each file's sha256 is computed and checked against the
hub's (the listing's LFS id, else the file's ``X-Linked-Etag``); a file that does not match
is removed; a file for which the hub gives no hash is refused before any byte is
fetched (:class:`UnverifiedFileError`) unless the caller allows unverified files, and
then kept and recorded as unverified (:mod:`engine.hub.verification`). A file already
at the target is hashed before it is accepted. Every path, revision and id the hub sends
is checked before it names a file (:mod:`engine.hub.hub_ids`), and a body that ends early
is retried a bounded number of times, with a growing pause.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from huggingface_hub import constants

from engine.hub import hubapi, verification
from engine.hub.errors import (
    BadSpecError,
    HubOfflineError,
    IntegrityError,
    NotEnoughDiskError,
    UnsafeHubDataError,
    UnverifiedFileError,
)
from engine.hub.hub_ids import inside, safe_repo_path
from engine.hub.locks import exclusive
from engine.hub.pullspec import choose_files, parse_pull_spec, projector_for
from engine.paths import paths

log = logging.getLogger(__name__)

DISK_MARGIN = 512 << 20        # keep this much free beyond the download
BLOCK = 1 << 20
RETRIES = 3                    # connection drops survived per file before giving up
BACKOFF_S = 0.25               # the pause before a retry, doubled each time ...
BACKOFF_MAX_S = 4.0            # ... up to this


class Destination(StrEnum):
    """Where downloaded files go: Loadout's model folder or the shared hub cache."""

    MODELS = "models"
    HUB_CACHE = "hub-cache"


class Status(StrEnum):
    COMPLETE = "complete"
    PAUSED = "paused"        # cancel event set: partial files kept for a later resume


@dataclass(frozen=True)
class DownloadItem:
    """One file of a download: where it comes from, where it goes, what is already here."""

    remote: hubapi.RemoteFile
    target: Path
    partial: Path
    have_bytes: int
    hash_source: str | None = "listing"  # where remote.sha256 came from (None: nowhere)


@dataclass(frozen=True)
class DownloadPlan:
    """What a download will do, computed before any byte moves."""

    repo: str
    quant: str | None
    destination: Destination
    items: tuple[DownloadItem, ...]
    commit: str | None
    free_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(i.remote.size for i in self.items)

    @property
    def remaining_bytes(self) -> int:
        return sum(0 if _present(i) else i.remote.size - i.have_bytes for i in self.items)

    @property
    def fits_on_disk(self) -> bool:
        return self.free_bytes >= self.remaining_bytes + DISK_MARGIN

    @property
    def model_path(self) -> Path:
        """The file to open once done (first shard of a split model)."""
        return self.items[0].target


@dataclass(frozen=True)
class Progress:
    """Reported while downloading (at most ~10 times a second, and at each file's end)."""

    file: str
    file_index: int
    file_count: int
    done_bytes: int          # over the whole download, resumed bytes included
    total_bytes: int
    bytes_per_s: float       # over this session's bytes


@dataclass(frozen=True)
class DownloadResult:
    status: Status
    model_path: Path
    files: tuple[Path, ...]
    bytes_downloaded: int    # in this call
    unverified: tuple[Path, ...] = ()  # kept, but the hub gave no sha256 to check them by


ProgressCallback = Callable[[Progress], None]


def _hub_cache() -> Path:
    return Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


def _paths_for(remote: hubapi.RemoteFile, destination: Destination,
               commit: str | None) -> tuple[Path, Path]:
    """Target and partial file of ``remote``, both checked to stay in the destination.

    Raises:
        UnsafeHubDataError: the repo, path or revision would lead outside it.
    """
    hubapi.check_repo_id(remote.repo)
    if safe_repo_path(remote.path) is None:
        raise UnsafeHubDataError(f"{remote.repo}: unsafe file path {remote.path[:100]!r}")
    if destination is Destination.MODELS:
        base = paths().models
        target = base / remote.repo / remote.path
        partial = target.with_name(target.name + ".part")
    else:
        base = _hub_cache()
        repo_dir = base / ("models--" + remote.repo.replace("/", "--"))
        blob = repo_dir / "blobs" / (remote.sha256
                                     or hashlib.sha256(remote.path.encode()).hexdigest())
        target = repo_dir / "snapshots" / (commit or remote.revision) / remote.path
        partial = blob.with_name(blob.name + ".incomplete")
    return inside(target, base), inside(partial, base)


def _state_path(partial: Path) -> Path:
    key = hashlib.sha256(str(partial).encode()).hexdigest()[:32]
    return paths().data / "downloads" / f"{key}.json"


def _free_bytes(folder: Path) -> int:
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def plan_download(spec: str, destination: Destination = Destination.MODELS,
                  timeout: float = hubapi.DEFAULT_TIMEOUT_S,
                  with_projector: bool = True) -> DownloadPlan:
    """List the files ``spec`` names and what is already here; no byte is downloaded.

    ``with_projector``: the model's vision projector (``mmproj``) in the same repo folder
    comes too, after the model's files.

    Raises:
        BadSpecError, HubOfflineError, HubNotFoundError: see :mod:`engine.hub.errors`.
    """
    repo, quant, filename = parse_pull_spec(spec)
    files = hubapi.list_files(repo, timeout=timeout)
    group = choose_files(repo, files, quant, filename)
    commit = hubapi.head_file(repo, group.first.path, timeout=timeout).commit \
        if destination is Destination.HUB_CACHE else None
    items = []
    projector = projector_for(files, group) if with_projector else None
    for listed in group.files + ((projector,) if projector is not None else ()):
        remote, source = _with_hash(listed, timeout)
        target, partial = _paths_for(remote, destination, commit)
        have = partial.stat().st_size if partial.exists() and _state_matches(partial, remote) \
            else 0
        items.append(DownloadItem(remote=remote, target=target, partial=partial,
                                  have_bytes=min(have, remote.size), hash_source=source))
    folder = items[0].partial.parent
    return DownloadPlan(repo=repo, quant=group.quant or quant, destination=destination,
                        items=tuple(items), commit=commit, free_bytes=_free_bytes(folder))


def _with_hash(remote: hubapi.RemoteFile, timeout: float
               ) -> tuple[hubapi.RemoteFile, str | None]:
    """``remote`` with the sha256 to check it by, and where that came from: the listing's
    LFS id, else the file's ``X-Linked-Etag`` (None: the hub gives none)."""
    if remote.sha256 is not None:
        return remote, "listing"
    etag = hubapi.head_file(remote.repo, remote.path, remote.revision, timeout).sha256
    if etag is None:
        return remote, None
    return replace(remote, sha256=etag), "etag"


def _state_matches(partial: Path, remote: hubapi.RemoteFile) -> bool:
    try:
        doc = json.loads(_state_path(partial).read_text())
    except (OSError, ValueError):
        return False
    return bool(doc.get("size") == remote.size and doc.get("sha256") == remote.sha256)


def _write_state(item: DownloadItem) -> None:
    state = _state_path(item.partial)
    state.parent.mkdir(parents=True, exist_ok=True)
    r = item.remote
    state.write_text(json.dumps({"repo": r.repo, "path": r.path, "revision": r.revision,
                                 "size": r.size, "sha256": r.sha256,
                                 "partial": str(item.partial), "target": str(item.target)}))


def download(plan: DownloadPlan | str, progress: ProgressCallback | None = None,
             cancel: threading.Event | None = None,
             destination: Destination = Destination.MODELS,
             timeout: float = hubapi.DEFAULT_TIMEOUT_S,
             allow_unverified: bool = False) -> DownloadResult:
    """Carry out a download plan (or plan ``spec`` first), resuming what is already here.

    Args:
        plan: a :class:`DownloadPlan` or a spec for :func:`plan_download`.
        progress: called with a :class:`Progress` as bytes arrive.
        cancel: when set, stops soon and returns ``Status.PAUSED`` (partial files kept;
            :func:`discard` removes them).
        destination: for a spec: Loadout's model folder or the hub cache.
        timeout: seconds per network operation.
        allow_unverified: download (and keep) files the hub gives no sha256 for; they
            are recorded as unverified. Off: such a download is refused.

    Raises:
        UnverifiedFileError: a file has no sha256 to be checked by, and
            ``allow_unverified`` is off (nothing was downloaded).
        NotEnoughDiskError: less free space than the remaining bytes (nothing written).
        IntegrityError: a file's sha256 differs from the hub's (the file is removed).
        HubOfflineError: the hub cannot be reached (partial files kept for a resume).
        DownloadInProgressError: the same download runs elsewhere right now.
    """
    if isinstance(plan, str):
        plan = plan_download(plan, destination, timeout)
    unchecked = [i.remote.path for i in plan.items if i.hash_source is None]
    if unchecked and not allow_unverified:
        raise UnverifiedFileError(
            f"{plan.repo}: the hub gives no sha256 for {', '.join(unchecked)}, so the "
            "download could not be checked (a corrupt or substituted file would go "
            "unnoticed); allow unverified files to download it anyway")
    if not plan.fits_on_disk:
        raise NotEnoughDiskError(
            f"{plan.repo}: {plan.remaining_bytes / 1e9:.1f} GB to download but only "
            f"{plan.free_bytes / 1e9:.1f} GB free in {plan.items[0].partial.parent}")
    with exclusive(plan.items[0].partial):
        return _download_locked(plan, progress, cancel, timeout)


def _download_locked(plan: DownloadPlan, progress: ProgressCallback | None,
                     cancel: threading.Event | None, timeout: float) -> DownloadResult:
    meter = _Meter(plan, progress)
    unverified: list[Path] = []
    for index, item in enumerate(plan.items):
        meter.file_index = index
        if _present(item) and _existing_matches(item):
            if plan.destination is Destination.HUB_CACHE:
                _link(item, plan)  # the blob may be another snapshot's (or another tool's)
        else:
            digest = _fetch_file(item, meter, cancel, timeout)
            if digest is None:
                return DownloadResult(Status.PAUSED, plan.model_path,
                                      tuple(i.target for i in plan.items),
                                      meter.session_bytes)
            _finish(item, plan)
            verification.record(item.target, digest, item.hash_source)
        if item.hash_source is None:
            unverified.append(item.target)
    meter.report(force=True)
    return DownloadResult(Status.COMPLETE, plan.model_path,
                          tuple(i.target for i in plan.items), meter.session_bytes,
                          tuple(unverified))


def _existing_matches(item: DownloadItem) -> bool:
    """Whether the file already here has the hub's hash (it is hashed, never assumed).

    A file that does not match is removed, to be downloaded again; one the hub gives no
    hash for is accepted and recorded as unverified.
    """
    blob = _blob_of(item)
    here = item.target if item.target.exists() and item.target.stat().st_size == \
        item.remote.size else blob
    actual = verification.known_hash(here) if here == item.target else None
    if actual is None:
        digest = hashlib.sha256()
        _hash_existing(here, digest)
        actual = digest.hexdigest()
    expected = item.remote.sha256
    if expected is None or actual == expected:
        verification.record(item.target, actual, item.hash_source)
        return True
    log.warning("%s: the file already here has sha256 %s..., not the hub's %s...; "
                "downloading it again", here, actual[:12], expected[:12])
    here.unlink(missing_ok=True)
    return False


class _Meter:
    def __init__(self, plan: DownloadPlan, callback: ProgressCallback | None) -> None:
        self.plan = plan
        self.callback = callback
        self.file_index = 0
        self.done = plan.total_bytes - plan.remaining_bytes
        self.session_bytes = 0
        self.started = time.monotonic()
        self.last = 0.0

    def add(self, n: int) -> None:
        self.done += n
        self.session_bytes += n
        self.report()

    def report(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.callback is None or (not force and now - self.last < 0.1):
            return
        self.last = now
        item = self.plan.items[self.file_index]
        rate = self.session_bytes / max(now - self.started, 1e-6)
        self.callback(Progress(item.remote.path, self.file_index, len(self.plan.items),
                               self.done, self.plan.total_bytes, rate))


def _hash_existing(partial: Path, digest: hashlib._Hash) -> int:
    with open(partial, "rb") as f:
        while block := f.read(BLOCK):
            digest.update(block)
    return partial.stat().st_size


def _backoff(attempt: int) -> float:
    return float(min(BACKOFF_MAX_S, BACKOFF_S * 2.0 ** (attempt - 1)))


def _fetch_file(item: DownloadItem, meter: _Meter, cancel: threading.Event | None,
                timeout: float) -> str | None:
    """Download one file into its partial and check it; its sha256, or None if cancelled
    (partial kept).

    Raises:
        HubOfflineError: the connection dropped, or the body ended early, more than
            ``RETRIES`` times (the partial is kept for a resume).
        IntegrityError: the bytes do not have the hub's sha256 (the partial is removed).
    """
    remote = item.remote
    item.partial.parent.mkdir(parents=True, exist_ok=True)
    if not (item.partial.exists() and _state_matches(item.partial, remote)):
        item.partial.write_bytes(b"")
    _write_state(item)
    digest = hashlib.sha256()
    have = _hash_existing(item.partial, digest)
    if have > remote.size:
        item.partial.write_bytes(b"")
        digest, have = hashlib.sha256(), 0
    drops = 0
    with open(item.partial, "ab") as out:
        while have < remote.size:
            if cancel is not None and cancel.is_set():
                return None
            try:
                have = _stream(remote, have, out, digest, meter, cancel, timeout)
            except HubOfflineError:
                drops += 1
                out.flush()
                have = out.tell()  # every byte written is also in the digest
                if drops > RETRIES or hubapi.is_offline():
                    raise
                log.warning("%s: connection lost at %d bytes; resuming", remote.path, have)
                time.sleep(_backoff(drops))
                continue
            if have < remote.size and not (cancel is not None and cancel.is_set()):
                drops += 1  # the body ended before the file did
                if drops > RETRIES:
                    raise HubOfflineError(
                        f"{remote.path}: the hub ended the file early {drops} times "
                        f"({have} of {remote.size} bytes are kept; run again to resume)")
                log.warning("%s: the body ended at %d of %d bytes; resuming", remote.path,
                            have, remote.size)
                time.sleep(_backoff(drops))
    if cancel is not None and cancel.is_set() and have < remote.size:
        return None
    sha256 = digest.hexdigest()
    _verify(item, sha256)
    return sha256


def _stream(remote: hubapi.RemoteFile, have: int, out: object, digest: hashlib._Hash,
            meter: _Meter, cancel: threading.Event | None, timeout: float) -> int:
    assert hasattr(out, "write")
    with hubapi.open_range(remote.url, have, None, timeout) as response:
        try:
            for block in response.iter_bytes():  # as received: a drop loses little
                block = block[: remote.size - have]
                out.write(block)
                digest.update(block)
                have += len(block)
                meter.add(len(block))
                if cancel is not None and cancel.is_set():
                    break
        except hubapi.TransportError as exc:
            raise HubOfflineError(f"{remote.path}: connection lost ({exc})") from exc
    return have


def _verify(item: DownloadItem, sha256: str) -> None:
    expected = item.remote.sha256
    if expected is not None and sha256 != expected.lower():
        log.warning("%s: sha256 %s differs from the hub's %s", item.remote.path, sha256,
                    expected)
        item.partial.unlink(missing_ok=True)
        _state_path(item.partial).unlink(missing_ok=True)
        raise IntegrityError(f"{item.remote.path}: sha256 {sha256[:12]}... differs from the "
                             f"hub's {expected[:12]}...; the download was removed")


def _blob_of(item: DownloadItem) -> Path:
    return item.partial.with_name(item.partial.name.removesuffix(".incomplete"))


def _present(item: DownloadItem) -> bool:
    """The file is here already (or, in the hub cache, its blob is)."""
    size = item.remote.size
    if item.target.exists() and item.target.stat().st_size == size:
        return True
    blob = _blob_of(item)
    return item.partial.name.endswith(".incomplete") and blob.exists() \
        and blob.stat().st_size == size


def _finish(item: DownloadItem, plan: DownloadPlan) -> None:
    item.target.parent.mkdir(parents=True, exist_ok=True)
    if plan.destination is Destination.MODELS:
        os.replace(item.partial, item.target)
    else:
        os.replace(item.partial, _blob_of(item))
        _link(item, plan)
    _state_path(item.partial).unlink(missing_ok=True)


def _link(item: DownloadItem, plan: DownloadPlan) -> None:
    """Point the hub cache's snapshot entry at the blob (as huggingface_hub lays it out)."""
    blob = _blob_of(item)
    item.target.parent.mkdir(parents=True, exist_ok=True)
    item.target.unlink(missing_ok=True)
    try:
        item.target.symlink_to(os.path.relpath(blob, item.target.parent))
    except OSError:  # no symlinks (Windows without developer mode): keep a copy
        shutil.copyfile(blob, item.target)
    if plan.commit:
        ref = blob.parent.parent / "refs" / item.remote.revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(plan.commit)


def discard(plan: DownloadPlan) -> int:
    """Cancel for good: remove the partial files of ``plan``. Returns the bytes freed."""
    freed = 0
    for item in plan.items:
        if item.partial.exists():
            freed += item.partial.stat().st_size
            item.partial.unlink()
        _state_path(item.partial).unlink(missing_ok=True)
    return freed


@dataclass(frozen=True)
class PendingDownload:
    """A partial download found on disk (e.g. after a restart), to resume or discard."""

    repo: str
    path: str
    partial: Path
    target: Path
    have_bytes: int
    size: int


def pending_downloads() -> tuple[PendingDownload, ...]:
    """Partial downloads left by a pause, a crash or a restart."""
    folder = paths().data / "downloads"
    found = []
    for state in sorted(folder.glob("*.json")) if folder.exists() else ():
        try:
            doc = json.loads(state.read_text())
            partial = Path(doc["partial"])
            have = partial.stat().st_size if partial.exists() else 0
            found.append(PendingDownload(doc["repo"], doc["path"], partial,
                                         Path(doc["target"]), have, int(doc["size"])))
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("unreadable download state %s", state)
    return tuple(found)


def with_free_bytes(plan: DownloadPlan, free_bytes: int) -> DownloadPlan:
    """The same plan with another free-space figure (what-if, and for tests of the check)."""
    return replace(plan, free_bytes=free_bytes)


__all__ = ["BadSpecError", "Destination", "DownloadItem", "DownloadPlan", "DownloadResult",
           "PendingDownload", "Progress", "Status", "choose_files", "discard", "download",
           "parse_pull_spec",
           "pending_downloads", "plan_download"]
