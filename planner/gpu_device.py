"""One GPU (accelerator) as the planner sees it: vendor, engine backend, memory, speed.

Shared by the machine's inventory (:mod:`planner.inventory`) and the table of nominal GPU
figures (:mod:`planner.gpus`), which builds such records for rig files and what-ifs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Vendor(StrEnum):
    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    APPLE = "apple"
    OTHER = "other"


class Backend(StrEnum):
    CUDA = "cuda"
    ROCM = "rocm"
    VULKAN = "vulkan"
    METAL = "metal"
    SYCL = "sycl"
    RPC = "rpc"


@dataclass(frozen=True)
class Gpu:
    """One accelerator. Bytes are integers; bandwidths in GB/s (10^9 bytes per second).

    ``measured`` names the figures that were measured on this machine (the rest are
    nominal, from the GPU table or the driver).
    """

    index: int
    name: str
    vendor: Vendor
    backend: Backend
    total_bytes: int
    free_bytes: int
    bandwidth_gbps: float
    pcie_gbps: float = 16.0
    tflops_fp16: float = 0.0
    drives_display: bool = False
    unified_memory: bool = False
    measured: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    engine_device: str = ""       # llama.cpp's name for it ("CUDA0", "Vulkan1", "MTL0")
    pci_bus_id: str = ""
    other_process_bytes: int = 0  # VRAM held by other processes when detected
    # a device of an RPC worker (backend RPC): where it is and the network link to it
    endpoint: str = ""            # "host:port" of the worker serving it
    link_gbps: float = 0.0        # network bandwidth to it, GB/s
    link_latency_s: float = 0.0   # one request/reply round trip
    same_host: bool = False       # the worker runs on this machine (shares its cores)
    worker_cpu: bool = False      # the worker serves its CPU and RAM as this device
    # the largest tensor the engine's kernels take on this device (0: no limit); an op
    # with a larger source or result runs on the CPU (Vulkan: maxStorageBufferRange)
    max_tensor_bytes: int = 0
    # a software device that computes on the host's CPU (Vulkan device type CPU: Mesa's
    # lavapipe, SwiftShader): it holds layers like a GPU, its speed is not predicted
    software: bool = False

    @property
    def remote(self) -> bool:
        """True for a device behind a network link (an RPC worker's)."""
        return self.backend == Backend.RPC
