"""AMD detection over a fake sysfs tree (the amdgpu driver's files) and a stand-in amdsmi."""

from __future__ import annotations

import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.ggml_devices import EngineDevice
from engine.hardware import Sources, amd, detect
from planner.inventory import Backend, Inventory, Vendor

GIB = 2**30
MIB = 2**20


@dataclass
class FakeRadeon:
    bus_id: str
    device: int
    vram_total: int
    vram_used: int = 512 * MIB
    gtt_total: int = 16 * GIB
    gtt_used: int = 50 * MIB
    link: tuple[str, int] = ("16.0 GT/s PCIe", 16)
    card: int = 0
    product_name: str | None = None
    driver: bool = True


def fake_sysfs(root: Path, cards: list[FakeRadeon]) -> Path:
    """Lay out ``/sys/bus/pci/devices`` and ``/sys/class/drm`` as amdgpu does."""
    pci = root / "bus" / "pci" / "devices"
    drm = root / "class" / "drm"
    drivers = root / "bus" / "pci" / "drivers" / "amdgpu"
    for d in (pci, drm, drivers):
        d.mkdir(parents=True, exist_ok=True)
    for c in cards:
        dev = pci / c.bus_id
        dev.mkdir()
        files = {"class": "0x030000", "vendor": "0x1002", "device": f"0x{c.device:04x}"}
        if c.driver:
            files.update({
                "mem_info_vram_total": str(c.vram_total), "mem_info_vram_used": str(c.vram_used),
                "mem_info_gtt_total": str(c.gtt_total), "mem_info_gtt_used": str(c.gtt_used),
                "max_link_speed": c.link[0], "max_link_width": str(c.link[1]),
                "current_link_speed": "2.5 GT/s PCIe", "current_link_width": "16",
            })
            if c.product_name:
                files["product_name"] = c.product_name
            (dev / "driver").symlink_to(drivers)
            for node in (f"card{c.card}", f"renderD{128 + c.card}", f"card{c.card}-DP-1"):
                (dev / "drm" / node).mkdir(parents=True)
                (dev / "drm" / node / "device").symlink_to(dev)
                (drm / node).symlink_to(dev / "drm" / node)
        for name, text in files.items():
            (dev / name).write_text(text + "\n")
    return root


def xtx(bus_id: str, card: int, **kw: Any) -> FakeRadeon:
    return FakeRadeon(bus_id=bus_id, device=0x744C, vram_total=24 * GIB, card=card, **kw)


def test_two_7900_xtx_in_hip_order(tmp_path: Path) -> None:
    # card numbers need not follow the bus; HIP numbers devices in PCI bus order
    root = fake_sysfs(tmp_path, [xtx("0000:83:00.0", 0, vram_used=4 * GIB),
                                 xtx("0000:03:00.0", 1, link=("8.0 GT/s PCIe", 8))])
    result = amd.probe(sys_root=root, env={}, ram_available=30 * GIB)
    first, second = result.gpus
    assert (first.index, first.pci_bus_id) == (0, "0000:03:00.0")
    assert second.pci_bus_id == "0000:83:00.0"
    assert first.name == second.name == "Radeon RX 7900 XTX"
    assert first.bandwidth_gbps == 960 and "bandwidth_nominal" in first.notes
    assert first.pcie_gbps == pytest.approx(7.88, abs=0.01)      # gen3 x8
    assert second.pcie_gbps == pytest.approx(31.5, abs=0.1)      # gen4 x16
    assert second.free_bytes == 20 * GIB                          # 24 - 4 used
    assert first.free_bytes == 24 * GIB - 512 * MIB
    assert all(g.backend is Backend.ROCM and not g.unified_memory for g in result.gpus)
    assert result.notes == ()


def test_hip_visible_devices_picks_and_renumbers(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [xtx("0000:03:00.0", 0),
                                 FakeRadeon("0000:04:00.0", 0x744C, 20 * GIB, card=1)])
    (gpu,) = amd.probe(sys_root=root, env={"HIP_VISIBLE_DEVICES": "1"}).gpus
    assert (gpu.index, gpu.name) == (0, "Radeon RX 7900 XT")  # told apart by its 20 GB


def test_strix_halo_is_unified_memory_capped_by_host_ram(tmp_path: Path) -> None:
    apu = FakeRadeon("0000:c5:00.0", 0x1586, vram_total=512 * MIB, vram_used=100 * MIB,
                     gtt_total=64 * GIB, gtt_used=1 * GIB)
    root = fake_sysfs(tmp_path, [apu])
    (roomy,) = amd.probe(sys_root=root, env={}, ram_available=100 * GIB).gpus
    assert roomy.unified_memory and roomy.total_bytes == 64 * GIB + 512 * MIB
    assert roomy.free_bytes == 64 * GIB + 512 * MIB - 100 * MIB - 1 * GIB
    assert roomy.bandwidth_gbps == 256 and "unified_memory_gtt" in roomy.notes
    (tight,) = amd.probe(sys_root=root, env={}, ram_available=20 * GIB).gpus
    assert tight.free_bytes == 20 * GIB and "free_capped_by_host_ram" in tight.notes


def test_a_radeon_without_its_driver_is_explained(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [xtx("0000:03:00.0", 0, driver=False)])
    result = amd.probe(sys_root=root, env={})
    assert result.gpus == ()
    assert result.notes == ("amdgpu_driver_not_loaded:0000:03:00.0",)


def test_unknown_radeon_gets_a_default_and_says_so(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [FakeRadeon("0000:03:00.0", 0x9999, 8 * GIB,
                                            product_name="Radeon Future 1")])
    (gpu,) = amd.probe(sys_root=root, env={}).gpus
    assert gpu.name == "Radeon Future 1" and "bandwidth_unknown" in gpu.notes


class FakeAmdSmi:
    """A module-like stand-in for ``amdsmi`` (the calls detection makes)."""

    AmdSmiMemoryType = types.SimpleNamespace(VRAM=0, GTT=2)

    def __init__(self, boards: list[dict[str, Any]], init_fails: bool = False) -> None:
        self.boards = boards
        self.init_fails = init_fails
        self.closed = False

    def amdsmi_init(self) -> None:
        if self.init_fails:
            raise RuntimeError("AMDSMI_STATUS_DRIVER_NOT_LOADED")

    def amdsmi_shut_down(self) -> None:
        self.closed = True

    def amdsmi_get_processor_handles(self) -> list[dict[str, Any]]:
        return self.boards

    def amdsmi_get_gpu_asic_info(self, h: dict[str, Any]) -> dict[str, Any]:
        return {"market_name": h["name"], "device_id": h["device_id"]}

    def amdsmi_get_gpu_memory_total(self, h: dict[str, Any], kind: int) -> int:
        return int(h["vram"] if kind == 0 else h.get("gtt", 0))

    def amdsmi_get_gpu_memory_usage(self, h: dict[str, Any], kind: int) -> int:
        return int(h["used"] if kind == 0 else 0)

    def amdsmi_get_gpu_vram_info(self, h: dict[str, Any]) -> dict[str, Any]:
        if "bw" not in h:
            raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")
        return {"vram_type": "HBM3", "vram_bit_width": 8192, "vram_max_bandwidth": h["bw"]}

    def amdsmi_get_pcie_info(self, h: dict[str, Any]) -> dict[str, Any]:
        return {"pcie_static": {"max_pcie_width": 16, "max_pcie_speed": 32000}}

    def amdsmi_get_gpu_device_bdf(self, h: dict[str, Any]) -> str:
        return str(h["bdf"])


def test_amdsmi_reports_driver_bandwidth_and_links() -> None:
    smi = FakeAmdSmi([
        {"name": "AMD Instinct MI300X", "device_id": 0x74A1, "vram": 192 * GIB,
         "used": 1 * GIB, "bw": 5300, "bdf": "0000:1B:00.0"},
        {"name": "AMD Instinct MI300X", "device_id": 0x74A1, "vram": 192 * GIB,
         "used": 0, "bdf": "0000:0C:00.0"},
    ])
    result = amd.probe(smi, sys_root=Path("/nonexistent"), env={})
    first, second = result.gpus
    assert smi.closed
    assert first.pci_bus_id == "0000:0c:00.0"  # bus order, lower-cased
    assert "bandwidth_nominal" in first.notes and first.bandwidth_gbps == 5300
    assert "bandwidth_driver_peak" in second.notes
    assert first.pcie_gbps == pytest.approx(63.0, abs=0.1)  # gen5 x16
    assert second.free_bytes == 191 * GIB and second.tflops_fp16 > 1000


def test_amdsmi_failing_to_start_falls_back_to_sysfs(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [xtx("0000:03:00.0", 0)])
    result = amd.probe(FakeAmdSmi([], init_fails=True), sys_root=root, env={})
    assert [g.name for g in result.gpus] == ["Radeon RX 7900 XTX"]


def test_detect_two_xtx_with_a_rocm_engine(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [xtx("0000:03:00.0", 0), xtx("0000:04:00.0", 1)])
    engine = [EngineDevice(0, "ROCm0", "AMD Radeon RX 7900 XTX", "gpu", 23 * GIB, 24 * GIB),
              EngineDevice(1, "ROCm1", "AMD Radeon RX 7900 XTX", "gpu", 23 * GIB, 24 * GIB),
              EngineDevice(2, "Vulkan0", "AMD Radeon RX 7900 XTX (RADV NAVI31)", "gpu",
                           23 * GIB, 24 * GIB)]
    inv = detect(model_dirs=[], measure=False,
                 sources=Sources(sys_root=root, engine_devices=lambda: engine, env={}))
    assert [(g.engine_device, g.vendor) for g in inv.gpus] == [("ROCm0", Vendor.AMD),
                                                               ("ROCm1", Vendor.AMD)]
    assert "duplicate_engine_device:Vulkan0" in inv.notes
    assert Inventory.from_json(inv.to_json()) == inv
