"""Offline estimates: the catalog's models sized and planned from their published shape.

Before the hub has ever been reached there are no file listings, so no file sizes and no
headers. Each catalog entry's ``shape`` (parameters, layers, widths, KV heads, vocabulary)
gives instead an estimated file size, parameters x the quantization's nominal bits per
weight (:data:`engine.hub.quants.BITS_PER_WEIGHT`), and a synthetic profile of that size
and geometry that the planner plans like a real one. The choices are ranked as the
recommender ranks real ones and marked ``estimated``: nothing can be downloaded offline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from engine.hub.catalog import Catalog, CatalogModel, QuantOption
from engine.hub.hubapi import RemoteFile
from engine.hub.quants import FileGroup, bits_of
from engine.hub.recommend import Recommendations, recommend
from planner.inventory import Inventory
from planner.profile import LayerKind, LayerProfile, ModelProfile, TensorInfo, TensorKind

GGUF_OVERHEAD_BYTES = 8 << 20   # header, vocabulary and norms of a GGUF, roughly
REFERENCE_QUANT = "Q4_K_M"


def shape_of(model: CatalogModel) -> dict[str, float]:
    """The catalog's published shape of ``model`` (empty when the entry has none)."""
    return dict(model.shape)


def estimated_bytes(model: CatalogModel, quant: str) -> int | None:
    """Estimated file size of ``model`` as ``quant``: parameters x bits per weight / 8.

    None when the catalog gives no parameter count or the quantization is unknown.
    """
    params = shape_of(model).get("params_b", 0.0) * 1e9
    bits = bits_of(quant)
    if params <= 0 or bits <= 0:
        return None
    return int(params * bits / 8) + GGUF_OVERHEAD_BYTES


def estimated_profile(model: CatalogModel, quant: str = REFERENCE_QUANT) -> ModelProfile | None:
    """A synthetic profile of ``model`` as ``quant``, from the catalog's shape.

    Every layer is full attention with the published KV heads (sliding windows and MLA
    compression are not modelled, so the KV cache is an upper bound); the parameters left
    after embeddings and attention are the FFN, split for MoE into routed experts (what
    is not active) and the always-read rest.
    """
    s = shape_of(model)
    size = estimated_bytes(model, quant)
    needed = ("layers", "embd", "heads", "kv_heads", "head_dim", "vocab")
    if size is None or any(s.get(k, 0) <= 0 for k in needed):
        return None
    n_layers, embd, vocab = int(s["layers"]), int(s["embd"]), int(s["vocab"])
    heads, kv_heads, head_dim = int(s["heads"]), int(s["kv_heads"]), int(s["head_dim"])
    total = s["params_b"] * 1e9
    tied = bool(s.get("tied"))
    embd_params = vocab * embd * (1 if tied else 2)
    attn = 2 * embd * heads * head_dim + 2 * embd * kv_heads * head_dim
    block = max(0.0, (total - embd_params) / n_layers - attn)
    experts_n, used = int(s.get("experts", 0)), int(s.get("experts_used", 0))
    experts = 0.0
    if experts_n > 1 and 0 < used < experts_n and s.get("active_b", 0) > 0:
        experts = min(block, (total - s["active_b"] * 1e9) / (1 - used / experts_n) / n_layers)
    ffn = block - experts
    per_param = (size - GGUF_OVERHEAD_BYTES) / total     # bytes per parameter
    file_type = quant.upper().removeprefix("UD-")

    def nbytes(params: float) -> int:
        return int(params * per_param)

    layers, tensors = [], []
    parts = ((TensorKind.ATTENTION, attn, "attn"), (TensorKind.FFN, ffn, "ffn"),
             (TensorKind.EXPERTS, experts, "ffn_exps"))
    for i in range(n_layers):
        by_kind = tuple((kind, nbytes(p)) for kind, p, _ in parts if p > 0)
        layers.append(LayerProfile(
            index=i, kind=LayerKind.FULL, bytes_by_kind=by_kind, n_head=heads,
            n_head_kv=kv_heads, head_dim_k=head_dim, head_dim_v=head_dim,
            n_ff=int(ffn / (3 * embd)),
            n_ff_exp=int(experts / (3 * embd * experts_n)) if experts else 0))
        tensors += [TensorInfo(name=f"blk.{i}.{name}", ggml_type=file_type,
                               shape=(int(p),), nbytes=nbytes(p), offset=0, layer=i,
                               kind=kind) for kind, p, name in parts if p > 0]
    embd_bytes = nbytes(vocab * embd)
    output_bytes = 0 if tied else embd_bytes
    tensors.append(TensorInfo("token_embd.weight", file_type, (embd, vocab), embd_bytes, 0,
                              None, TensorKind.TOKEN_EMBD))
    if output_bytes:
        tensors.append(TensorInfo("output.weight", file_type, (embd, vocab), output_bytes, 0,
                                  None, TensorKind.OUTPUT))
    weights = sum(t.nbytes for t in tensors)
    return ModelProfile(
        architecture="llama", name=f"{model.name} (estimate)", file_bytes=size,
        n_layers=n_layers, n_embd=embd, n_vocab=vocab, n_ctx_train=int(s.get("ctx", 0)),
        layers=tuple(layers), tensors=tuple(tensors), token_embd_bytes=embd_bytes,
        output_bytes=output_bytes, other_bytes=0,
        expert_count=experts_n if experts else 0, expert_used_count=used if experts else 0,
        file_type=file_type, quant_bytes=((file_type, weights),), n_params=int(total),
        tied_output=tied)


def estimated_catalog(catalog: Catalog) -> Catalog:
    """``catalog`` with each quantization given its estimated size (models with a shape)."""
    models = []
    for model in catalog.models:
        if estimated_profile(model) is None:
            continue
        options = []
        for option in model.quants:
            size = estimated_bytes(model, option.quant)
            if size is not None:
                files = (RemoteFile(repo=model.repo, path=f"{option.quant}.gguf", size=size,
                                    sha256=None),)
                options.append(QuantOption(option.quant, FileGroup(option.quant, files)))
        models.append(replace(model, quants=tuple(options)))
    return replace(catalog, models=tuple(models))


def estimated_recommendations(inventory: Inventory, task: str, catalog: Catalog,
                              progress: Callable[[int, int], None] | None = None
                              ) -> Recommendations:
    """The catalog ranked for ``inventory`` from estimates alone (no hub needed).

    Every choice is ``estimated``; its ``spec`` is the repo (``hf:OWNER/REPO``), since no
    file name is known before the hub lists it.
    """
    sized = estimated_catalog(catalog)

    def profiles(model: CatalogModel) -> ModelProfile:
        profile = estimated_profile(model)
        assert profile is not None  # estimated_catalog kept only models with a shape
        return profile

    ranked = recommend(inventory, task, catalog=sized, profiles=profiles, progress=progress)
    items = tuple(replace(r, spec=f"hf:{r.repo}", estimated=True, exact_profile=False)
                  for r in ranked.items)
    return replace(ranked, items=items)
