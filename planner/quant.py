"""Quantization tiers: quality order of the usual files, low-bit checks, what-if rescaling.

Bits per weight are llama.cpp's nominal figures for each file type (``llama-quantize``);
the planner ranks quality by them and warns at <= 3 bits for agent and code work, louder
for MoE + MTP + <= 3 bits (the known recipe for endless loops).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from planner.profile import LayerProfile, ModelProfile, TensorInfo

# file type -> nominal bits per weight (llama-quantize's table, rounded)
NOMINAL_BITS: dict[str, float] = {
    "IQ1_S": 1.56, "IQ1_M": 1.75, "TQ1_0": 1.69, "IQ2_XXS": 2.06, "TQ2_0": 2.06,
    "IQ2_XS": 2.31, "IQ2_S": 2.5, "IQ2_M": 2.7, "Q2_K_S": 2.7, "Q2_K": 2.96,
    "IQ3_XXS": 3.06, "IQ3_XS": 3.3, "IQ3_S": 3.44, "Q3_K_S": 3.41, "IQ3_M": 3.66,
    "Q3_K_M": 3.74, "Q3_K_L": 4.03, "IQ4_XS": 4.25, "MXFP4_MOE": 4.25, "NVFP4": 4.5,
    "IQ4_NL": 4.5, "Q4_0": 4.5, "Q4_K_S": 4.58, "Q4_K_M": 4.84, "Q4_1": 5.0,
    "Q5_0": 5.5, "Q5_K_S": 5.54, "Q5_K_M": 5.69, "Q5_1": 6.0, "Q6_K": 6.56, "Q8_0": 8.5,
    "F16": 16.0, "BF16": 16.0, "F32": 32.0,
}

# the tiers advice walks down, best quality first
LADDER: tuple[str, ...] = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M",
                           "IQ3_XXS", "Q2_K", "IQ2_XXS", "IQ1_M")
LOW_BITS = 3.1   # IQ3_XXS (3.06) and below: the cliff


def bits_of(profile: ModelProfile) -> float:
    """Bits per weight of a file: the lower of its file type's nominal figure and what its
    bytes say (a mislabeled file type cannot make a file look bigger than it is)."""
    nominal = NOMINAL_BITS.get(profile.file_type.upper())
    measured = profile.bits_per_weight
    if nominal is None:
        return measured or 16.0
    return min(nominal, measured) if measured else nominal


CODEBOOK_IQ = ("IQ1", "IQ2", "IQ3")


def is_low_bit(profile: ModelProfile) -> bool:
    """True at <= ~3 bits per weight, where quality falls off a cliff."""
    return bits_of(profile) <= LOW_BITS


def is_iquant(profile: ModelProfile) -> bool:
    """True when most weight bytes are codebook i-quants (IQ1_*, IQ2_*, IQ3_*), which
    dequantize slowly (a lattice codebook and sign tables per group of weights).

    IQ4_XS and IQ4_NL are not: a 16-entry table per weight, decoded like Q4_0. The
    published IQ4_XS rows of the speed calibration (Qwen3.8-27B, 25 and 38 of 66 layers
    on GPU, the rest on a laptop CPU) ran at the speed of their bytes; priced at the
    codebook types' slowdown they were predicted 3x too slow.
    """
    def codebook(name: str) -> bool:
        return name.upper().removeprefix("UD-").startswith(CODEBOOK_IQ)

    if codebook(profile.file_type):
        return True
    total = sum(b for _, b in profile.quant_bytes)
    iq = sum(b for t, b in profile.quant_bytes if codebook(t))
    return total > 0 and iq > total / 2


def smaller_tier(profile: ModelProfile) -> str | None:
    """The next tier of :data:`LADDER` below this file's, or None at the bottom."""
    bits = bits_of(profile)
    for name in LADDER:
        if NOMINAL_BITS[name] < bits - 0.2:
            return name
    return None


def rescaled(profile: ModelProfile, file_type: str, keep_tensors: bool = True) -> ModelProfile:
    """What-if: the same model quantized to ``file_type`` (quantized tensors rescaled).

    F32 tensors (norms, small vectors) keep their size; every other tensor scales by the
    ratio of bits. Used by advice ("a smaller quantization would run at ...");
    ``keep_tensors=False`` leaves the tensor table out (the planner prices blocks, not
    tensors), which is much cheaper for large models.
    """
    ratio = NOMINAL_BITS[file_type] / bits_of(profile)
    base = replace(profile, file_type=file_type,
                   layers=tuple(_scaled_layer(layer, ratio) for layer in profile.layers),
                   token_embd_bytes=int(profile.token_embd_bytes * ratio),
                   output_bytes=int(profile.output_bytes * ratio),
                   other_bytes=int(profile.other_bytes * ratio))
    if not keep_tensors:
        total = int(profile.weights_bytes * ratio)
        return replace(base, tensors=(), file_bytes=total, quant_bytes=((file_type, total),))
    tensors = tuple(
        t if t.ggml_type == "F32" else
        TensorInfo(t.name, file_type, t.shape, int(t.nbytes * ratio), t.offset, t.layer,
                   t.kind, t.shard)
        for t in profile.tensors)
    total = sum(t.nbytes for t in tensors)
    return replace(base, tensors=tensors, file_bytes=total, quant_bytes=((file_type, total),))


def _scaled_layer(layer: LayerProfile, ratio: float) -> LayerProfile:
    return replace(layer, bytes_by_kind=tuple((k, int(b * ratio)) for k, b in
                                              layer.bytes_by_kind))


@dataclass(frozen=True)
class QuantChoice:
    """Which file was chosen among several quantizations of one model, and why."""

    index: int
    file_type: str
    reason: str


def choose(candidates: Sequence[tuple[ModelProfile, bool, bool, float]],
           usable_tps: float) -> QuantChoice:
    """Pick the best quality whose plan fits without disk streaming at a usable speed.

    Args:
        candidates: per file ``(profile, fits, streams_from_disk, decode_tps)``.
        usable_tps: the decode speed below which a file is not "usable".

    Returns:
        The choice; when none qualifies, the fastest that fits at all.
    """
    order = sorted(range(len(candidates)), key=lambda i: -bits_of(candidates[i][0]))
    for i in order:
        profile, fits, disk, tps = candidates[i]
        if fits and not disk and tps >= usable_tps:
            return QuantChoice(i, profile.file_type, "quant_best_that_fits")
    fitting = [i for i in order if candidates[i][1]] or list(order)
    best = max(fitting, key=lambda i: candidates[i][3])
    return QuantChoice(best, candidates[best][0].file_type, "quant_fastest_usable")
