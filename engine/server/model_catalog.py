"""The models a router serves: every GGUF of a folder or of the user's library, each with
a unique id and the other names a request may use for it."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatalogModel:
    """One servable model.

    Attributes:
        id: the id ``/v1/models`` shows (the file's stem, made unique).
        path: the GGUF file (the first shard of a split model).
        aliases: other names accepted as the request's ``model`` (file name, the model's
            ``general.name``, ``demo`` for the demo model).
        size_bytes: the file's size (all shards).
    """

    id: str
    path: Path
    aliases: frozenset[str]
    size_bytes: int

    def names(self) -> frozenset[str]:
        return self.aliases | {self.id}


def _header_name(path: Path) -> str:
    from engine.gguf_file import load_profile

    try:
        return load_profile(path).name
    except Exception:  # an unreadable header still lists (its load will say why)
        log.debug("cannot read the header of %s", path, exc_info=True)
        return ""


def _demo_path() -> Path | None:
    from engine.demo import demo_model_path

    try:
        return demo_model_path().resolve()
    except Exception:  # the demo package missing
        return None


def build_catalog(paths: Iterable[tuple[Path, Sequence[str]]]) -> tuple[CatalogModel, ...]:
    """A catalog of ``paths`` (each with extra names): unique ids, and an alias two models
    claim dropped from both (it would be ambiguous), as the log says."""
    demo = _demo_path()
    seen: set[Path] = set()
    drafts: list[tuple[str, Path, set[str], int]] = []
    ids: set[str] = set()
    for path, extra in paths:
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        ident, n = path.stem, 2
        while ident in ids:
            ident, n = f"{path.stem}-{n}", n + 1
        ids.add(ident)
        if demo is not None and real == demo:
            extra = (*extra, "demo")
        names = {path.name, path.stem, _header_name(path), *extra} - {"", ident}
        size = path.stat().st_size if path.exists() else 0
        drafts.append((ident, path, names, size))
    claims: dict[str, int] = {}
    for ident, _, names, _ in drafts:
        for name in names | {ident}:
            claims[name] = claims.get(name, 0) + 1
    out = []
    for ident, path, names, size in drafts:
        shared = {a for a in names if claims[a] > 1}
        if shared:
            log.info("%s: names shared with another model are not aliases: %s", ident,
                     ", ".join(sorted(shared)))
        out.append(CatalogModel(ident, path, frozenset(names - shared), size))
    return tuple(out)


def folder_models(folder: Path) -> tuple[CatalogModel, ...]:
    """Every GGUF under ``folder`` (split models by their first shard; no projectors)."""
    from engine.hub.library import Root, Source, scan

    entries = scan([Root(folder, Source.FOLDER)], read_headers=False)
    return build_catalog((e.path, ()) for e in entries)


def library_models(folders: Iterable[Path] = ()) -> tuple[CatalogModel, ...]:
    """The demo model and every GGUF of the user's library (Loadout's downloads, the
    Hugging Face cache, LM Studio's and Ollama's folders) and of ``folders`` (the model
    folders the user added; one that is not there is skipped)."""
    from engine.demo import demo_model_path
    from engine.hub.library import Root, Source, default_roots, scan

    paths: list[tuple[Path, Sequence[str]]] = []
    try:
        paths.append((demo_model_path(), ("demo",)))
    except Exception:  # the demo package missing: the library still serves
        log.info("the demo model is not installed", exc_info=True)
    roots = [*default_roots(), *(Root(Path(f).expanduser(), Source.FOLDER) for f in folders)]
    paths += [(e.path, (e.name,)) for e in scan(roots, read_headers=False)]
    return build_catalog(paths)
