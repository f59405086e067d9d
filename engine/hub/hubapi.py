"""The few hub calls Loadout makes, over huggingface_hub's shared HTTP session.

Every call has an explicit timeout and no retry loop, so "no network" becomes a clear
:class:`HubOfflineError` within seconds instead of a hang. The endpoint is read from
``HF_ENDPOINT`` at call time (huggingface_hub reads it once, at import).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from huggingface_hub import (
    constants,
    get_hf_file_metadata,
    get_session,
    hf_hub_url,
    hf_raise_for_status,
)
from huggingface_hub.errors import (
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils._headers import build_hf_headers

from engine.hub.errors import BadSpecError, HubError, HubNotFoundError, HubOfflineError
from engine.hub.hub_ids import check_commit, check_revision, safe_repo_path, sha256_or_none

try:  # huggingface_hub 2.x speaks httpx2; 1.x spoke httpx
    import httpx2 as http_lib
except ImportError:  # pragma: no cover
    import httpx as http_lib  # type: ignore[no-redef]

log = logging.getLogger(__name__)
TransportError = http_lib.TransportError

DEFAULT_TIMEOUT_S = 10.0
_TRUE = {"1", "on", "yes", "true"}
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
T = TypeVar("T")


def endpoint() -> str:
    """The hub's base URL: ``HF_ENDPOINT`` if set, else huggingface_hub's default."""
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def is_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` asks for no network at all."""
    return (os.environ.get("HF_HUB_OFFLINE") or "").strip().lower() in _TRUE


def check_repo_id(repo: str) -> str:
    """Return ``repo`` if it looks like ``OWNER/NAME``.

    Raises:
        BadSpecError: anything else.
    """
    if not _REPO.match(repo) or ".." in repo:
        raise BadSpecError(f"{repo!r} is not a hub repo name (expected OWNER/NAME)")
    return repo


@dataclass(frozen=True)
class RemoteFile:
    """One file of a hub repo, as its listing describes it."""

    repo: str
    path: str
    size: int
    sha256: str | None      # the LFS oid; None for small files kept in git
    revision: str = "main"

    @property
    def url(self) -> str:
        return file_url(self.repo, self.path, self.revision)


@dataclass(frozen=True)
class FileMeta:
    """What a HEAD on ``/resolve`` says about a file."""

    size: int
    etag: str | None        # sha256 for LFS files (``X-Linked-Etag``)
    commit: str | None
    location: str           # where the bytes are (after hub redirects)

    @property
    def sha256(self) -> str | None:
        """The file's sha256 when the etag is one (LFS files), else None."""
        return sha256_or_none(self.etag)


def file_url(repo: str, path: str, revision: str = "main") -> str:
    """The ``/resolve`` URL of a file at the current endpoint."""
    return hf_hub_url(repo, path, revision=revision, endpoint=endpoint())


def call(what: str, fn: Callable[[], T]) -> T:
    """Run one hub call, turning transport and HTTP failures into hub errors.

    Raises:
        HubOfflineError: offline mode, no connection, timeout.
        HubNotFoundError: no such repo / revision / file.
        HubError: any other refusal by the hub.
    """
    if is_offline():
        raise HubOfflineError(f"{what}: offline (HF_HUB_OFFLINE is set)")
    try:
        return fn()
    except OfflineModeIsEnabled as exc:
        raise HubOfflineError(f"{what}: offline (HF_HUB_OFFLINE is set)") from exc
    except http_lib.TimeoutException as exc:
        raise HubOfflineError(f"{what}: the hub at {endpoint()} did not answer in time") from exc
    except http_lib.TransportError as exc:
        raise HubOfflineError(f"{what}: cannot reach the hub at {endpoint()} ({exc})") from exc
    except (RepositoryNotFoundError, RevisionNotFoundError, RemoteEntryNotFoundError) as exc:
        raise HubNotFoundError(f"{what}: not found on the hub (or private/gated)") from exc
    except HfHubHTTPError as exc:
        raise HubError(f"{what}: the hub refused: {exc}") from exc


def list_files(repo: str, revision: str = "main",
               timeout: float = DEFAULT_TIMEOUT_S) -> tuple[RemoteFile, ...]:
    """Every file of ``repo`` at ``revision`` with sizes and sha256 (one paginated listing).

    Entries whose path, size or hash is unsafe or malformed are left out (and logged):
    nothing the hub names can lead outside the folder a download writes to.
    """
    check_repo_id(repo)
    check_revision(revision)
    url: str | None = (f"{endpoint()}/api/models/{repo}/tree/{quote(revision, safe='')}"
                       "?recursive=true")
    files: list[RemoteFile] = []

    def fetch(page_url: str) -> http_lib.Response:
        response = get_session().get(page_url, headers=build_hf_headers(), timeout=timeout,
                                     follow_redirects=True)
        hf_raise_for_status(response)
        return response

    while url is not None:
        response = call(f"listing {repo}", lambda u=url: fetch(u))  # type: ignore[misc]
        listing = response.json()
        for item in listing if isinstance(listing, list) else ():
            if not isinstance(item, dict) or item.get("type") != "file":
                continue
            remote = _listed_file(repo, revision, item)
            if remote is None:
                log.warning("%s: ignoring a listed file with an unsafe or malformed entry: "
                            "%.200r", repo, item)
                continue
            files.append(remote)
        url = response.links.get("next", {}).get("url")
    return tuple(files)


def _listed_file(repo: str, revision: str, item: dict[str, Any]) -> RemoteFile | None:
    """The RemoteFile a listing entry describes, or None when any part of it is unsafe."""
    path = safe_repo_path(item.get("path"))
    size = item.get("size")
    lfs = item.get("lfs")
    oid = lfs.get("oid") if isinstance(lfs, dict) else None
    sha256 = sha256_or_none(oid)
    if path is None or isinstance(size, bool) or not isinstance(size, int) or size < 0 \
            or (oid is not None and sha256 is None):
        return None
    return RemoteFile(repo=repo, path=path, size=size, sha256=sha256, revision=revision)


def head_file(repo: str, path: str, revision: str = "main",
              timeout: float = DEFAULT_TIMEOUT_S) -> FileMeta:
    """HEAD a file: size, sha256 etag, commit and the URL its bytes come from."""
    check_repo_id(repo)
    meta = call(f"{repo}/{path}", lambda: get_hf_file_metadata(
        file_url(repo, path, revision), timeout=timeout, endpoint=endpoint()))
    if meta.size is None:
        raise HubError(f"{repo}/{path}: the hub did not say how large the file is")
    commit = check_commit(meta.commit_hash) if meta.commit_hash is not None else None
    return FileMeta(size=int(meta.size), etag=meta.etag, commit=commit,
                    location=str(meta.location))


@contextmanager
def open_range(url: str, start: int, end: int | None = None,
               timeout: float = DEFAULT_TIMEOUT_S) -> Iterator[http_lib.Response]:
    """Stream bytes ``[start, end)`` of ``url`` (``end`` None: to the end of the file).

    The response must be a 206 for the asked range, or a 200 when ``start`` is 0; a server
    that ignores ``Range`` further in is refused rather than read from the beginning.
    """
    last = "" if end is None else str(end - 1)
    headers = build_hf_headers()  # the user's token, for gated repos; dropped off the hub
    headers.update({"Range": f"bytes={start}-{last}", "Accept-Encoding": "identity"})

    def opener() -> Any:
        ctx = get_session().stream("GET", url, headers=headers, timeout=timeout,
                                   follow_redirects=True)
        response = ctx.__enter__()
        try:
            hf_raise_for_status(response)
        except BaseException:
            ctx.__exit__(None, None, None)
            raise
        return ctx, response

    ctx, response = call(f"reading {url}", opener)
    try:
        if response.status_code == 200 and start > 0:
            raise HubError(f"{url}: the server ignored the byte range")
        yield response
    finally:
        ctx.__exit__(None, None, None)


def read_range(url: str, start: int, length: int, timeout: float = DEFAULT_TIMEOUT_S) -> bytes:
    """Return ``length`` bytes of ``url`` from ``start`` (fewer only at the end of the file)."""
    if length <= 0:
        return b""
    out = bytearray()
    with open_range(url, start, start + length, timeout) as response:
        try:
            for block in response.iter_bytes(1 << 16):
                out += block
                if len(out) >= length:
                    break
        except http_lib.TransportError as exc:
            raise HubOfflineError(f"reading {url}: connection lost ({exc})") from exc
    return bytes(out[:length])
