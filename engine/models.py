"""Resolve a MODEL argument (path, ``demo`` or ``hf:OWNER/REPO/FILE.gguf``) to a file.

The projector pairing (:func:`paired_projector`, :func:`pick_projector`) is defined in
:mod:`engine.projector_pairing`, which the library scan uses too.
"""

from __future__ import annotations

from pathlib import Path

from engine.demo import demo_model_path
from engine.errors import ModelNotFoundError
from engine.projector_pairing import paired_projector, pick_projector

__all__ = ["paired_projector", "pick_projector", "resolve_local_model"]


def resolve_local_model(spec: str) -> Path:
    """Return the local GGUF file named by ``spec``.

    Args:
        spec: ``demo``, a path to a ``.gguf`` (the first shard of a split model), or
            ``hf:OWNER/REPO/FILE.gguf`` once it has been downloaded.

    Raises:
        ModelNotFoundError: no such file, or a folder, or not a GGUF name.
    """
    if spec == "demo":
        return demo_model_path()
    if spec.startswith("hf:"):
        from engine.hub.library import find_downloaded

        local = find_downloaded(spec)
        if local is None:
            raise ModelNotFoundError(
                f"{spec} is not downloaded yet: run 'loadout pull {spec}' first "
                "(loadout plan reads its header without downloading)")
        return local
    path = Path(spec).expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"no such model file: {path}")
    if path.is_dir():
        raise ModelNotFoundError(f"{path} is a folder; give the path of a .gguf file in it")
    return path
