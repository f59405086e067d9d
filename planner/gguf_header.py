"""What a GGUF header holds once read (metadata, tensor table), shared by the reader
(:mod:`planner.gguf`) and the profile builder (:mod:`planner.profile_builder`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawTensor:
    """One tensor-table entry as stored (offset relative to the data section)."""

    name: str
    shape: tuple[int, ...]
    type_id: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class ArrayInfo:
    """An array value too long (or of strings) to keep: its element type and length."""

    item_type: int
    length: int


@dataclass(frozen=True)
class GGUFHeader:
    """A parsed GGUF header: version, metadata, tensor table, where the data starts."""

    version: int
    metadata: dict[str, Any]
    tensors: tuple[RawTensor, ...]
    data_offset: int
    file_size: int


def printable(name: str) -> str:
    """A key or name fit for a one-line message (a hostile file may hold anything)."""
    clean = "".join(c if c.isprintable() else "?" for c in name[:64])
    return clean + ("..." if len(name) > 64 else "")
