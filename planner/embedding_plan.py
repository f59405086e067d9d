"""A plan with the engine's embedding context: its memory held back on the devices that
run it before the model is placed, and shown there.

A chat model served with ``--embeddings`` keeps a second llama.cpp context for
``/v1/embeddings`` beside its chat context; an embedding model has that context only (the
engine makes no chat context for it). The model is planned once to learn where its layers
go, the embedding context's bytes there (:mod:`planner.embedding_memory`) are taken from
those devices' free memory, and the model is planned again in what is left, as
:mod:`planner.vision_plan` does for a projector. The second plan's devices then carry the
embedding context's KV cache, compute and output buffers in their ``kv``, ``compute`` and
``other`` bytes (an embedding model's chat-context figures replaced by them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from planner.embedding_memory import (
    ENCODE_TOKENS,
    EmbeddingContext,
    embedding_batch,
    embedding_memory,
    is_embedding_model,
)
from planner.inventory import Inventory
from planner.memory import F32_BYTES, HOST, DeviceMemory, Placement
from planner.plan_types import DeviceUse, Plan
from planner.profile import ModelProfile
from planner.request import Request
from planner.residency import Resident, inventory_left


def plans_embeddings(profile: ModelProfile, request: Request) -> bool:
    """Whether ``request``'s plan of ``profile`` has an embedding context."""
    if request.embedding_context is None:
        return is_embedding_model(profile)
    return request.embedding_context


def _ranges_device(devices: Iterable[DeviceUse], index: int, experts: bool) -> str | None:
    for d in devices:
        for first, last in (d.expert_layers if experts else d.layers):
            if first <= index < last:
                return HOST if d.kind == "disk" else d.id
    return None


def placement_of(p: Plan, profile: ModelProfile) -> Placement:
    """Where ``p`` puts each block (and its routed experts: with the block unless a range
    says otherwise); the output beside the last block."""
    layers = tuple(_ranges_device(p.devices, i, False) or HOST
                   for i in range(profile.n_layers))
    experts = tuple(_ranges_device(p.devices, i, True) or layers[i]
                    for i in range(profile.n_layers))
    return Placement(layers, experts, layers[-1] if layers else HOST)


def context_of(p: Plan, profile: ModelProfile, model: bool) -> EmbeddingContext:
    """The embedding context the engine makes beside plan ``p``: inputs as long as the
    model's trained context (an embedding model) or the chat context's sequence."""
    longest = profile.n_ctx_train if model else p.context
    return EmbeddingContext(embedding_batch(longest), p.kv_type, p.kv_type)


def _by_device(memory: Iterable[DeviceMemory]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in memory:
        out[m.device] = out.get(m.device, 0) + m.total_bytes
    return out


def base_request(profile: ModelProfile, request: Request) -> Request:
    """The request the model is planned with before the embedding context is added: an
    embedding model's chat context, which the engine never makes, as small as can be."""
    base = replace(request, embedding_context=False)
    if is_embedding_model(profile):
        base = replace(base, context=ENCODE_TOKENS, parallel=1)
    return base


def embedding_room(inventory: Inventory, first: Plan, profile: ModelProfile
                   ) -> tuple[dict[str, int], Inventory]:
    """The bytes per device the embedding context needs beside plan ``first``, and
    ``inventory`` less them (where the model is planned again)."""
    model = is_embedding_model(profile)
    held = _by_device(embedding_memory(profile, context_of(first, profile, model),
                                       placement_of(first, profile)))
    return held, inventory_left(inventory, [Resident("embeddings", tuple(held.items()), 0.0)])


def with_embeddings(second: Plan, profile: ModelProfile, held: dict[str, int]) -> Plan:
    """Plan ``second`` (made in what :func:`embedding_room` left) with the embedding
    context's bytes on its devices."""
    model = is_embedding_model(profile)
    context = context_of(second, profile, model)
    memory = {m.device: m for m in embedding_memory(profile, context,
                                                    placement_of(second, profile))}
    chat_output = profile.n_vocab * F32_BYTES * second.parallel if model else 0
    devices = tuple(_with(d, memory.get(d.id), held.get(d.id, 0), model, chat_output)
                    for d in second.devices)
    if not model:
        return replace(second, devices=devices)
    return replace(second, devices=devices,
                   context=min(profile.n_ctx_train, context.n_batch) or context.n_batch)


def _with(device: DeviceUse, memory: DeviceMemory | None, held: int, model: bool,
          chat_output: int) -> DeviceUse:
    """``device`` with the embedding context's bytes (an embedding model: in place of its
    chat context's); its capacity given back what was held for them."""
    if memory is None or device.kind == "disk":
        return device
    capacity = device.capacity_bytes + held
    if model:
        other = device.other_bytes - (min(chat_output, device.other_bytes)
                                      if device.id == HOST else 0)
        return replace(device, kv_bytes=memory.kv_bytes, compute_bytes=memory.compute_bytes,
                       other_bytes=other + memory.output_bytes, capacity_bytes=capacity)
    return replace(device, kv_bytes=device.kv_bytes + memory.kv_bytes,
                   compute_bytes=device.compute_bytes + memory.compute_bytes,
                   other_bytes=device.other_bytes + memory.output_bytes,
                   capacity_bytes=capacity)
