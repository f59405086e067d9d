"""NVIDIA GPUs through NVML (the ``pynvml`` module of ``nvidia-ml-py``).

The module is imported lazily and every call is guarded: a missing driver, an NVML that
does not match the kernel module, a GPU that falls off the bus or a field the driver
does not report each becomes a reason code, never an exception.
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import Any

from engine.hardware.probe import ProbeResult, choose_bandwidth
from planner.gpus import lookup, pcie_gbps
from planner.inventory import Backend, Gpu, Vendor

log = logging.getLogger(__name__)

# NVML error constant name -> the reason code detection reports for it.
_INIT_REASONS: tuple[tuple[str, str], ...] = (
    ("NVML_ERROR_LIBRARY_NOT_FOUND", "nvml_unavailable"),
    ("NVML_ERROR_DRIVER_NOT_LOADED", "nvidia_driver_not_loaded"),
    ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "nvml_version_mismatch"),
    ("NVML_ERROR_NO_PERMISSION", "nvml_no_permission"),
    ("NVML_ERROR_FUNCTION_NOT_FOUND", "nvml_too_old"),
)


def load_nvml() -> Any | None:
    """The ``pynvml`` module, or ``None`` when it is not installed or fails to import."""
    try:
        import pynvml
    except Exception as exc:  # a broken install must not stop detection
        log.info("pynvml not importable: %s", exc)
        return None
    return pynvml


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _reason(nvml: Any, exc: BaseException) -> str:
    value = getattr(exc, "value", None)
    for constant, code in _INIT_REASONS:
        if value is not None and value == getattr(nvml, constant, object()):
            return code
    return "nvml_error"


def _try(nvml: Any, fn: str, *args: Any) -> Any:
    """Call ``nvml.fn(*args)``; ``None`` when NVML lacks it or reports an error."""
    func = getattr(nvml, fn, None)
    if func is None:
        return None
    try:
        return func(*args)
    except nvml.NVMLError as exc:
        if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_GPU_IS_LOST", object()):
            raise
        log.debug("NVML %s failed: %s", fn, exc)
        return None


def probe(nvml: Any | None = None) -> ProbeResult:
    """Every NVIDIA GPU NVML reports, in NVML (PCI bus) order, MIG instances expanded.

    Args:
        nvml: the ``pynvml`` module or a stand-in with its API; imported when ``None``.

    Returns:
        The GPUs (``backend`` CUDA, ``index`` in NVML order) and reason codes such as
        ``nvml_not_installed``, ``nvml_unavailable``, ``nvml_version_mismatch``,
        ``gpu_lost:N``.
    """
    if nvml is None:
        nvml = load_nvml()
        if nvml is None:
            return ProbeResult(notes=("nvml_not_installed",))
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        log.info("NVML init failed: %s", exc)
        return ProbeResult(notes=(_reason(nvml, exc),))
    except OSError as exc:
        log.info("NVML library failed to load: %s", exc)
        return ProbeResult(notes=("nvml_unavailable",))
    try:
        return _probe_devices(nvml)
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def _probe_devices(nvml: Any) -> ProbeResult:
    gpus: list[Gpu] = []
    notes: list[str] = []
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError as exc:
        return ProbeResult(notes=(_reason(nvml, exc),))
    lost = getattr(nvml, "NVML_ERROR_GPU_IS_LOST", object())
    for i in range(count):
        try:
            found = _device(nvml, i)
        except nvml.NVMLError as exc:
            code = "gpu_lost" if getattr(exc, "value", None) == lost else "nvml_device_error"
            log.warning("NVIDIA GPU %d skipped (%s): %s", i, code, exc)
            notes.append(f"{code}:{i}")
            continue
        if len(found) > 1:
            notes.append(f"mig_enabled:{i}")
        gpus.extend(found)
    return ProbeResult(gpus=tuple(gpus), notes=tuple(notes))


def _device(nvml: Any, i: int) -> list[Gpu]:
    handle = nvml.nvmlDeviceGetHandleByIndex(i)
    name = _text(nvml.nvmlDeviceGetName(handle))
    mem = nvml.nvmlDeviceGetMemoryInfo(handle)
    total, free = int(mem.total), int(mem.free)
    notes: list[str] = []
    spec = lookup(name, total)
    bandwidth = choose_bandwidth(_peak_bandwidth(nvml, handle), spec, notes)
    link = _link_bandwidth(nvml, handle)
    if not link:
        link = spec.pcie_gbps if spec else 16.0
        notes.append("pcie_unknown")
    if total and free == 0:
        notes.append("zero_free_reported")
    pci = _try(nvml, "nvmlDeviceGetPciInfo", handle)
    gpu = Gpu(
        index=i, name=name, vendor=Vendor.NVIDIA, backend=Backend.CUDA,
        total_bytes=total, free_bytes=min(free, total), bandwidth_gbps=bandwidth,
        pcie_gbps=link, tflops_fp16=spec.tflops_fp16 if spec else 0.0,
        drives_display=_drives_display(nvml, handle), measured=("total_bytes", "free_bytes"),
        notes=tuple(notes), pci_bus_id=_text(pci.busId).lower() if pci is not None else "",
        other_process_bytes=_other_processes(nvml, handle),
    )
    mode = _try(nvml, "nvmlDeviceGetMigMode", handle)
    if mode is not None and int(mode[0]) == int(getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)):
        instances = _mig_instances(nvml, handle, gpu)
        if instances:
            return instances
    return [gpu]


def _peak_bandwidth(nvml: Any, handle: Any) -> float:
    """Bus width x maximum memory clock x 2 (double data rate), in GB/s; 0.0 if unknown."""
    width = _try(nvml, "nvmlDeviceGetMemoryBusWidth", handle)
    clock = _try(nvml, "nvmlDeviceGetMaxClockInfo", handle,
                 getattr(nvml, "NVML_CLOCK_MEM", 2))
    if not width or not clock:
        return 0.0
    return round(int(width) / 8 * int(clock) * 1e6 * 2 / 1e9, 1)


def _link_bandwidth(nvml: Any, handle: Any) -> float:
    # The link's maximum, not its current state: an idle GPU drops to PCIe gen 1.
    gen = _try(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle)
    width = _try(nvml, "nvmlDeviceGetMaxPcieLinkWidth", handle)
    return pcie_gbps(int(gen), int(width)) if gen and width else 0.0


def _drives_display(nvml: Any, handle: Any) -> bool:
    enabled = int(getattr(nvml, "NVML_FEATURE_ENABLED", 1))
    active = _try(nvml, "nvmlDeviceGetDisplayActive", handle)
    mode = _try(nvml, "nvmlDeviceGetDisplayMode", handle)
    return (active is not None and int(active) == enabled) or (
        mode is not None and int(mode) == enabled)


def _other_processes(nvml: Any, handle: Any) -> int:
    """VRAM held by processes other than this one (0 where the driver hides it)."""
    used: dict[int, int] = {}
    for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        for proc in _try(nvml, fn, handle) or ():
            amount = getattr(proc, "usedGpuMemory", None)
            if proc.pid != os.getpid() and isinstance(amount, int):
                used[int(proc.pid)] = max(used.get(int(proc.pid), 0), amount)
    return sum(used.values())


def _mig_instances(nvml: Any, handle: Any, parent: Gpu) -> list[Gpu]:
    """MIG instances as GPUs: their own memory, a share of the parent's bandwidth."""
    found: list[Gpu] = []
    slots = _try(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    for j in range(int(slots)):
        mig = _try(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, j)
        if mig is None:
            continue
        mem = _try(nvml, "nvmlDeviceGetMemoryInfo", mig)
        if mem is None:
            continue
        share = int(mem.total) / parent.total_bytes if parent.total_bytes else 0.0
        name = _try(nvml, "nvmlDeviceGetName", mig)
        found.append(Gpu(
            index=parent.index, name=_text(name) if name else f"{parent.name} MIG {j}",
            vendor=parent.vendor, backend=parent.backend, total_bytes=int(mem.total),
            free_bytes=min(int(mem.free), int(mem.total)),
            bandwidth_gbps=max(0.001, round(parent.bandwidth_gbps * share, 1)),
            pcie_gbps=parent.pcie_gbps, tflops_fp16=round(parent.tflops_fp16 * share, 1),
            measured=parent.measured, notes=(*parent.notes, "mig_instance"),
            pci_bus_id=parent.pci_bus_id,
        ))
    return found
