"""A plan with a vision projector: its memory held back on its device before the model is
placed, shown on that device's memory map, and its image cost in the prediction.

llama.cpp's ``--fit`` ignores the projector (llama.cpp #18181). Here the model is planned
once to learn the main GPU, the projector's weights and compute buffer are taken from that
GPU's free memory (from the host's RAM when it is not offloaded or there is no GPU), and
the model is planned again in what is left: the projector always has its room.
:func:`planner.plan.plan_with_projector` runs those steps; this module holds them.
"""

from __future__ import annotations

from dataclasses import replace

from planner.inventory import Inventory
from planner.plan_types import DeviceUse, Plan
from planner.projector import ProjectorProfile, ProjectorUse, place_projector
from planner.request import Role
from planner.speed import CONSTANTS, HOST, core_scale, gpu_flops

# projector types whose image tokens the text model attends to all at once
NON_CAUSAL = frozenset({"gemma3", "deepseek4v"})


def _host_flops(inventory: Inventory) -> float:
    cores = max(1, inventory.host.cores)
    return cores * CONSTANTS.cpu_core_gflops * core_scale(inventory) * 1e9


def projector_room(inventory: Inventory, first: Plan, projector: ProjectorProfile,
                   offload: bool = True) -> tuple[ProjectorUse, Inventory]:
    """Where the projector goes (the main GPU of ``first``, the model planned alone, when
    ``offload`` and it has one; else host RAM) and the inventory with its memory taken.

    The projector's compute buffer is sized with flash attention: llama.cpp's multimodal
    library turns it on by itself (``auto``) wherever the backend has it.
    """
    main = next((r for r in first.roles if r.role == Role.MAIN), None)
    gpu = next((g for g in inventory.gpus if main is not None and g.index == main.gpu), None)
    if offload and gpu is not None:
        use = place_projector(projector, f"gpu{gpu.index}", gpu_flops(gpu))
        shrunk = replace(gpu, free_bytes=max(0, gpu.free_bytes - use.total_bytes))
        return use, inventory.with_gpus(tuple(shrunk if g is gpu else g
                                              for g in inventory.gpus))
    use = place_projector(projector, HOST, _host_flops(inventory))
    host = inventory.host
    return use, replace(inventory, host=replace(
        host, ram_available_bytes=max(0, host.ram_available_bytes - use.total_bytes)))


def with_projector(second: Plan, use: ProjectorUse, projector: ProjectorProfile) -> Plan:
    """``second`` (the model planned in what the projector leaves) with the projector on
    its memory map, in its engine parameters and its image cost in the prediction."""
    raw = second.raw_predicted
    if raw is not None and raw.prefill_tps > 0 and second.predicted.prefill_tps > 0:
        # this machine's measured runs corrected prefill: the encoder's matmuls likewise
        use = replace(use, encode_s=use.encode_s * raw.prefill_tps
                      / second.predicted.prefill_tps)
    devices = tuple(_with_projector(d, use) for d in second.devices)
    engine = replace(second.engine, mmproj_offload=use.device != HOST)
    if projector.projector_type in NON_CAUSAL:
        # the text model reads an image's tokens in one micro-batch (Gemma 3)
        ubatch = max(engine.n_ubatch, projector.image_tokens)
        engine = replace(engine, n_ubatch=ubatch, n_batch=max(engine.n_batch, ubatch))
    return replace(second, devices=devices, projector=use, engine=engine)


def _with_projector(device: DeviceUse, use: ProjectorUse) -> DeviceUse:
    if device.id != use.device:
        return device
    # the capacity the device really has; the projector's bytes are used there
    return replace(device, projector_bytes=use.total_bytes,
                   capacity_bytes=device.capacity_bytes + use.total_bytes)
