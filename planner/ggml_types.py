"""The ggml tensor types a GGUF file may use: id -> (name, block size, bytes per block).

The one table of them in the project. Pure data, mirrored from ggml's ``type_traits``
table (``ggml/src/ggml.c``). A row of ``n`` elements of a block type takes
``n / block * type_size`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class GGMLType:
    """One ggml tensor type."""

    id: int
    name: str
    block_size: int   # elements per block
    type_size: int    # bytes per block

    @property
    def is_quantized(self) -> bool:
        """True for block-quantized types (more than one element per block)."""
        return self.block_size > 1

    def row_bytes(self, n_elements: int) -> int:
        """Bytes of ``n_elements`` consecutive elements (a multiple of the block size)."""
        return n_elements // self.block_size * self.type_size


_TABLE: tuple[tuple[int, str, int, int], ...] = (
    (0, "F32", 1, 4), (1, "F16", 1, 2), (2, "Q4_0", 32, 18), (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22), (7, "Q5_1", 32, 24), (8, "Q8_0", 32, 34), (9, "Q8_1", 32, 40),
    (10, "Q2_K", 256, 84), (11, "Q3_K", 256, 110), (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176), (14, "Q6_K", 256, 210), (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66), (17, "IQ2_XS", 256, 74), (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50), (20, "IQ4_NL", 32, 18), (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82), (23, "IQ4_XS", 256, 136), (24, "I8", 1, 1), (25, "I16", 1, 2),
    (26, "I32", 1, 4), (27, "I64", 1, 8), (28, "F64", 1, 8), (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2), (34, "TQ1_0", 256, 54), (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17), (40, "NVFP4", 64, 36), (41, "Q1_0", 128, 18), (42, "Q2_0", 64, 18),
)

GGML_TYPES: dict[int, GGMLType] = {row[0]: GGMLType(*row) for row in _TABLE}
GGML_TYPES_BY_NAME: dict[str, GGMLType] = {t.name: t for t in GGML_TYPES.values()}

# general.file_type (llama_ftype) -> the name llama.cpp prints for it.
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
    16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
    22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
    28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
    37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}


def ggml_type(name: str) -> GGMLType:
    """The type called ``name`` ("f16", "Q8_0", ...; case-insensitive).

    Raises:
        KeyError: no such ggml type.
    """
    return GGML_TYPES_BY_NAME[name.upper()]


def tensor_bytes(type_name: str, n_elements: int) -> int:
    """Bytes of a tensor of ``n_elements`` elements of type ``type_name``."""
    return ggml_type(type_name).row_bytes(n_elements)


class KvType(StrEnum):
    """The ggml types llama.cpp takes for a KV cache, by their lower-case names (what
    ``--cache-type-k`` and a LaunchSpec say); :attr:`ggml` is the type's row above."""

    F32 = "f32"
    F16 = "f16"
    BF16 = "bf16"
    Q8_0 = "q8_0"
    Q4_0 = "q4_0"
    Q4_1 = "q4_1"
    IQ4_NL = "iq4_nl"
    Q5_0 = "q5_0"
    Q5_1 = "q5_1"

    @property
    def ggml(self) -> GGMLType:
        """The ggml type (its id is what ``llama_context_params.type_k`` takes)."""
        return ggml_type(self.value)

    @property
    def id(self) -> int:
        """The ggml type id."""
        return self.ggml.id

    @classmethod
    def of(cls, value: str | int) -> KvType:
        """The KV type named ``value`` (any case) or with ggml id ``value``.

        Raises:
            ValueError: not a type a KV cache may have.
        """
        if isinstance(value, int) and not isinstance(value, bool):
            found = next((t for t in cls if t.id == value), None)
            if found is None:
                raise ValueError(f"ggml type {value} is not a KV cache type")
            return found
        return cls(str(value).lower())
