"""NVIDIA detection through a stand-in for the ``pynvml`` module (this machine has no GPU).

The stand-in mirrors pynvml's API at the library boundary: the functions detection calls,
``NVMLError`` with a ``value``, and the error constants. Everything above it is real.
"""

from __future__ import annotations

import os
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from engine.ggml_devices import EngineDevice
from engine.hardware import Sources, detect, nvidia
from planner.inventory import Backend, Inventory

GIB = 2**30
MIB = 2**20


@dataclass
class FakeCard:
    """One GPU as NVML would report it."""

    name: str
    total: int
    free: int
    bus_width: int | None = 384
    mem_clock_mhz: int = 10501
    pcie: tuple[int, int] | None = (4, 16)
    display: bool = False
    processes: Sequence[tuple[int, int | None]] = ()
    bus_id: str = "00000000:01:00.0"
    mig: Sequence[tuple[str, int, int]] = ()   # (name, total, free) per instance
    lost: bool = False


@dataclass
class FakeNvml:
    """A module-like stand-in for ``pynvml`` over a list of :class:`FakeCard`."""

    cards: list[FakeCard] = field(default_factory=list)
    init_error: int | None = None
    shut_down: bool = False

    NVML_ERROR_LIBRARY_NOT_FOUND = 12
    NVML_ERROR_DRIVER_NOT_LOADED = 9
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
    NVML_ERROR_NO_PERMISSION = 4
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_NOT_FOUND = 6
    NVML_ERROR_GPU_IS_LOST = 15
    NVML_ERROR_FUNCTION_NOT_FOUND = 13
    NVML_CLOCK_MEM = 2
    NVML_FEATURE_ENABLED = 1
    NVML_DEVICE_MIG_ENABLE = 1

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(f"NVML error {value}")
            self.value = value

    def _fail(self, value: int) -> None:
        raise self.NVMLError(value)

    def _card(self, handle: Any) -> FakeCard:
        card = handle[0]
        if card.lost:
            self._fail(self.NVML_ERROR_GPU_IS_LOST)
        return card  # type: ignore[no-any-return]

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            self._fail(self.init_error)

    def nvmlShutdown(self) -> None:
        self.shut_down = True

    def nvmlDeviceGetCount(self) -> int:
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Any:
        return (self.cards[i], None)

    def nvmlDeviceGetName(self, handle: Any) -> str:
        card, mig = handle
        return self._card(handle).name if mig is None else card.mig[mig][0]

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        card, mig = handle
        self._card(handle)
        if mig is not None:
            _, total, free = card.mig[mig]
        else:
            total, free = card.total, card.free
        return types.SimpleNamespace(total=total, free=free, used=total - free)

    def nvmlDeviceGetMemoryBusWidth(self, handle: Any) -> int:
        card = self._card(handle)
        if card.bus_width is None:
            self._fail(self.NVML_ERROR_NOT_SUPPORTED)
        return card.bus_width  # type: ignore[return-value]

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int:
        assert clock == self.NVML_CLOCK_MEM
        return self._card(handle).mem_clock_mhz

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        card = self._card(handle)
        if card.pcie is None:
            self._fail(self.NVML_ERROR_NOT_SUPPORTED)
        return card.pcie[0]  # type: ignore[index]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        card = self._card(handle)
        if card.pcie is None:
            self._fail(self.NVML_ERROR_NOT_SUPPORTED)
        return card.pcie[1]  # type: ignore[index]

    def nvmlDeviceGetDisplayActive(self, handle: Any) -> int:
        return int(self._card(handle).display)

    def nvmlDeviceGetDisplayMode(self, handle: Any) -> int:
        return int(self._card(handle).display)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        return [types.SimpleNamespace(pid=p, usedGpuMemory=m)
                for p, m in self._card(handle).processes]

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[Any]:
        return []

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:
        return types.SimpleNamespace(busId=self._card(handle).bus_id.encode())

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        card = self._card(handle)
        if not card.mig:
            self._fail(self.NVML_ERROR_NOT_SUPPORTED)
        return [1, 1]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any) -> int:
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, j: int) -> Any:
        card = self._card(handle)
        if j >= len(card.mig):
            self._fail(self.NVML_ERROR_NOT_FOUND)
        return (card, j)


def rtx4090(**kw: Any) -> FakeCard:
    args: dict[str, Any] = dict(name="NVIDIA GeForce RTX 4090", total=24 * GIB,
                                free=23 * GIB, bus_width=384, mem_clock_mhz=10501)
    return FakeCard(**{**args, **kw})


def rtx3060(**kw: Any) -> FakeCard:
    args: dict[str, Any] = dict(name="NVIDIA GeForce RTX 3060", total=12 * GIB,
                                free=11 * GIB, bus_width=192, mem_clock_mhz=7501,
                                pcie=(3, 8), bus_id="00000000:02:00.0")
    return FakeCard(**{**args, **kw})


def cuda_devices(*cards: FakeCard) -> list[EngineDevice]:
    devs = [EngineDevice(i, f"CUDA{i}", c.name.removeprefix("NVIDIA "), "gpu", c.free,
                         c.total) for i, c in enumerate(cards)]
    ram = psutil.virtual_memory().total  # what ggml's CPU device reports on Linux
    return [*devs, EngineDevice(len(devs), "CPU", "Some CPU", "cpu", ram, ram)]


def fake_sys_with_nvidia(root: Path, count: int = 1) -> Path:
    """A sysfs tree holding ``count`` NVIDIA display controllers on the PCI bus."""
    for i in range(count):
        dev = root / "bus" / "pci" / "devices" / f"0000:0{i + 1}:00.0"
        dev.mkdir(parents=True)
        (dev / "class").write_text("0x030000\n")
        (dev / "vendor").write_text("0x10de\n")
        (dev / "device").write_text("0x2684\n")
    return root


def test_a_4090_and_a_3060_with_their_peak_bandwidth_and_links() -> None:
    fake = FakeNvml([rtx4090(processes=[(os.getpid(), 300 * MIB), (4242, 500 * MIB)]),
                     rtx3060(display=True, processes=[(4243, None)])])
    result = nvidia.probe(fake)
    big, small = result.gpus
    assert result.notes == () and fake.shut_down
    # 384-bit x 10501 MHz x 2 (DDR) and 192-bit x 7501 MHz x 2
    assert big.bandwidth_gbps == pytest.approx(1008.1, abs=0.1)
    assert small.bandwidth_gbps == pytest.approx(360.0, abs=0.1)
    assert big.pcie_gbps == pytest.approx(31.5, abs=0.1)
    assert small.pcie_gbps == pytest.approx(7.88, abs=0.01)
    assert (big.total_bytes, big.free_bytes) == (24 * GIB, 23 * GIB)
    assert not big.drives_display and small.drives_display
    assert big.other_process_bytes == 500 * MIB  # our own process is not "other"
    assert small.other_process_bytes == 0        # hidden usage counts as unknown, not 0 B
    assert "bandwidth_driver_peak" in big.notes and "bandwidth_gbps" not in big.measured
    assert big.tflops_fp16 > small.tflops_fp16 > 0
    assert big.pci_bus_id == "00000000:01:00.0"


def test_detect_orders_gpus_as_the_engine_numbers_them(tmp_path: Path) -> None:
    big, small = rtx4090(), rtx3060()
    # CUDA's default order puts the fastest card first even when it sits on a later slot.
    sources = Sources(nvml=FakeNvml([small, big]), sys_root=fake_sys_with_nvidia(tmp_path, 2),
                      engine_devices=lambda: cuda_devices(big, small))
    inv = detect(model_dirs=[], measure=False, sources=sources)
    assert [(g.index, g.engine_device, g.name) for g in inv.gpus] == [
        (0, "CUDA0", big.name), (1, "CUDA1", small.name)]
    assert all(g.backend is Backend.CUDA for g in inv.gpus)
    # nothing measured, nothing missing
    assert inv.notes == ("host_bandwidth_default", "cpu_core_rate_default")
    assert Inventory.from_json(inv.to_json()) == inv


def test_a_laptop_gpu_driving_the_display() -> None:
    card = FakeCard(name="NVIDIA GeForce RTX 4060 Laptop GPU", total=8 * GIB, free=7 * GIB,
                    bus_width=128, mem_clock_mhz=8001, display=True, pcie=(4, 8))
    (gpu,) = nvidia.probe(FakeNvml([card])).gpus
    assert gpu.drives_display
    assert gpu.bandwidth_gbps == pytest.approx(256.0, abs=0.1)
    assert gpu.pcie_gbps == pytest.approx(15.75, abs=0.01)
    assert gpu.tflops_fp16 == 60  # the laptop row, not the desktop 4060


@pytest.mark.parametrize(("error", "code"), [
    ("NVML_ERROR_LIBRARY_NOT_FOUND", "nvml_unavailable"),
    ("NVML_ERROR_DRIVER_NOT_LOADED", "nvidia_driver_not_loaded"),
    ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "nvml_version_mismatch"),
    ("NVML_ERROR_NO_PERMISSION", "nvml_no_permission"),
])
def test_nvml_that_cannot_start_is_a_reason_not_an_error(tmp_path: Path, error: str,
                                                        code: str) -> None:
    fake = FakeNvml([rtx4090()], init_error=getattr(FakeNvml, error))
    assert nvidia.probe(fake).notes == (code,)
    inv = detect(model_dirs=[], measure=False, sources=Sources(
        nvml=fake, sys_root=fake_sys_with_nvidia(tmp_path), engine_devices=lambda: []))
    assert inv.gpus == () and code in inv.notes


def test_no_nvidia_card_means_no_nvml_note(tmp_path: Path) -> None:
    (tmp_path / "bus" / "pci" / "devices").mkdir(parents=True)
    fake = FakeNvml(init_error=FakeNvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    inv = detect(model_dirs=[], measure=False,
                 sources=Sources(nvml=fake, sys_root=tmp_path, engine_devices=lambda: []))
    assert "nvml_unavailable" not in inv.notes


def test_a_gpu_lost_while_enumerating_leaves_the_others() -> None:
    fake = FakeNvml([rtx4090(), rtx3060(lost=True)])
    result = nvidia.probe(fake)
    assert [g.name for g in result.gpus] == ["NVIDIA GeForce RTX 4090"]
    assert result.notes == ("gpu_lost:1",)


def test_zero_free_is_flagged_and_the_engine_figure_used(tmp_path: Path) -> None:
    card = rtx4090(free=0)
    engine = [EngineDevice(0, "CUDA0", "NVIDIA GeForce RTX 4090", "gpu", 20 * GIB, 24 * GIB)]
    (alone,) = nvidia.probe(FakeNvml([card])).gpus
    assert alone.free_bytes == 0 and "zero_free_reported" in alone.notes
    inv = detect(model_dirs=[], measure=False, sources=Sources(
        nvml=FakeNvml([card]), sys_root=fake_sys_with_nvidia(tmp_path),
        engine_devices=lambda: engine))
    (gpu,) = inv.gpus
    assert gpu.free_bytes == 20 * GIB and "free_from_engine" in gpu.notes


def test_unknown_bus_width_falls_back_to_the_table_then_to_a_default() -> None:
    known = rtx3060(bus_width=None, pcie=None)
    unknown = FakeCard(name="NVIDIA Prototype X", total=16 * GIB, free=16 * GIB,
                       bus_width=None)
    a, b = nvidia.probe(FakeNvml([known, unknown])).gpus
    assert a.bandwidth_gbps == 360 and "bandwidth_nominal" in a.notes
    assert "pcie_unknown" in a.notes
    assert "bandwidth_unknown" in b.notes and b.tflops_fp16 == 0.0


def test_mig_instances_are_gpus_with_a_share_of_bandwidth() -> None:
    card = FakeCard(name="NVIDIA A100-SXM4-40GB", total=40 * GIB, free=39 * GIB,
                    bus_width=5120, mem_clock_mhz=1215,
                    mig=[("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 20 * GIB, 19 * GIB),
                         ("NVIDIA A100-SXM4-40GB MIG 2g.10gb", 10 * GIB, 10 * GIB)])
    result = nvidia.probe(FakeNvml([card]))
    big, small = result.gpus
    assert result.notes == ("mig_enabled:0",)
    assert (big.total_bytes, small.total_bytes) == (20 * GIB, 10 * GIB)
    assert big.bandwidth_gbps == pytest.approx(1555.2 / 2, abs=0.2)
    assert small.bandwidth_gbps == pytest.approx(1555.2 / 4, abs=0.2)
    assert all("mig_instance" in g.notes for g in result.gpus)


def test_gpu_with_a_cpu_only_engine_is_kept_and_explained(tmp_path: Path) -> None:
    cpu_only = [EngineDevice(0, "CPU", "Some CPU", "cpu", 64 * GIB, 64 * GIB)]
    inv = detect(model_dirs=[], measure=False, sources=Sources(
        nvml=FakeNvml([rtx4090()]), sys_root=fake_sys_with_nvidia(tmp_path),
        engine_devices=lambda: cpu_only))
    (gpu,) = inv.gpus
    assert "not_seen_by_engine" in gpu.notes and gpu.engine_device == ""
    assert "engine_has_no_gpu_backend" in inv.notes
    from loadout.commands.detect import describe

    text = describe(inv.to_json())
    assert "GPU 0: NVIDIA GeForce RTX 4090 (cuda)" in text
    assert "engine_has_no_gpu_backend: the engine was built for the CPU only" in text


def test_pynvml_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    assert nvidia.probe().notes == ("nvml_not_installed",)


def test_refresh_before_a_load_sees_a_gpu_that_disappeared(tmp_path: Path) -> None:
    from engine.hardware import refresh

    big, small = rtx4090(), rtx3060()
    fake = FakeNvml([big, small])
    sources = Sources(nvml=fake, sys_root=fake_sys_with_nvidia(tmp_path, 2),
                      engine_devices=lambda: cuda_devices(big, small))
    inv = detect(model_dirs=[], measure=False, sources=sources)
    assert [g.free_bytes for g in inv.gpus] == [23 * GIB, 11 * GIB]
    big.free = 10 * GIB          # another program took 13 GB
    small.lost = True            # and the 3060 fell off the bus
    later = refresh(inv, sources=Sources(nvml=fake, sys_root=sources.sys_root,
                                         engine_devices=lambda: cuda_devices(big)))
    assert [g.name for g in later.gpus] == [g.name for g in inv.gpus]  # places kept
    assert later.gpus[0].free_bytes == 10 * GIB
    assert later.gpus[1].free_bytes == 0 and "gpu_disappeared" in later.gpus[1].notes
    assert "gpu_disappeared:1" in later.notes
    assert later.host.bandwidth_gbps == inv.host.bandwidth_gbps  # nothing re-measured
