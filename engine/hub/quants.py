"""Quantization names in hub file names, and the split-file groups they belong to."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engine.hub.hubapi import RemoteFile

# Longest names first so "Q4_K_M" wins over "Q4_K"; UD- marks Unsloth's dynamic quants.
_QUANT = re.compile(
    r"(?<![A-Za-z0-9])((?:UD-)?(?:IQ\d_(?:XXS|XS|S|M|NL)|Q\d_K_(?:XL|L|M|S)|Q\d_K|Q\d_[01]"
    r"|TQ\d_[01]|MXFP4(?:_MOE)?|BF16|F16|F32))(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)

# Nominal bits per weight of each file type (llama.cpp's quantize table, rounded).
BITS_PER_WEIGHT: dict[str, float] = {
    "F32": 32.0, "BF16": 16.0, "F16": 16.0, "Q8_0": 8.5, "Q6_K": 6.56, "Q5_K_M": 5.69,
    "Q5_K_S": 5.54, "Q5_0": 5.5, "Q5_1": 6.0, "Q4_K_M": 4.89, "Q4_K_S": 4.58, "Q4_0": 4.5,
    "Q4_1": 5.0, "IQ4_NL": 4.5, "IQ4_XS": 4.25, "MXFP4": 4.25, "MXFP4_MOE": 4.25,
    "Q3_K_L": 4.27, "Q3_K_M": 3.91, "Q3_K_S": 3.5, "IQ3_M": 3.66, "IQ3_S": 3.44,
    "IQ3_XS": 3.3, "IQ3_XXS": 3.06, "Q2_K": 2.96, "Q2_K_L": 3.2, "Q2_K_XL": 3.3,
    "IQ2_M": 2.7, "IQ2_S": 2.5, "IQ2_XS": 2.31, "IQ2_XXS": 2.06, "IQ1_M": 1.75, "IQ1_S": 1.56,
    "Q4_K_XL": 4.9, "Q5_K_XL": 5.7, "Q6_K_XL": 6.6, "Q8_K_XL": 8.5, "Q3_K_XL": 4.0,
    "TQ1_0": 1.69, "TQ2_0": 2.06,
}


def quant_of(filename: str) -> str | None:
    """The quantization named in a file name (``UD-`` kept), upper case; None if none."""
    found = _QUANT.findall(filename.rsplit("/", 1)[-1]) or _QUANT.findall(filename)
    return found[-1].upper() if found else None


def bits_of(quant: str | None) -> float:
    """Nominal bits per weight of a quantization name (0.0 if unknown)."""
    if not quant:
        return 0.0
    return BITS_PER_WEIGHT.get(quant.upper().removeprefix("UD-"), 0.0)


@dataclass(frozen=True)
class FileGroup:
    """The file(s) of one model file: a single GGUF or all shards of a split one."""

    quant: str | None
    files: tuple[RemoteFile, ...]

    @property
    def first(self) -> RemoteFile:
        return self.files[0]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def complete(self) -> bool:
        """False when a split model is missing shards in the listing."""
        m = _SPLIT.search(self.first.path)
        return m is None or len(self.files) == int(m[2])


def gguf_groups(files: Iterable[RemoteFile], include_projectors: bool = False
                ) -> tuple[FileGroup, ...]:
    """Group a repo listing's GGUFs into model files (split shards together), sorted by path.

    Vision projectors (``mmproj*``) are left out unless asked for.
    """
    groups: dict[str, list[RemoteFile]] = {}
    for f in files:
        base = f.path.rsplit("/", 1)[-1].lower()
        if not base.endswith(".gguf") or (base.startswith("mmproj") and not include_projectors):
            continue
        groups.setdefault(_SPLIT.sub("", f.path), []).append(f)
    out = []
    for key in sorted(groups):
        members = tuple(sorted(groups[key], key=lambda f: f.path))
        out.append(FileGroup(quant=quant_of(members[0].path), files=members))
    return tuple(out)


def pick_group(groups: Iterable[FileGroup], quant: str) -> FileGroup | None:
    """The file of ``quant`` (exact name, else ``UD-`` variant), shortest path first."""
    wanted = quant.upper()
    candidates = [g for g in groups if g.quant == wanted] or \
                 [g for g in groups if g.quant and g.quant.removeprefix("UD-") == wanted]
    candidates.sort(key=lambda g: (len(g.first.path), g.first.path))
    return candidates[0] if candidates else None
