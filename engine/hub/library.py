"""The local library: GGUF models already on this machine, wherever another tool put them.

Looked for in Loadout's model folder, the Hugging Face hub cache, LM Studio's folders
(``~/.lmstudio/models``, ``~/.cache/lm-studio/models``) and Ollama's store (blobs named by
sha256, found through the JSON manifests under ``models/manifests``). Other tools' files
are only read, never changed: only files in Loadout's own folder can be deleted.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from huggingface_hub import constants

from engine.errors import EngineError
from engine.hub.errors import LibraryError
from engine.hub.quants import quant_of
from engine.paths import paths
from engine.projector_pairing import paired_projector

if TYPE_CHECKING:
    from engine.hub.recommend import Fit
    from planner.inventory import Inventory
    from planner.profile import ModelProfile

log = logging.getLogger(__name__)

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
_SHARD = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


class Source(StrEnum):
    """Which tool's folder a model was found in."""

    LOADOUT = "loadout"
    HF_CACHE = "hf-cache"
    LMSTUDIO = "lmstudio"
    OLLAMA = "ollama"
    FOLDER = "folder"        # a folder the user added


@dataclass(frozen=True)
class Root:
    """A folder to scan and the tool it belongs to."""

    path: Path
    source: Source


@dataclass(frozen=True)
class LibraryEntry:
    """One model on disk (a split model is one entry, named by its first file)."""

    path: Path
    name: str
    source: Source
    size_bytes: int
    shards: int = 1
    architecture: str | None = None
    quant: str | None = None
    n_params: int = 0
    error: str | None = None             # why the header could not be read
    profile: ModelProfile | None = field(default=None, repr=False, compare=False)
    projector: Path | None = None        # its vision projector (mmproj) beside it, if any

    @property
    def deletable(self) -> bool:
        """Only Loadout's own downloads may be deleted."""
        return self.source is Source.LOADOUT

    @property
    def verified(self) -> bool | None:
        """Whether Loadout downloaded this file and checked it against the hub's sha256:
        True verified, False downloaded without a hash to check (unverified), None not
        downloaded by Loadout."""
        from engine.hub.verification import verification_of

        record = verification_of(self.path)
        return None if record is None else record.verified


def default_roots() -> tuple[Root, ...]:
    """The folders scanned by default, for this user."""
    home = Path.home()
    hub_cache = Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)
    ollama = Path(os.environ["OLLAMA_MODELS"]) if os.environ.get("OLLAMA_MODELS") \
        else home / ".ollama" / "models"
    return (
        Root(paths().models, Source.LOADOUT),
        Root(hub_cache, Source.HF_CACHE),
        Root(home / ".lmstudio" / "models", Source.LMSTUDIO),
        Root(home / ".cache" / "lm-studio" / "models", Source.LMSTUDIO),
        Root(ollama, Source.OLLAMA),
        Root(Path("/usr/share/ollama/.ollama/models"), Source.OLLAMA),  # Linux service
    )


def scan(roots: Iterable[Root] | None = None, read_headers: bool = True
         ) -> tuple[LibraryEntry, ...]:
    """Every GGUF model under ``roots`` (default: :func:`default_roots`), sorted by name.

    The same file seen twice (a symlink, two snapshots of one blob) is listed once.
    ``read_headers`` reads each header (architecture, quantization, parameters).
    """
    seen: set[Path] = set()
    entries: list[LibraryEntry] = []
    for root in roots if roots is not None else default_roots():
        if not root.path.is_dir():
            continue
        for path, name in _candidates(root):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            entries.append(_entry(path, name, root.source, read_headers))
    entries.sort(key=lambda e: (e.name.lower(), e.source))
    return tuple(entries)


def _candidates(root: Root) -> Iterator[tuple[Path, str]]:
    if root.source is Source.OLLAMA:
        yield from _ollama_models(root.path)
        return
    pattern = "models--*/snapshots/*/**/*.[gG][gG][uU][fF]" if root.source is Source.HF_CACHE \
        else "**/*.[gG][gG][uU][fF]"
    for path in sorted(root.path.glob(pattern)):
        if path.name.lower().startswith("mmproj") or not path.is_file():
            continue
        m = _SHARD.search(path.name)
        if m and int(m[1]) != 1:
            continue
        yield path, _display_name(root, path)


def _display_name(root: Root, path: Path) -> str:
    rel = path.relative_to(root.path)
    if root.source is Source.HF_CACHE:
        parts = rel.parts  # models--OWNER--NAME / snapshots / COMMIT / file...
        if len(parts) >= 4 and parts[0].startswith("models--") and parts[1] == "snapshots":
            repo = parts[0].removeprefix("models--").replace("--", "/")
            return f"{repo}/{'/'.join(parts[3:])}"
    return rel.as_posix()


def _ollama_models(folder: Path) -> Iterator[tuple[Path, str]]:
    manifests = folder / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
        try:
            doc = json.loads(manifest.read_text())
            layers = doc.get("layers", [])
        except (OSError, ValueError, AttributeError):
            log.debug("unreadable Ollama manifest %s", manifest)
            continue
        for layer in layers:
            if not isinstance(layer, dict) or layer.get("mediaType") != OLLAMA_MODEL_LAYER:
                continue
            digest = str(layer.get("digest", ""))
            blob = folder / "blobs" / digest.replace(":", "-")
            if re.fullmatch(r"sha256:[0-9a-f]{64}", digest) and blob.is_file():
                yield blob, _ollama_name(manifest.relative_to(manifests).parts)


def _ollama_name(parts: tuple[str, ...]) -> str:
    # registry.ollama.ai/library/NAME/TAG -> NAME:TAG; registry/USER/NAME/TAG -> USER/NAME:TAG
    *namespace, model, tag = parts[1:] if len(parts) >= 3 else ("", *parts)
    prefix = "" if namespace in (["library"], []) else "/".join(namespace) + "/"
    return f"{prefix}{model}:{tag}"


def _entry(path: Path, name: str, source: Source, read_headers: bool) -> LibraryEntry:
    m = _SHARD.search(path.name)
    shards = [path.with_name(_SHARD.sub(f"-{i:05d}-of-{m[2]}.gguf", path.name))
              for i in range(1, int(m[2]) + 1)] if m else [path]
    size = sum(p.stat().st_size for p in shards if p.exists())
    entry = LibraryEntry(path=path, name=name, source=source, size_bytes=size,
                         shards=len(shards), quant=quant_of(path.name),
                         projector=paired_projector(path))
    if not read_headers:
        return entry
    from engine.gguf_file import load_profile
    from planner.errors import PlannerError

    try:
        profile = load_profile(path)
    except (PlannerError, EngineError, OSError) as exc:
        return _replace(entry, error=str(exc))
    return _replace(entry, architecture=profile.architecture, n_params=profile.n_params,
                    quant=entry.quant or (profile.file_type if profile.file_type != "unknown"
                                          else None),
                    profile=profile)


def _replace(entry: LibraryEntry, **changes: object) -> LibraryEntry:
    from dataclasses import replace

    return replace(entry, **changes)  # type: ignore[arg-type]


def find_downloaded(spec: str) -> Path | None:
    """The local copy of ``hf:OWNER/REPO/FILE.gguf`` (first shard), if it was downloaded.

    Looks in Loadout's model folder, then in the hub cache (any snapshot). All shards of
    a split model must be present.
    """
    from engine.hub.remote import parse_spec, shard_names

    hub = parse_spec(spec)
    names = shard_names(hub.filename)
    hub_cache = Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)
    snapshots = hub_cache / ("models--" + hub.repo.replace("/", "--")) / "snapshots"
    folders = [paths().models / hub.repo]
    if snapshots.is_dir():
        folders += sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    for folder in folders:
        if all((folder / n).is_file() for n in names):
            return folder / names[0]
    return None


def fit_badges(entries: Iterable[LibraryEntry], inventory: Inventory, task: str = "chat"
               ) -> dict[Path, Fit | None]:
    """The "fits" badge of each entry on ``inventory`` (None when its header is unreadable)."""
    from engine.hub.recommend import badge_for

    return {e.path: badge_for(e.profile, inventory, task) if e.profile is not None else None
            for e in entries}


def delete(entry: LibraryEntry, confirmed: bool) -> int:
    """Delete a model Loadout downloaded (all its shards). Returns the bytes freed.

    Raises:
        LibraryError: not confirmed, or the file is not in Loadout's own model folder
            (other tools' files are never touched).
    """
    if not confirmed:
        raise LibraryError(f"deleting {entry.name} needs confirmation")
    own = paths().models.resolve()
    if not entry.deletable or not entry.path.resolve().is_relative_to(own):
        raise LibraryError(f"{entry.name} belongs to {entry.source.value}; Loadout only "
                           "deletes files in its own model folder")
    m = _SHARD.search(entry.path.name)
    targets = [entry.path.with_name(_SHARD.sub(f"-{i:05d}-of-{m[2]}.gguf", entry.path.name))
               for i in range(1, int(m[2]) + 1)] if m else [entry.path]
    freed = 0
    for target in targets:
        if target.exists():
            freed += target.stat().st_size
            target.unlink()
    folder = entry.path.parent
    while folder != own and folder.is_relative_to(own) and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
    log.info("deleted %s (%d bytes)", entry.path, freed)
    return freed
