"""AMD GPUs: through ``amdsmi`` when it is installed, else the amdgpu driver's sysfs files.

Devices are returned in ROCm/HIP order (PCI bus order), filtered by
``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES`` when those hold plain indices.
APUs (Strix Halo and other integrated Radeons) are unified-memory devices: what the GPU
can use is its carve-out plus the GTT share of system RAM.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.hardware.probe import ProbeResult, choose_bandwidth
from engine.hardware.sysfs import AMD_PCI_VENDOR, pci_displays, read_int, read_text
from planner.gpus import GIB, lookup, pcie_gbps
from planner.inventory import Backend, Gpu, Vendor

log = logging.getLogger(__name__)

# PCI device id -> marketing name; Navi 31/21 boards are told apart by VRAM size.
_DEVICE_NAMES: dict[int, str | dict[int, str]] = {
    0x744C: {24: "Radeon RX 7900 XTX", 20: "Radeon RX 7900 XT", 16: "Radeon RX 7900 GRE"},
    0x73BF: "Radeon RX 6800 XT", 0x73AF: "Radeon RX 6900 XT", 0x73A5: "Radeon RX 6950 XT",
    0x747E: "Radeon RX 7800 XT", 0x7550: "Radeon RX 9070 XT", 0x740F: "Instinct MI210",
    0x740C: "Instinct MI250X / MI250", 0x7408: "Instinct MI250X", 0x74A1: "Instinct MI300X",
    0x1586: "Radeon 8060S (Strix Halo)",
}
# Integrated Radeons: Strix Halo, Strix Point, Phoenix, Rembrandt, Raphael.
_APU_DEVICES = frozenset({0x1586, 0x150E, 0x15BF, 0x15C8, 0x1681, 0x164E})
_LINK_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def load_amdsmi() -> Any | None:
    """The ``amdsmi`` module, or ``None`` when it is not installed or fails to import."""
    try:
        import amdsmi
    except Exception as exc:  # ImportError, or a ROCm library that fails to load
        log.debug("amdsmi not importable: %s", exc)
        return None
    return amdsmi


def probe(amdsmi: Any | None = None, sys_root: Path = Path("/sys"),
          env: Mapping[str, str] | None = None, ram_available: int | None = None) -> ProbeResult:
    """Every AMD GPU, in HIP order.

    Args:
        amdsmi: the ``amdsmi`` module or a stand-in; sysfs is read when it is ``None``
            and the module is not installed, or when it fails.
        sys_root: where sysfs is mounted (a fake tree in tests).
        env: the environment (for ``HIP_VISIBLE_DEVICES``); ``os.environ`` by default.
        ram_available: host RAM available, to cap what an APU may still take.
    """
    import os

    env = os.environ if env is None else env
    module = amdsmi if amdsmi is not None else load_amdsmi()
    result = _probe_amdsmi(module) if module is not None else None
    if result is None:
        result = _probe_sysfs(sys_root)
    gpus = sorted(result.gpus, key=lambda g: g.pci_bus_id)
    gpus = _visible(gpus, env)
    gpus = [_cap_unified(g, ram_available) for g in gpus]
    return ProbeResult(gpus=tuple(replace(g, index=i) for i, g in enumerate(gpus)),
                       notes=result.notes)


def _visible(gpus: list[Gpu], env: Mapping[str, str]) -> list[Gpu]:
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        value = env.get(var)
        if value is None:
            continue
        picks = [p.strip() for p in value.split(",") if p.strip()]
        if all(p.isdigit() for p in picks):
            return [gpus[int(p)] for p in picks if int(p) < len(gpus)]
    return gpus


def _cap_unified(gpu: Gpu, ram_available: int | None) -> Gpu:
    if not gpu.unified_memory or ram_available is None or gpu.free_bytes <= ram_available:
        return gpu
    return replace(gpu, free_bytes=ram_available, notes=(*gpu.notes, "free_capped_by_host_ram"))


def _name_for(device_id: int, vram_bytes: int) -> str:
    entry = _DEVICE_NAMES.get(device_id)
    if isinstance(entry, dict):
        return entry.get(round(vram_bytes / GIB), next(iter(entry.values())))
    return entry or f"AMD GPU 0x{device_id:04x}"


def _make_gpu(*, name: str, device_id: int, bus_id: str, vram_total: int, vram_used: int,
              gtt_total: int, gtt_used: int, driver_bandwidth: float, link: float,
              notes: list[str]) -> Gpu:
    apu = device_id in _APU_DEVICES or (0 < vram_total <= GIB and gtt_total > vram_total)
    total = vram_total + gtt_total if apu else vram_total
    used = vram_used + gtt_used if apu else vram_used
    spec = lookup(name, None if apu else total)
    bandwidth = choose_bandwidth(driver_bandwidth, spec, notes)
    if not link:
        link = spec.pcie_gbps if spec else 16.0
        if not apu:
            notes.append("pcie_unknown")
    free = max(0, total - used)
    if total and free == 0:
        notes.append("zero_free_reported")
    if apu:
        notes.append("unified_memory_gtt")
    return Gpu(index=0, name=name, vendor=Vendor.AMD, backend=Backend.ROCM, total_bytes=total,
               free_bytes=free, bandwidth_gbps=bandwidth, pcie_gbps=link,
               tflops_fp16=spec.tflops_fp16 if spec else 0.0, unified_memory=apu,
               measured=("total_bytes", "free_bytes"), notes=tuple(notes), pci_bus_id=bus_id)


def _probe_sysfs(sys_root: Path) -> ProbeResult:
    gpus: list[Gpu] = []
    notes: list[str] = []
    seen: set[str] = set()
    drm = sys_root / "class" / "drm"
    try:
        cards = sorted((p for p in drm.iterdir() if re.fullmatch(r"card\d+", p.name)),
                       key=lambda p: int(p.name[4:]))
    except OSError:
        cards = []
    for card in cards:
        dev = (card / "device").resolve()
        if read_int(dev / "vendor", 0) != AMD_PCI_VENDOR or dev.name in seen:
            continue
        seen.add(dev.name)
        vram_total = read_int(dev / "mem_info_vram_total")
        if vram_total is None:
            notes.append(f"amdgpu_memory_unreadable:{dev.name}")
            continue
        device_id = read_int(dev / "device", 0) or 0
        name = read_text(dev / "product_name") or _name_for(device_id, vram_total)
        gpus.append(_make_gpu(
            name=name, device_id=device_id, bus_id=dev.name.lower(), vram_total=vram_total,
            vram_used=read_int(dev / "mem_info_vram_used") or 0,
            gtt_total=read_int(dev / "mem_info_gtt_total") or 0,
            gtt_used=read_int(dev / "mem_info_gtt_used") or 0, driver_bandwidth=0.0,
            link=_sysfs_link(dev), notes=[]))
    for pci in pci_displays(sys_root):
        if pci.vendor == AMD_PCI_VENDOR and pci.bus_id not in seen and not pci.driver:
            notes.append(f"amdgpu_driver_not_loaded:{pci.bus_id}")
    return ProbeResult(gpus=tuple(gpus), notes=tuple(notes))


def _sysfs_link(dev: Path) -> float:
    speed = read_text(dev / "max_link_speed") or ""
    width = read_int(dev / "max_link_width") or 0
    match = re.match(r"([\d.]+)\s*GT/s", speed)
    gen = _LINK_GEN.get(float(match.group(1)), 0) if match else 0
    return pcie_gbps(gen, width)


def _probe_amdsmi(smi: Any) -> ProbeResult | None:
    """GPUs through amdsmi; ``None`` when it cannot start (then sysfs is read)."""
    try:
        smi.amdsmi_init()
    except Exception as exc:  # amdsmi raises its own AmdSmiException and OSErrors
        log.info("amdsmi init failed, reading sysfs: %s", exc)
        return None
    gpus: list[Gpu] = []
    notes: list[str] = []
    try:
        for i, handle in enumerate(smi.amdsmi_get_processor_handles()):
            try:
                gpus.append(_amdsmi_device(smi, handle))
            except Exception as exc:  # one broken device must not hide the others
                log.warning("AMD GPU %d skipped: %s", i, exc)
                notes.append(f"amdsmi_device_error:{i}")
    except Exception as exc:
        log.info("amdsmi enumeration failed, reading sysfs: %s", exc)
        return None
    finally:
        try:
            smi.amdsmi_shut_down()
        except Exception:
            log.debug("amdsmi shut down failed", exc_info=True)
    return ProbeResult(gpus=tuple(gpus), notes=tuple(notes))


def _smi(smi: Any, fn: str, *args: Any) -> Any:
    try:
        return getattr(smi, fn)(*args)
    except Exception as exc:
        log.debug("amdsmi %s failed: %s", fn, exc)
        return None


def _amdsmi_device(smi: Any, handle: Any) -> Gpu:
    mem_types = smi.AmdSmiMemoryType
    asic = _smi(smi, "amdsmi_get_gpu_asic_info", handle) or {}
    device_id = _as_int(asic.get("device_id", 0))
    vram_total = int(smi.amdsmi_get_gpu_memory_total(handle, mem_types.VRAM))
    vram_used = int(_smi(smi, "amdsmi_get_gpu_memory_usage", handle, mem_types.VRAM) or 0)
    gtt_total = int(_smi(smi, "amdsmi_get_gpu_memory_total", handle, mem_types.GTT) or 0)
    gtt_used = int(_smi(smi, "amdsmi_get_gpu_memory_usage", handle, mem_types.GTT) or 0)
    vram = _smi(smi, "amdsmi_get_gpu_vram_info", handle) or {}
    pcie = (_smi(smi, "amdsmi_get_pcie_info", handle) or {}).get("pcie_static", {})
    speed = _as_int(pcie.get("max_pcie_speed", 0))  # MT/s per lane
    gen = _LINK_GEN.get(speed / 1000, 0) if speed else 0
    name = str(asic.get("market_name") or "") or _name_for(device_id, vram_total)
    return _make_gpu(
        name=name, device_id=device_id,
        bus_id=str(_smi(smi, "amdsmi_get_gpu_device_bdf", handle) or "").lower(),
        vram_total=vram_total, vram_used=vram_used, gtt_total=gtt_total, gtt_used=gtt_used,
        driver_bandwidth=float(_as_int(vram.get("vram_max_bandwidth", 0))),
        link=pcie_gbps(gen, _as_int(pcie.get("max_pcie_width", 0))), notes=[])


def _as_int(value: Any) -> int:
    try:
        return int(value, 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        return 0
