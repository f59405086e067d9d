"""Limits, run for real on the Vulkan device: a rig that leaves little room makes the plan
spill and the load succeed as planned; a plan made too big on purpose runs out of device
memory, and the re-plan loads a smaller one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.gpu.conftest import run_worker

MIB = 1 << 20


def test_a_small_budget_spills_and_loads_as_planned(gpu_home: Path,
                                                    vulkan_device: dict[str, Any]) -> None:
    got = run_worker(gpu_home, "capped", "600")
    assert got["spills"] and got["spills"][0]["kind"] == "layers_to_ram"
    assert got["gpu_layers"] and got["placement_problems"] == []
    assert got["misses"] == []  # the plan's bytes per device are what llama.cpp allocated
    assert 0 < got["layers_on_gpu"] < 17  # some blocks on the device, the rest in RAM
    device = sum(sum(parts.values()) for name, parts in got["buffers"].items()
                 if name.startswith("Vulkan") and not name.endswith("_Host"))
    assert 0 < device <= got["budget_bytes"]  # what llama.cpp allocated fits the budget
    host = sum(parts.get("model", 0) for name, parts in got["buffers"].items()
               if name.startswith("CPU"))
    assert host > device  # most weights stayed in RAM


def test_a_plan_too_big_runs_out_of_memory_and_the_replan_loads(
        gpu_home: Path, vulkan_device: dict[str, Any]) -> None:
    got = run_worker(gpu_home, "oom", "900")
    first = got["attempts"][0]
    assert "out of memory on Vulkan0" in first["error"] and first["device"] == "Vulkan0"
    assert first["gpu_planned"] > 900 * MIB
    assert got["loaded_on_attempt"] == len(got["attempts"]) >= 2
    last = got["attempts"][-1]
    assert "error" not in last and last["n_gpu_layers"] < first["n_gpu_layers"]


def test_a_budget_too_small_for_any_layer_still_counts_the_device_compute(
        gpu_home: Path, vulkan_device: dict[str, Any]) -> None:
    got = run_worker(gpu_home, "capped", "550")
    assert got["layers_on_gpu"] == 0
    device = sum(sum(parts.values()) for name, parts in got["buffers"].items()
                 if name.startswith("Vulkan") and not name.endswith("_Host"))
    assert device > 0 and got["gpu_planned"] > 0  # op offload's buffer, priced
    assert device <= got["budget_bytes"] and got["misses"] == []
