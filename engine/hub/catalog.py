"""The catalog: model families worth recommending, with sizes from the hub's listings.

``assets/catalog.json`` names each family's hub repo, the quantizations worth considering,
task strengths, licence and provenance, and the model's published shape (parameters,
layers, widths) — never a file size. Sizes and sha256 come from the
repo's file listing, fetched when online and cached under ``paths().cache / "hub"``;
offline, the catalog shows what was last fetched and says it is offline.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from engine.hub import hubapi
from engine.hub.errors import HubError, HubOfflineError
from engine.hub.quants import FileGroup, gguf_groups, pick_group
from engine.paths import paths

log = logging.getLogger(__name__)

SCHEMA = "loadout.catalog/1"
TASKS = ("chat", "code", "agent", "math", "creative")
KINDS = ("dense", "moe")
LISTING_MAX_AGE_S = 6 * 3600.0


@dataclass(frozen=True)
class QuantOption:
    """One quantization of a catalog model: its file(s) on the hub, when listed."""

    quant: str
    group: FileGroup | None          # None: not in the repo's listing (or never listed)

    @property
    def size_bytes(self) -> int | None:
        return self.group.size if self.group else None

    @property
    def spec(self) -> str | None:
        """``hf:OWNER/REPO/FILE.gguf`` of the (first) file."""
        return f"hf:{self.group.first.repo}/{self.group.first.path}" if self.group else None


@dataclass(frozen=True)
class CatalogModel:
    """One model family entry, with its quantizations as the hub lists them."""

    id: str
    name: str
    family: str
    repo: str
    kind: str                        # dense | moe
    mtp_heads: bool
    licence: str
    provenance: tuple[tuple[str, str], ...]
    tasks: tuple[tuple[str, int], ...]
    quants: tuple[QuantOption, ...]
    notes: str = ""
    listed_at: float | None = None   # when the listing was fetched (epoch seconds)
    shape: tuple[tuple[str, float], ...] = ()  # published size and geometry (offline estimates)

    def strength(self, task: str) -> int:
        """0..3: how good this model is at ``task`` (catalog editors' rating)."""
        return dict(self.tasks).get(task, 0)

    @property
    def available(self) -> tuple[QuantOption, ...]:
        """The quantizations the repo really has (empty when never listed)."""
        return tuple(q for q in self.quants if q.group is not None)


@dataclass(frozen=True)
class Catalog:
    """The catalog and whether its listings are fresh from the hub or from the cache."""

    models: tuple[CatalogModel, ...]
    online: bool
    status: str   # online / recent: listings from ... / offline: listings from ... /
                  # offline: never listed

    def get(self, model_id: str) -> CatalogModel | None:
        return next((m for m in self.models if m.id == model_id), None)


def catalog_path() -> Path:
    """The bundled ``assets/catalog.json``."""
    return Path(str(resources.files("assets").joinpath("catalog.json")))


def load_entries(path: Path | None = None) -> list[dict[str, Any]]:
    """The raw, validated entries of a catalog file.

    Raises:
        HubError: a catalog that does not follow ``loadout.catalog/1``.
    """
    doc = json.loads((path or catalog_path()).read_text(encoding="utf-8"))
    if doc.get("schema") != SCHEMA:
        raise HubError(f"catalog schema {doc.get('schema')!r} is not {SCHEMA}")
    entries = doc.get("models", [])
    for entry in entries:
        missing = {"id", "name", "repo", "kind", "quants", "tasks", "licence"} - set(entry)
        if missing:
            raise HubError(f"catalog entry {entry.get('id')!r} lacks {sorted(missing)}")
        hubapi.check_repo_id(entry["repo"])
        if entry["kind"] not in KINDS or set(entry["tasks"]) - set(TASKS):
            raise HubError(f"catalog entry {entry['id']!r}: bad kind or task")
    return list(entries)


def _listing_path(repo: str) -> Path:
    return paths().cache / "hub" / "listings" / (repo.replace("/", "--") + ".json")


def _save_listing(repo: str, files: tuple[hubapi.RemoteFile, ...], when: float) -> None:
    path = _listing_path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"repo": repo, "fetched_at": when,
           "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files]}
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


def cached_listing(repo: str) -> tuple[tuple[hubapi.RemoteFile, ...], float] | None:
    """The last listing fetched for ``repo`` and when, or None."""
    try:
        doc = json.loads(_listing_path(repo).read_text())
        files = tuple(hubapi.RemoteFile(repo=repo, path=f["path"], size=int(f["size"]),
                                        sha256=f.get("sha256")) for f in doc["files"])
        return files, float(doc["fetched_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refresh_listings(repos: list[str], timeout: float = hubapi.DEFAULT_TIMEOUT_S,
                     workers: int = 6) -> dict[str, str]:
    """Fetch and cache the listings of ``repos``. Returns the repos that failed, with why.

    Raises:
        HubOfflineError: the hub cannot be reached at all.
    """
    failed: dict[str, str] = {}
    first, rest = repos[0], repos[1:]
    try:  # one call first: offline is found out once, not once per repo
        _save_listing(first, hubapi.list_files(first, timeout=timeout), time.time())
    except HubOfflineError:
        raise
    except HubError as exc:
        failed[first] = str(exc)

    def one(repo: str) -> tuple[str, str | None]:
        try:
            _save_listing(repo, hubapi.list_files(repo, timeout=timeout), time.time())
            return repo, None
        except HubError as exc:
            return repo, str(exc)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for repo, error in pool.map(one, rest):
            if error:
                failed[repo] = error
    for repo, error in failed.items():
        log.warning("catalog: %s: %s", repo, error)
    return failed


def load_catalog(refresh: bool = True, path: Path | None = None,
                 timeout: float = hubapi.DEFAULT_TIMEOUT_S,
                 max_age_s: float = LISTING_MAX_AGE_S) -> Catalog:
    """The catalog with each model's quantizations resolved against the hub's listing.

    Args:
        refresh: fetch listings older than ``max_age_s`` (when online); False: cache only.
        path: another catalog file (default: the bundled one).
        timeout: seconds per network operation.
        max_age_s: how long a cached listing is used without asking the hub again.
    """
    entries = load_entries(path)
    now = time.time()
    stale = [e["repo"] for e in entries
             if (c := cached_listing(e["repo"])) is None or now - c[1] > max_age_s]
    online, fetched = False, False
    if refresh and stale:
        try:
            refresh_listings(stale, timeout=timeout)
            online = fetched = True
        except HubOfflineError as exc:
            log.info("catalog: %s", exc)
    elif refresh:
        online = True  # every listing is recent
    models = tuple(_model(e) for e in entries)
    times = [m.listed_at for m in models if m.listed_at is not None]
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(min(times))) if times else ""
    if fetched:
        status = "online"
    elif online:
        status = f"recent: listings from {when}"
    elif times:
        status = f"offline: listings from {when}"
    else:
        status = "offline: never listed"
    return Catalog(models=models, online=online, status=status)


def _model(entry: dict[str, Any]) -> CatalogModel:
    cached = cached_listing(entry["repo"])
    groups = gguf_groups(cached[0]) if cached else ()
    quants = tuple(QuantOption(q.upper(), _complete(pick_group(groups, q)))
                   for q in entry["quants"])
    prov = entry.get("provenance", {})
    return CatalogModel(
        id=entry["id"], name=entry["name"], family=entry.get("family", ""),
        repo=entry["repo"], kind=entry["kind"], mtp_heads=bool(entry.get("mtp_heads")),
        licence=entry["licence"], provenance=tuple((str(k), str(v)) for k, v in prov.items()),
        tasks=tuple((t, int(s)) for t, s in entry["tasks"].items()), quants=quants,
        notes=entry.get("notes", ""), listed_at=cached[1] if cached else None,
        shape=tuple((str(k), float(v)) for k, v in entry.get("shape", {}).items()))


def _complete(group: FileGroup | None) -> FileGroup | None:
    return group if group is not None and group.complete else None
