"""Cross-check the vendor probes against the devices the llama.cpp engine itself sees.

The engine's list is the truth for what a load can use: its order is the order of
``tensor_split`` and ``main_gpu``. So the merged GPU list follows the engine's order, each
GPU carries the engine's name for it (``CUDA0``, ``ROCm1``, ``Vulkan0``, ``MTL0``), and
GPUs only the engine sees (Intel, Apple, any Vulkan-only device) are added from it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from engine.ggml_devices import EngineDevice
from engine.hardware.probe import UNKNOWN_GPU_BANDWIDTH_GBPS, ProbeResult
from planner.gpus import lookup
from planner.inventory import Backend, Gpu, Vendor

log = logging.getLogger(__name__)

_BACKENDS: tuple[tuple[str, Backend], ...] = (
    ("CUDA", Backend.CUDA), ("ROCm", Backend.ROCM), ("HIP", Backend.ROCM),
    ("Vulkan", Backend.VULKAN), ("MTL", Backend.METAL), ("Metal", Backend.METAL),
    ("SYCL", Backend.SYCL), ("RPC", Backend.RPC),
)
_NATIVE = {Vendor.NVIDIA: Backend.CUDA, Vendor.AMD: Backend.ROCM, Vendor.APPLE: Backend.METAL}


def backend_of(device_name: str) -> Backend | None:
    """The backend of an engine device from its name (``CUDA0`` -> CUDA), or ``None``."""
    for prefix, backend in _BACKENDS:
        if device_name.lower().startswith(prefix.lower()):
            return backend
    return None


def vendor_of(description: str) -> Vendor:
    """Guess a vendor from an engine device description."""
    text = description.lower()
    for words, vendor in ((("nvidia", "geforce", "quadro", "tesla", "rtx"), Vendor.NVIDIA),
                          (("amd", "radeon", "instinct", "gfx"), Vendor.AMD),
                          (("intel", "arc", "iris", "uhd"), Vendor.INTEL),
                          (("apple",), Vendor.APPLE)):
        if any(w in text for w in words):
            return vendor
    return Vendor.OTHER


def _same_gpu(gpu: Gpu, dev: EngineDevice) -> bool:
    # Names differ in decoration ("NVIDIA GeForce RTX 4090" vs "RTX 4090"), so compare
    # table rows when both are known, then memory size within 10 %.
    a, b = lookup(gpu.name, gpu.total_bytes), lookup(dev.description, dev.total_bytes)
    if a is not None and b is not None and a.key != b.key:
        return False
    if a is None or b is None:
        name_a, name_b = gpu.name.lower(), dev.description.lower()
        if name_a not in name_b and name_b not in name_a:
            return False
    if gpu.unified_memory or not gpu.total_bytes or not dev.total_bytes:
        return True
    return abs(gpu.total_bytes - dev.total_bytes) <= 0.1 * gpu.total_bytes


# Vulkan drivers that run on the CPU (Vulkan device type CPU): Mesa's lavapipe names its
# device after llvmpipe, Google's SwiftShader after itself. ggml lists them only when
# GGML_VK_VISIBLE_DEVICES names them, and reports them as GPUs.
_SOFTWARE = ("llvmpipe", "lavapipe", "swiftshader")


def is_software_device(description: str) -> bool:
    """Whether an engine device is a software rasterizer computing on the host's CPU."""
    text = description.lower()
    return any(name in text for name in _SOFTWARE)


def _from_engine(dev: EngineDevice, backend: Backend) -> Gpu:
    vendor = vendor_of(dev.description)
    unified = dev.kind == "igpu" or vendor is Vendor.APPLE
    spec = lookup(dev.description, None if unified else dev.total_bytes)
    notes = ["seen_by_engine_only", "bandwidth_nominal" if spec else "bandwidth_unknown"]
    software = is_software_device(dev.description)
    if software:
        notes.append("software_device")
    if dev.total_bytes and dev.free_bytes == 0:
        notes.append("zero_free_reported")
    return Gpu(index=0, name=dev.description or dev.name, vendor=vendor, backend=backend,
               total_bytes=dev.total_bytes, free_bytes=min(dev.free_bytes, dev.total_bytes),
               bandwidth_gbps=spec.bandwidth_gbps if spec else UNKNOWN_GPU_BANDWIDTH_GBPS,
               pcie_gbps=spec.pcie_gbps if spec and spec.pcie_gbps else 16.0,
               tflops_fp16=spec.tflops_fp16 if spec else 0.0, unified_memory=unified,
               measured=("total_bytes", "free_bytes"), notes=tuple(notes),
               engine_device=dev.name, max_tensor_bytes=dev.max_tensor_bytes,
               software=software)


def _adopt(gpu: Gpu, dev: EngineDevice, backend: Backend) -> Gpu:
    notes = list(gpu.notes)
    free = gpu.free_bytes
    if gpu.vendor is Vendor.APPLE and dev.total_bytes:
        # Metal reports the GPU's working-set limit itself: better than our estimate.
        notes = [n for n in notes if n != "gpu_share_estimated"]
        return replace(gpu, backend=backend, engine_device=dev.name,
                       max_tensor_bytes=dev.max_tensor_bytes, total_bytes=dev.total_bytes,
                       free_bytes=min(dev.free_bytes, dev.total_bytes),
                       measured=("total_bytes", "free_bytes"), notes=tuple(notes))
    if free == 0 and dev.free_bytes > 0:
        free = min(dev.free_bytes, gpu.total_bytes or dev.free_bytes)
        notes.append("free_from_engine")
    if backend is not _NATIVE.get(gpu.vendor, backend):
        notes.append(f"engine_backend_{backend.value}")
    return replace(gpu, backend=backend, engine_device=dev.name, free_bytes=free,
                   notes=tuple(notes), max_tensor_bytes=dev.max_tensor_bytes)


def cross_check(found: Sequence[Gpu], devices: Sequence[EngineDevice]) -> ProbeResult:
    """Merge vendor-probed GPUs with the engine's device list.

    Returns:
        GPUs in engine order (then those the engine does not see, each noted
        ``not_seen_by_engine``), indices renumbered; inventory notes such as
        ``engine_has_no_gpu_backend`` or ``duplicate_engine_device:Vulkan0``.
    """
    notes: list[str] = []
    engine_gpus = [(d, backend_of(d.name)) for d in devices if d.kind in ("gpu", "igpu")]
    pending = list(found)
    merged: list[Gpu] = []
    # Native backends claim their GPUs first, so a CUDA+Vulkan build maps CUDA0 to the
    # NVIDIA card and leaves its Vulkan twin as a duplicate.
    claims: dict[str, Gpu] = {}
    for native_first in (True, False):
        for dev, backend in engine_gpus:
            if dev.name in claims or backend is None:
                continue
            for gpu in pending:
                native = backend is _NATIVE.get(gpu.vendor)
                if native == native_first and _same_gpu(gpu, dev):
                    claims[dev.name] = _adopt(gpu, dev, backend)
                    pending.remove(gpu)
                    break
    for dev, backend in engine_gpus:
        if dev.name in claims:
            merged.append(claims[dev.name])
        elif backend is None:
            notes.append(f"engine_device_unknown_backend:{dev.name}")
        elif any(g.backend is not backend and _same_gpu(g, dev)
                 for g in (*claims.values(), *merged)):
            notes.append(f"duplicate_engine_device:{dev.name}")
        else:
            merged.append(_from_engine(dev, backend))
    if pending:
        if not engine_gpus:
            notes.append("engine_has_no_gpu_backend")
        merged.extend(replace(g, notes=(*g.notes, "not_seen_by_engine")) for g in pending)
    return ProbeResult(gpus=tuple(replace(g, index=i) for i, g in enumerate(merged)),
                       notes=tuple(notes))
