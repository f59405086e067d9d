"""The re-plan after a GPU ran out of memory: that device gets half of what the failed
plan put there, so the next plan is smaller (run for real in tests/gpu/test_gpu_limits)."""

from __future__ import annotations

from pathlib import Path

from engine.gguf_file import load_profile
from engine.launch import shrink_after_out_of_memory
from planner.inventory import Inventory
from planner.plan import plan
from planner.request import Request
from planner.roles import reserve_for
from tests.helpers.gguf_factory import Shape, write_llama

GIB = 1 << 30


def _rig(free_gib: float) -> Inventory:
    return Inventory.from_json({
        "schema": "loadout.inventory/1",
        "gpus": [{"index": 0, "name": "GeForce RTX 4090", "vendor": "nvidia",
                  "backend": "cuda", "total_bytes": 24 * GIB,
                  "free_bytes": int(free_gib * GIB), "bandwidth_gbps": 1008.0,
                  "pcie_gbps": 31.5, "tflops_fp16": 150.0}],
        "host": {"cpu": "Ryzen 9 7950X", "cores": 16, "threads": 32,
                 "ram_total_bytes": 64 * GIB, "ram_available_bytes": 56 * GIB,
                 "bandwidth_gbps": 80.0},
        "disks": [{"path": "/models", "kind": "nvme", "read_gbps": 6.5}]})


def test_each_out_of_memory_halves_what_the_device_is_given(tmp_path: Path) -> None:
    path = write_llama(tmp_path / "m.gguf", Shape(n_layers=40, n_embd=4096, n_head=32,
                                                  n_head_kv=8, head_dim=128, n_ff=14336,
                                                  n_vocab=32000), header_only=True)
    profile, request = load_profile(path), Request(context=4096, advise=False)
    inventory = _rig(23.5)
    first = plan(inventory, profile, request)
    used = next(d.used_bytes for d in first.devices if d.id == "gpu0")
    smaller = shrink_after_out_of_memory(inventory, first)
    assert shrink_after_out_of_memory(inventory, first.to_json()) == smaller  # or its JSON
    gpu = smaller.gpus[0]
    assert gpu.free_bytes == used // 2 + reserve_for(inventory.gpus[0])
    second = plan(smaller, profile, request)
    assert second.engine.n_gpu_layers < first.engine.n_gpu_layers
    assert next(d.used_bytes for d in second.devices if d.id == "gpu0") <= used // 2
    # no layer on the GPU: it still runs the prompt's matmuls (op offload) in its compute
    # buffer, which is what an out-of-memory there halves
    in_ram = plan(inventory, profile, Request(context=4096, advise=False, n_gpu_layers=0))
    gpu_use = next(d for d in in_ram.devices if d.id == "gpu0")
    assert gpu_use.weights_bytes == 0 and gpu_use.compute_bytes > 0
    host_only = shrink_after_out_of_memory(inventory, in_ram)
    assert host_only.gpus[0].free_bytes == gpu_use.used_bytes // 2 + reserve_for(
        inventory.gpus[0])


def test_the_ladder_shrinks_the_gpu_that_ran_out_and_grows_the_host_reserve_otherwise(
        tmp_path: Path) -> None:
    from engine.errors import AllocationFailedError
    from engine.launch import ReplanLadder, gpu_out_of_memory_in_log

    ladder = ReplanLadder()
    ladder.last_plan = {"devices": [{"id": "gpu0", "kind": "gpu", "weights_bytes": 8 * GIB,
                                     "kv_bytes": 0, "compute_bytes": 0, "other_bytes": 0}]}
    said = ladder.failed(AllocationFailedError("out of memory on CUDA0", "CUDA0", None, None))
    assert "CUDA0" in said and ladder.failed_gpu_plans == [ladder.last_plan]
    assert ladder.host_attempt == 0
    ladder.failed(AllocationFailedError("out of host memory", "CPU", None, None))
    assert ladder.host_attempt == 1 and len(ladder.failed_gpu_plans) == 1
    smaller = shrink_after_out_of_memory(_rig(23.5), ladder.failed_gpu_plans[0])
    assert smaller.gpus[0].free_bytes == 4 * GIB + reserve_for(_rig(23.5).gpus[0])
    # a dead engine's log (the app's ladder reads it)
    assert gpu_out_of_memory_in_log(
        "alloc_tensor_range: failed to allocate Vulkan0 buffer of size 672243712") == "Vulkan0"
    assert gpu_out_of_memory_in_log("loading m.gguf: out of memory on CUDA1: asked") == "CUDA1"
    assert gpu_out_of_memory_in_log("failed to allocate CPU buffer of size 9") == ""
    assert gpu_out_of_memory_in_log("Vulkan_Host: failed to allocate Vulkan_Host buffer") == ""
