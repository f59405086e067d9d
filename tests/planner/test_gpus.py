"""The nominal GPU table and its name lookup (pure)."""

from __future__ import annotations

import json

import pytest

from planner.gpus import GIB, GPU_TABLE, lookup, nominal_gpu, pcie_gbps
from planner.inventory import Host, Inventory, Vendor

# Names as drivers report them (NVML, amdsmi/ROCm, Metal, Vulkan) -> the row they are.
DRIVER_NAMES = [
    ("NVIDIA GeForce RTX 4090", None, "rtx 4090"),
    ("NVIDIA GeForce RTX 3060", 12 * GIB, "rtx 3060 12gb"),
    ("NVIDIA GeForce RTX 3060", 8 * GIB, "rtx 3060 8gb"),
    ("NVIDIA GeForce RTX 4060 Ti", 16 * GIB, "rtx 4060 ti 16gb"),
    ("NVIDIA GeForce RTX 4060 Ti", 8 * GIB, "rtx 4060 ti 8gb"),
    ("NVIDIA GeForce RTX 4060 Laptop GPU", 8 * GIB, "rtx 4060 laptop"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", None, "rtx 4070 ti super"),
    ("NVIDIA GeForce RTX 5060 Ti", 16 * GIB, "rtx 5060 ti 16gb"),
    ("NVIDIA RTX A6000", None, "rtx a6000"),
    ("NVIDIA RTX 6000 Ada Generation", None, "rtx 6000 ada"),
    ("NVIDIA L40S", None, "l40s"),
    ("NVIDIA L4", None, "l4"),
    ("NVIDIA A100-SXM4-80GB", None, "a100 sxm 80gb"),
    ("NVIDIA A100-PCIE-40GB", None, "a100 pcie 40gb"),
    ("NVIDIA A100 80GB PCIe", None, "a100 pcie 80gb"),
    ("NVIDIA H100 80GB HBM3", None, "h100 sxm"),
    ("NVIDIA H100 PCIe", None, "h100 pcie"),
    ("NVIDIA H200", None, "h200"),
    ("NVIDIA H200 NVL", None, "h200 nvl"),
    ("AMD Radeon RX 7900 XTX", None, "rx 7900 xtx"),
    ("Radeon RX 7900 XT", None, "rx 7900 xt"),
    ("AMD Radeon RX 6800 XT", None, "rx 6800 xt"),
    ("AMD Instinct MI250X / MI250", None, "mi250x"),
    ("AMD Instinct MI300X", None, "mi300x"),
    ("AMD Radeon 8060S Graphics", None, "strix halo"),
    ("AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", None, "strix halo"),
    ("Intel(R) Arc(TM) A770 Graphics", None, "arc a770"),
    ("Intel(R) Arc(TM) B580 Graphics", None, "arc b580"),
    ("Apple M1", None, "m1"),
    ("Apple M2 Max", None, "m2 max"),
    ("Apple M3 Pro", None, "m3 pro"),
    ("Apple M4 Max", None, "m4 max"),
    ("Apple M2 Ultra", None, "m2 ultra"),
    ("4090", None, "rtx 4090"),
]


@pytest.mark.parametrize(("name", "total", "key"), DRIVER_NAMES)
def test_lookup_finds_the_row_a_driver_name_means(name: str, total: int | None,
                                                  key: str) -> None:
    spec = lookup(name, total)
    assert spec is not None and spec.key == key


@pytest.mark.parametrize("name", [
    "NVIDIA GeForce RTX 2080",        # not in the table
    "Tesla T4",
    "NVIDIA GeForce RTX 3050 Ti Laptop GPU",
    "AMD Radeon Graphics",            # a generic APU name says nothing
    "Apple M5 Max",
    "",
])
def test_lookup_says_none_rather_than_guess(name: str) -> None:
    assert lookup(name) is None


@pytest.mark.parametrize(("name", "not_key"), [
    ("NVIDIA GeForce RTX 4070 Ti", "rtx 4070"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "rtx 4090"),
    ("Apple M3 Max", "m3"),
    ("AMD Radeon RX 7900 GRE", "rx 7900 xt"),
    ("NVIDIA H100 NVL", "h100 sxm"),
])
def test_a_qualifier_in_the_name_is_never_dropped(name: str, not_key: str) -> None:
    spec = lookup(name)
    assert spec is not None and spec.key != not_key


def test_every_row_is_found_by_its_own_name() -> None:
    for spec in GPU_TABLE:
        assert lookup(spec.name, spec.vram_bytes or None) == spec, spec.key


def test_table_covers_the_common_gpus() -> None:
    wanted = [
        "RTX 3060 12GB", "RTX 3060 Ti", "RTX 3070", "RTX 3080", "RTX 3090", "RTX 4060",
        "RTX 4060 Ti 8GB", "RTX 4060 Ti 16GB", "RTX 4070", "RTX 4070 Ti Super", "RTX 4080",
        "RTX 4090", "RTX 5060 Ti 16GB", "RTX 5070", "RTX 5080", "RTX 5090", "RTX A4000",
        "RTX A5000", "RTX A6000", "L4", "L40S", "A100 PCIe 40GB", "A100 SXM4 80GB",
        "H100 PCIe", "H100 SXM", "H200", "RX 6800 XT", "RX 6900 XT", "RX 7800 XT",
        "RX 7900 XT", "RX 7900 XTX", "MI210", "MI250", "MI300X", "Arc A770", "Arc B580",
        "Strix Halo",
    ] + [f"Apple M{g}{tier}" for g in range(1, 5) for tier in ("", " Pro", " Max")] + [
        "Apple M1 Ultra", "Apple M2 Ultra", "Apple M3 Ultra"]
    missing = [name for name in wanted if lookup(name) is None]
    assert missing == []


def test_rows_are_consistent() -> None:
    keys = [s.key for s in GPU_TABLE]
    assert len(keys) == len(set(keys))
    for spec in GPU_TABLE:
        assert 50 <= spec.bandwidth_gbps <= 6000, spec.key
        assert 0 < spec.tflops_fp16 < 2000, spec.key
        assert spec.unified_memory == (spec.vram_bytes == 0), spec.key
        assert spec.unified_memory == (spec.vendor is Vendor.APPLE or spec.key == "strix halo")


def test_bigger_sibling_is_faster_or_larger() -> None:
    def bw(name: str) -> float:
        spec = lookup(name)
        assert spec is not None
        return spec.bandwidth_gbps

    assert bw("RTX 4090") > bw("RTX 4080") > bw("RTX 4070") > bw("RTX 4060")
    assert bw("RX 7900 XTX") > bw("RX 7900 XT") > bw("RX 7800 XT")
    assert bw("Apple M2 Ultra") > bw("Apple M2 Max") > bw("Apple M2 Pro") > bw("Apple M2")
    assert bw("H200") > bw("H100 SXM") > bw("H100 PCIe") > bw("A100 PCIe 40GB")


def test_pcie_link_bandwidth_by_generation_and_width() -> None:
    assert pcie_gbps(4, 16) == pytest.approx(31.5, abs=0.1)
    assert pcie_gbps(3, 8) == pytest.approx(7.88, abs=0.01)
    assert pcie_gbps(5, 16) == pytest.approx(2 * pcie_gbps(4, 16), rel=0.01)
    assert pcie_gbps(9, 16) == 0.0


def test_nominal_gpu_makes_a_rig_file_gpu() -> None:
    gpu = nominal_gpu("RTX 3090", index=1)
    assert gpu is not None
    assert gpu.total_bytes == gpu.free_bytes == 24 * GIB
    assert gpu.measured == () and "nominal_figures" in gpu.notes
    host = Host(cpu="x", cores=8, threads=16, ram_total_bytes=64 * GIB,
                ram_available_bytes=60 * GIB, bandwidth_gbps=60.0)
    inv = Inventory(gpus=(gpu,), host=host)
    again = Inventory.from_json(json.loads(json.dumps(inv.to_json())))
    assert again == inv
    mac = nominal_gpu("Apple M4 Max", total_bytes=96 * GIB)
    assert mac is not None and mac.unified_memory and mac.total_bytes == 96 * GIB
    assert nominal_gpu("GeForce 256") is None


def test_a_hand_written_rig_gpu_gets_the_table_figures() -> None:
    from planner.gpus import complete_rig_gpu

    doc = {"name": "RTX 3090", "total_bytes": 24 * GIB}
    full = complete_rig_gpu(doc)
    spec = lookup("RTX 3090", 24 * GIB)
    assert spec is not None and doc == {"name": "RTX 3090", "total_bytes": 24 * GIB}
    assert full["bandwidth_gbps"] == spec.bandwidth_gbps > 0
    assert full["tflops_fp16"] == spec.tflops_fp16 > 0
    assert full["pcie_gbps"] == spec.pcie_gbps and full["vendor"] == "nvidia"
    assert full["backend"] == "cuda" and "nominal_figures" in full["notes"]
    rig = {"gpus": [full], "host": {"cpu": "x", "cores": 8, "threads": 16,
                                    "ram_total_bytes": 64 * GIB,
                                    "ram_available_bytes": 60 * GIB, "bandwidth_gbps": 50.0},
           "disks": []}
    (gpu,) = Inventory.from_json(rig).gpus
    assert gpu.bandwidth_gbps == spec.bandwidth_gbps and gpu.tflops_fp16 == spec.tflops_fp16
    given = complete_rig_gpu({**doc, "bandwidth_gbps": 123.0})
    assert given["bandwidth_gbps"] == 123.0 and given["tflops_fp16"] == spec.tflops_fp16
    unknown = {"name": "Frobnicator 9000", "total_bytes": GIB}
    assert complete_rig_gpu(unknown) == unknown
