"""The GPU bandwidth probe over a stand-in for ``torch.cuda`` (no GPU on this machine).

The stand-in's copies "take" the time a GPU of known bandwidth would need, through the
same event-timing calls torch offers; the probe's arithmetic and its merge into the
Inventory (and the cache) are real.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.hardware import Sources, detect
from engine.hardware.bandwidth import torch_gpu_bandwidth
from tests.engine.test_hardware_nvidia import (
    FakeNvml,
    cuda_devices,
    fake_sys_with_nvidia,
    rtx3060,
    rtx4090,
)

GIB = 2**30


class FakeTensor:
    def __init__(self, torch: FakeTorch, size: int, device: Any) -> None:
        self.torch, self.size, self.device = torch, size, device

    def copy_(self, other: FakeTensor, non_blocking: bool = False) -> FakeTensor:
        gpu = self.torch.gpus[self.device.index]
        if other.device is None:   # pinned host memory -> device
            self.torch.pending = self.size / (gpu["h2d"] * 1e9)
        else:                      # device -> device: read + write
            self.torch.pending = 2 * self.size / (gpu["bw"] * 1e9)
        return self


class FakeEvent:
    def __init__(self, torch: FakeTorch) -> None:
        self.torch = torch
        self.at = 0.0

    def record(self) -> None:
        self.torch.clock += self.torch.pending
        self.torch.pending = 0.0
        self.at = self.torch.clock

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.at - self.at) * 1e3  # milliseconds, like torch


class FakeTorch:
    """Just the torch calls the probe makes."""

    uint8 = "uint8"

    def __init__(self, gpus: list[dict[str, Any]]) -> None:
        self.gpus = gpus
        self.clock = 0.0
        self.pending = 0.0
        torch = self

        @contextlib.contextmanager
        def device_ctx(i: int) -> Iterator[None]:
            yield

        self.cuda = types.SimpleNamespace(
            is_available=lambda: bool(gpus), device_count=lambda: len(gpus),
            get_device_properties=lambda i: types.SimpleNamespace(
                name=gpus[i]["name"], total_memory=gpus[i]["total"]),
            Event=lambda enable_timing: FakeEvent(torch), device=device_ctx,
            empty_cache=lambda: None)

    def device(self, kind: str, index: int) -> Any:
        return types.SimpleNamespace(type=kind, index=index)

    def empty(self, size: int, dtype: str, device: Any = None,
              pin_memory: bool = False) -> FakeTensor:
        return FakeTensor(self, size, device)

    def empty_like(self, t: FakeTensor) -> FakeTensor:
        return FakeTensor(self, t.size, t.device)


def test_probe_turns_copy_times_into_bandwidth() -> None:
    fake = FakeTorch([{"name": "NVIDIA GeForce RTX 4090", "total": 24 * GIB, "bw": 900,
                       "h2d": 25}])
    (probe,) = torch_gpu_bandwidth(fake, size_bytes=256 * 2**20)
    assert probe.bandwidth_gbps == pytest.approx(900, rel=0.01)
    assert probe.h2d_gbps == pytest.approx(25, rel=0.01)
    assert torch_gpu_bandwidth(FakeTorch([])) == []


def test_measured_gpu_figures_replace_driver_peaks_and_are_cached(tmp_path: Path) -> None:
    big, small = rtx4090(), rtx3060()
    fake = FakeTorch([  # torch numbers the GPUs differently from NVML here
        {"name": small.name, "total": small.total, "bw": 330, "h2d": 6.5},
        {"name": big.name, "total": big.total, "bw": 910, "h2d": 24.0},
    ])
    sources = Sources(nvml=FakeNvml([big, small]), torch=fake,
                      sys_root=fake_sys_with_nvidia(tmp_path / "sys", 2),
                      engine_devices=lambda: cuda_devices(big, small),
                      cache_dir=tmp_path / "cache", core_probe=lambda cancelled: None)
    inv = detect(model_dirs=[], sources=sources)
    g4090, g3060 = inv.gpus
    assert g4090.bandwidth_gbps == pytest.approx(910, rel=0.01)
    assert g3060.pcie_gbps == pytest.approx(6.5, rel=0.01)
    assert {"bandwidth_gbps", "pcie_gbps"} <= set(g4090.measured)
    # Cached: a torch that would now measure nothing changes nothing.
    again = detect(model_dirs=[], sources=Sources(
        nvml=FakeNvml([big, small]), torch=FakeTorch([]), sys_root=sources.sys_root,
        engine_devices=sources.engine_devices, cache_dir=tmp_path / "cache",
        core_probe=sources.core_probe))
    assert [g.bandwidth_gbps for g in again.gpus] == [g.bandwidth_gbps for g in inv.gpus]
