"""What one CPU core makes of each weight type, in decode (bytes) and prefill (weights),
relative to Q4_K's: the tables behind :mod:`planner.speed`'s CPU pricing, each with the
measurement it comes from."""

from __future__ import annotations

from collections.abc import Sequence

from planner.ggml_types import GGML_TYPES_BY_NAME

# How fast one core decodes a weight type's bytes, relative to Q4_K's (what
# ``cpu_core_gbps`` is calibrated on: the CPU rows are Q4_K_M). A core multiplies weights,
# and each type at its own rate per weight: bench/cpu_type_rate.py (one engine thread,
# all-type llamas of one shape, engine-thread CPU seconds, interleaved rounds) measured
# the time per token over Q4_K's, at 3.55x (F16), 1.89x (Q8_0), 1.11x (Q4_1) and 1x (Q4_0)
# Q4_K's bytes; per byte, over three runs (7, 5, 9 rounds; the median here): F16 1.83,
# 1.99, 1.66; Q8_0 1.30, 1.17, 1.20; Q4_1 0.66, 0.69, 0.55; Q4_0 1.03, 0.99, 0.99. Q4_0 and
# Q4_K are repacked for the CPU's SIMD, Q4_1 is not. Types not measured are priced by
# their bytes (1.0). The RAM's bandwidth bounds every type alike: where it binds (many
# cores), bytes set the time.
# Against one core's measured Q4_K rate (``Host.core_decode_gbps``: random Q4_K weights,
# the per-layer and KV costs taken out), trained Q4_1 streams 0.46-0.47 per byte (the demo
# and a model cut from its tensors; its random-weight twin 0.55: bench/core_rate.py,
# "implied"), so Q4_1 is priced at that: every real model's weights are trained.
# MXFP4 (gpt-oss's experts): 0.90 per byte, 0.95 per weight (bench/cpu_type_rate.py --types
# Q4_K,MXFP4,Q4_1,Q4_0 --rounds 5, load average ~16 on this 2-core VM: one run).
CPU_BYTE_RATE: dict[str, float] = {"F16": 1.83, "Q8_0": 1.20, "Q4_1": 0.47, "Q4_0": 1.0,
                                   "Q4_K": 1.0, "MXFP4": 0.90}


# How fast one core prefills each weight type's block matrices, per weight, relative to
# Q4_K's (what ``cpu_core_gflops`` is, and what hardware detection measures per core:
# ``Host.core_prefill_gflops``). Prefill multiplies a batch of tokens by each weight, so
# a type costs its kernel's arithmetic, not its bytes: bench/cpu_type_rate.py --prefill
# 256 (one thread, all-type llamas of one shape, 256 tokens in one batch, the calling
# thread's CPU seconds, 5 rotating rounds, each model's attention priced as below and
# taken out) measured per weight F16 0.62, Q8_0 0.74, Q4_1 0.29, Q4_0 0.96 of Q4_K's
# (139 GFLOP/s here). Q4_0 and Q4_K run llama.cpp's repacked batch kernels, Q8_0 and F16
# its tiled ones, Q4_1 one dot product per row and token. Types not measured: 1.0.
CPU_PREFILL_RATE: dict[str, float] = {"F16": 0.62, "Q8_0": 0.74, "Q4_1": 0.29, "Q4_0": 0.96,
                                      "Q4_K": 1.0}
# A prompt's attention on a CPU without flash attention, per FLOP, relative to Q4_K's
# block matrices: llama.cpp multiplies each prompt token by every cache cell in use, the
# count padded to KV_PAD (its time per token is the same for prompts of 32 to 256 tokens),
# and the attention matmuls and softmax of the demo's 64-token prompt took 471 us per token
# (bench/decode_parts.py --prefill-ops: 17.7 MFLOP at 256 cells, 37.5 GFLOP/s). Q4_K's
# matrices on the same core: 126 GFLOP/s (bench/cpu_type_rate.py --prefill 256 measured
# 104 GFLOP/s of its llama's whole prompt token, whose attention at 37.5 GFLOP/s is 17%).
CPU_PREFILL_ATTENTION_RATE = 0.30
KV_PAD = 256


def prefill_kv_cells(prompt_tokens: int, n_ubatch: int) -> float:
    """The cache cells a prompt token is multiplied against on average without flash
    attention: those in use when its batch runs, padded to :data:`KV_PAD` (llama.cpp
    masks the later ones but computes them): a prompt in one batch pays its padded
    length, a longer one in batches of ``n_ubatch`` about (prompt + n_ubatch) / 2."""
    p, u = max(1, prompt_tokens), max(1, n_ubatch)
    if p <= u:
        return float(-(-p // KV_PAD) * KV_PAD)
    return (p + u) / 2 + KV_PAD / 2


def _type_key(name: str) -> str:
    """A ggml type or file type's name as the rate tables key it (Q4_K_M -> Q4_K)."""
    t = name.upper()
    if t.startswith("MXFP4"):
        return "MXFP4"      # the file type MXFP4_MOE: its experts' type
    return t[:4] if t.startswith("Q") and t[2:4] == "_K" else t


def cpu_type_rate(quant_bytes: Sequence[tuple[str, int]]) -> float:
    """How fast one core decodes a file's weight bytes relative to Q4_K's: the bytes'
    harmonic mean of :data:`CPU_BYTE_RATE` (a K-quant file type counts as its K type)."""
    total = spent = 0.0
    for name, nbytes in quant_bytes:
        total += nbytes
        spent += nbytes / CPU_BYTE_RATE.get(_type_key(name), 1.0)
    return total / spent if spent > 0 else 1.0


def cpu_prefill_rate(quant_bytes: Sequence[tuple[str, int]]) -> float:
    """How fast one core prefills a file's weights relative to Q4_K's: the weights'
    harmonic mean of :data:`CPU_PREFILL_RATE` (each type's bytes counted in weights)."""
    total = spent = 0.0
    for name, nbytes in quant_bytes:
        t = _type_key(name)
        kind = GGML_TYPES_BY_NAME.get(t)
        weights = nbytes * kind.block_size / kind.type_size if kind else float(nbytes)
        total += weights
        spent += weights / CPU_PREFILL_RATE.get(t, 1.0)
    return total / spent if spent > 0 else 1.0
