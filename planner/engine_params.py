"""The Plan's ``engine`` value: the :class:`~planner.plan_types.EngineParams` that carry a
priced arrangement out, with llama.cpp's device names ("CPU", "CUDA0", "ROCm1", ...) in
its ``tensor_overrides`` and ``devices``. The expert-tensor regex every spec uses (planned
or not) is :func:`expert_override`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.ggml_types import KvType
from planner.inventory import Backend, Inventory
from planner.plan_types import EngineParams, SplitMode
from planner.profile import ModelProfile
from planner.request import Request

if TYPE_CHECKING:
    from planner.placement import Layout
    from planner.trials import Trial

OUTPUT_PATTERN = "^output\\.weight$"
EXPERT_PATTERN = "ffn_(up|down|gate_up|gate)_(ch|)exps"
_DEVICE_PREFIX = {Backend.CUDA: "CUDA", Backend.ROCM: "ROCm", Backend.VULKAN: "Vulkan",
                  Backend.METAL: "MTL", Backend.SYCL: "SYCL", Backend.RPC: "RPC"}


def device_name(inventory: Inventory, device: str) -> str:
    """llama.cpp's name for a plan device ("gpu1" -> "CUDA1", "host" -> "CPU"): the GPU's
    ``engine_device`` (the engine's own name, from detection); for an inventory not
    detected by the engine (a rig file, a what-if), the name llama.cpp gives the backend's
    n-th device."""
    if not device.startswith("gpu"):
        return "CPU"
    index = int(device[3:])
    gpu = next(g for g in inventory.gpus if g.index == index)
    if gpu.engine_device:
        return gpu.engine_device
    same = [g.index for g in inventory.gpus if g.backend == gpu.backend]
    return f"{_DEVICE_PREFIX.get(gpu.backend, 'GPU')}{same.index(index)}"


def ranges(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted block indices as ``[first, last)`` ranges."""
    out: list[tuple[int, int]] = []
    for i in sorted(indices):
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def expert_override(layers: list[int]) -> str:
    """One regex matching the routed-expert tensors of ``layers`` (the regex of every
    expert override, planned or pinned with ``--n-cpu-moe``)."""
    alternatives = "|".join(str(i) for i in sorted(layers))
    return f"blk\\.({alternatives})\\.{EXPERT_PATTERN}"


def engine_params(inventory: Inventory, profile: ModelProfile, request: Request,
                  trial: Trial) -> EngineParams:
    """The engine parameters that carry ``trial`` out (no speculation: the plan adds it)."""
    layout = trial.layout
    placement = layout.placement
    n = profile.n_layers
    gpu_devs = [f"gpu{g.index}" for g in inventory.gpus]
    counts = {d: sum(1 for x in placement.layer_devices if x == d) for d in gpu_devs}
    used = [d for d in gpu_devs if counts[d]]
    n_cpu = layout.n_cpu_layers if used else n
    ngl = (n + 1 - n_cpu) if used else 0
    main = next((r.device for r in trial.roles if r.role.value == "main"), None)
    split: list[float] | None = None
    overrides: list[list[str]] = []
    if len(used) > 1:
        last = used[-1]
        split = [float(counts[d] + (1 if d == last else 0)) for d in gpu_devs]
        if main is not None and main != last and placement.output_device == main:
            overrides.append([OUTPUT_PATTERN, device_name(inventory, main)])
    if layout.expert_host_layers and used:
        overrides.insert(0, [expert_override(list(layout.expert_host_layers)), "CPU"])
    if request.tensor_split is not None:  # pinned: exactly as given
        split = list(request.tensor_split)
    if request.n_gpu_layers is not None and inventory.gpus:
        ngl = request.n_gpu_layers
    main_index = int(main[3:]) if main and main in used else (
        int(used[0][3:]) if used else 0)
    threads = inventory.host.cores
    remote = _remote_devices(inventory, layout, used, main)
    if remote is not None:
        _, devices, split, main_index = remote
        # the output follows the last device of the list unless the main one keeps it
        overrides = [o for o in overrides if o[0] != OUTPUT_PATTERN]
        if main_index != len(devices) - 1 and placement.output_device == main:
            overrides.append([OUTPUT_PATTERN, devices[main_index]])
    kv = KvType.of(trial.kv_type)
    return EngineParams(
        n_ctx=trial.config.n_ctx, n_seq_max=trial.config.n_seq,
        n_batch=trial.config.n_batch, n_ubatch=trial.config.n_ubatch,
        n_threads=threads, n_threads_batch=threads, flash_attn=trial.config.flash_attn,
        type_k=kv, type_v=kv, n_gpu_layers=ngl,
        tensor_split=None if split is None else tuple(split), main_gpu=main_index,
        split_mode=SplitMode.LAYER if len(used) > 1 or split else SplitMode.NONE,
        tensor_overrides=tuple((p, d) for p, d in overrides),
        devices=tuple(remote[1]) if remote is not None else (),
        rpc_workers=tuple(remote[0]) if remote is not None else ())


def rpc_device_names(inventory: Inventory, rpc_workers: list[str]) -> dict[int, str]:
    """llama.cpp's names of the devices of ``rpc_workers`` once registered in that order
    (``RPC0``, ``RPC1`` ... numbered across workers), by GPU index."""
    names: dict[int, str] = {}
    for endpoint in rpc_workers:
        for g in inventory.gpus:
            if g.remote and g.endpoint == endpoint:
                names[g.index] = f"RPC{len(names)}"
    return names


def _remote_devices(inventory: Inventory, layout: Layout, used: list[str], main: str | None
                    ) -> tuple[list[str], list[str], list[float], int] | None:
    """With a worker's device in use: the workers to register, the device list in layer
    order (workers first, local GPUs last, as llama.cpp orders them), the split in that
    order (block counts) and the main device's position in it. None when no worker's
    device is used."""
    by_dev = {f"gpu{g.index}": g for g in inventory.gpus}
    if not any(by_dev[d].remote for d in used):
        return None
    rpc_workers: list[str] = []
    for g in inventory.gpus:
        if g.remote and f"gpu{g.index}" in used and g.endpoint not in rpc_workers:
            rpc_workers.append(g.endpoint)
    names = rpc_device_names(inventory, rpc_workers)
    ordered = [d for d, _, _ in layout.gpu_layers if d in used]
    ordered += [d for d in used if d not in ordered]
    devices = [names[by_dev[d].index] if by_dev[d].remote else device_name(inventory, d)
               for d in ordered]
    counts = {d: sum(1 for x in layout.placement.layer_devices if x == d) for d in ordered}
    # block counts (a pinned split too: the layout mirrors what llama.cpp makes of it)
    split = [float(counts[d]) for d in ordered]
    split[-1] += 1.0  # the output layer follows the last block
    main_pos = ordered.index(main) if main in ordered else len(ordered) - 1
    return rpc_workers, devices, split, main_pos
