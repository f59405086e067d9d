"""Which vision projector (``mmproj*.gguf``) goes with a model: by file names alone."""

from __future__ import annotations

import re
from pathlib import Path

_QUANT_TAIL = re.compile(r"[-_.](?:i?q\d[\w]*|f16|bf16|f32|fp16|fp32|mxfp4\w*)$", re.IGNORECASE)
_PROJ_PREFERENCE = ("f16", "bf16", "q8_0", "f32")


def _family(name: str) -> str:
    """A GGUF name without its quantization tail and separators: what pairs files."""
    stem = name[:-5] if name.lower().endswith(".gguf") else name
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", stem)
    while True:
        shorter = _QUANT_TAIL.sub("", stem)
        if shorter == stem:
            break
        stem = shorter
    return re.sub(r"[-_. ]+", "", stem.lower())


def paired_projector(model_path: Path) -> Path | None:
    """The vision projector (``mmproj*.gguf``) that goes with a model in its folder
    (see :func:`pick_projector`); None when nothing pairs."""
    folder = model_path.parent
    try:
        names = [p.name for p in folder.iterdir()
                 if p.suffix.lower() == ".gguf" and p.is_file()]
    except OSError:
        return None
    chosen = pick_projector(model_path.name, names)
    return folder / chosen if chosen is not None else None


def pick_projector(model_name: str, names: list[str]) -> str | None:
    """Which of the GGUF file ``names`` of one folder is ``model_name``'s projector.

    A projector named after the model (``mmproj-<model>-F16.gguf``) pairs with that model;
    a generic one (``mmproj-F16.gguf``, as hub repos name it) pairs when every model in the
    folder is of one family (quantizations of one model). F16 is preferred to BF16, Q8_0
    and F32. None when nothing pairs.
    """
    projectors = [n for n in names if n.lower().startswith("mmproj")]
    if not projectors or model_name.lower().startswith("mmproj"):
        return None
    family = _family(model_name)
    families = {_family(n) for n in names if n not in projectors} | {family}
    matches = []
    for proj in projectors:
        base = _family(proj[len("mmproj"):])
        if (base and (family.startswith(base) or base.startswith(family))) \
                or (not base and families == {family}):
            matches.append(proj)

    def rank(name: str) -> tuple[int, str]:
        tail = name[:-5].lower().rsplit("-", 1)[-1] if name.lower().endswith(".gguf") \
            else ""
        order = _PROJ_PREFERENCE.index(tail) if tail in _PROJ_PREFERENCE else 9
        return order, name

    return min(matches, key=rank) if matches else None
