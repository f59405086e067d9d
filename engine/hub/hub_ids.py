"""Checks on everything a hub says before it touches the disk: file paths, revisions,
commit ids and hashes. A hub (or whatever answers at ``HF_ENDPOINT``) is not trusted: a
listed path such as ``../../.bashrc`` or ``C:/x`` must never become a file name."""

from __future__ import annotations

import re
from pathlib import Path

from engine.hub.errors import UnsafeHubDataError

MAX_PATH_CHARS = 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\\:*?\"<>|]")


def safe_repo_path(path: object) -> str | None:
    """``path`` if it is a plain relative path inside a repo, else None.

    Refused: non-strings, empty or over-long paths, absolute paths, drive letters and
    other colons, backslashes, control characters, characters Windows forbids, and empty,
    ``.`` or ``..`` components.
    """
    if not isinstance(path, str) or not path or len(path) > MAX_PATH_CHARS:
        return None
    if path.startswith("/") or _FORBIDDEN.search(path):
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.endswith((".", " ")) for p in parts):
        return None
    return path


def sha256_or_none(value: object) -> str | None:
    """A sha256 in lower-case hex, from a listing's LFS oid or an ``X-Linked-Etag``
    (quotes and a weak ``W/`` prefix dropped); None for anything else."""
    if not isinstance(value, str):
        return None
    text = value.strip().removeprefix("W/").strip('"').lower()
    return text if _SHA256.fullmatch(text) else None


def check_commit(value: object) -> str:
    """A 40-hex commit id (``X-Repo-Commit``), used as a folder name in the hub cache.

    Raises:
        UnsafeHubDataError: anything else.
    """
    if isinstance(value, str) and _COMMIT.fullmatch(value.lower()):
        return value.lower()
    raise UnsafeHubDataError(f"the hub sent a commit id that is not 40 hex digits: "
                             f"{str(value)[:60]!r}")


def check_revision(value: str) -> str:
    """A branch, tag or commit name safe to use in a URL and a folder name.

    Raises:
        UnsafeHubDataError: anything else.
    """
    if _REVISION.fullmatch(value) and ".." not in value:
        return value
    raise UnsafeHubDataError(f"{value[:60]!r} is not a revision name")


def inside(path: Path, base: Path) -> Path:
    """``path``, after checking that it stays inside ``base`` (links resolved).

    Raises:
        UnsafeHubDataError: the path leads out of ``base``.
    """
    resolved = path.resolve(strict=False)
    if not resolved.is_relative_to(base.resolve(strict=False)):
        raise UnsafeHubDataError(f"{path} would be written outside {base}")
    return path
