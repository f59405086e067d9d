"""Models of another depth and width cut from the demo's own trained tensors.

A CPU core does not multiply every file's weights at one speed: with the same shapes and
types, the demo's trained weights cost 1.14-1.36x a random-weight twin's per matrix
(``bench/decode_parts.py``: the output layer most, the small K/V matrices least; the
sampler and the detokeniser cost the same in both). A "similar model" made of random
weights therefore does not share what the demo's recorded runs teach the per-machine
correction; one cut from the demo's tensors does.

The cut is exact, without requantizing: a quantized row is a run of independent blocks
(32 weights each), so keeping the first rows of a matrix (its outputs) and the first blocks
of each row (its inputs) yields valid blocks of the same values. Whole attention heads are
kept (the first ``n_head`` query heads, every KV head), and the blocks are taken evenly
across the demo's depth. The tokenizer and every other key are the demo's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

DEMO = {"n_layers": 30, "n_embd": 576, "n_ff": 1536, "n_head": 9}
HEAD_DIM = 64
# keys the cut rewrites (the rest of the demo's metadata is copied as it is)
SHAPE_KEYS = {"llama.block_count", "llama.embedding_length", "llama.feed_forward_length",
              "llama.attention.head_count"}


def cut_demo(path: Path, n_layers: int, n_embd: int, n_ff: int,
             weight_type: str | None = None) -> Path:
    """Write the demo cut to ``n_layers`` blocks ``n_embd`` wide (``n_embd / 64`` query
    heads) with ``n_ff`` feed-forward rows, at ``path``. ``weight_type`` (e.g. ``Q8_0``)
    requantizes the block matrices from the demo's values; None keeps its bytes."""
    import gguf

    from engine.demo import demo_model_path

    if n_embd % HEAD_DIM or n_embd > DEMO["n_embd"] or n_ff > DEMO["n_ff"] \
            or n_ff % 32 or not 0 < n_layers <= DEMO["n_layers"]:
        raise ValueError(f"cannot cut {n_layers} blocks {n_embd} wide, {n_ff} ff "
                         f"from the demo ({DEMO})")
    reader = gguf.GGUFReader(str(demo_model_path()))
    writer = gguf.GGUFWriter(str(path), "llama")
    values = {"llama.block_count": n_layers, "llama.embedding_length": n_embd,
              "llama.feed_forward_length": n_ff,
              "llama.attention.head_count": n_embd // HEAD_DIM}
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, values.get(name, field.contents()), vtype, sub_type=sub)
    size = {DEMO["n_embd"]: n_embd, DEMO["n_ff"]: n_ff}  # other sizes (KV 192, vocab) stay
    blocks = [round(i * DEMO["n_layers"] / n_layers) for i in range(n_layers)]
    source = {t.name: t for t in reader.tensors}
    for name, t in source.items():
        if name.startswith("blk."):
            _, layer, rest = name.split(".", 2)
            if int(layer) not in blocks:
                continue
            name = f"blk.{blocks.index(int(layer))}.{rest}"
        dims = [size.get(int(d), int(d)) for d in t.shape]  # ggml order: inputs first
        data, qtype = _cut(t, dims)
        if weight_type and name.startswith("blk.") and len(dims) == 2:
            target = gguf.GGMLQuantizationType[weight_type]
            real = gguf.quants.dequantize(data, qtype)
            data, qtype = gguf.quants.quantize(real, target), target
        writer.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _cut(tensor: Any, dims: list[int]) -> tuple[Any, Any]:
    """The first ``dims`` of a tensor (ggml order), as stored bytes or floats."""
    import gguf

    qtype = gguf.GGMLQuantizationType(int(tensor.tensor_type))
    data = np.asarray(tensor.data)
    if len(dims) == 1:
        return np.ascontiguousarray(data[:dims[0]]), qtype
    block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    if dims[0] % block:
        raise ValueError(f"{tensor.name}: {dims[0]} inputs is not a whole number of blocks")
    width = dims[0] // block * nbytes if data.dtype == np.uint8 else dims[0]
    return np.ascontiguousarray(data[:dims[1], :width]), qtype
