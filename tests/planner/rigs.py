"""Rigs (inventories) for planner behaviour tests, built in memory."""

from __future__ import annotations

from planner.inventory import Backend, Disk, DiskKind, Gpu, Host, Inventory, Vendor

GIB = 1 << 30


def gpu(name: str, vram_gib: float, bandwidth: float, *, index: int = 0,
        display: bool = False, tflops: float = 80.0, backend: Backend = Backend.CUDA,
        unified: bool = False, pcie: float = 25.0) -> Gpu:
    """A GPU with all its memory free (a display takes nothing until ``display``)."""
    total = int(vram_gib * GIB)
    vendor = Vendor.APPLE if backend == Backend.METAL else Vendor.NVIDIA
    return Gpu(index=index, name=name, vendor=vendor, backend=backend, total_bytes=total,
               free_bytes=total, bandwidth_gbps=bandwidth, pcie_gbps=0.0 if unified else pcie,
               tflops_fp16=tflops, drives_display=display, unified_memory=unified)


RTX_4090 = gpu("RTX 4090", 24, 1008, tflops=165)
RTX_3090 = gpu("RTX 3090", 24, 936, tflops=71)
RTX_3060 = gpu("RTX 3060 12GB", 12, 360, tflops=51)
RTX_4060 = gpu("RTX 4060 8GB", 8, 272, tflops=60)
RTX_3060_8 = gpu("RTX 3060 8GB", 8, 240, tflops=51)


def rig(*gpus: Gpu, ram_gib: float = 64, ram_bw: float = 80.0, cores: int = 8,
        disk_gbps: float = 3.0) -> Inventory:
    """An inventory of these GPUs (renumbered in order) and a host."""
    ram = int(ram_gib * GIB)
    host = Host(cpu="test CPU", cores=cores, threads=cores * 2, ram_total_bytes=ram,
                ram_available_bytes=ram - 2 * GIB, bandwidth_gbps=ram_bw)
    inv = Inventory(gpus=(), host=host, disks=(Disk("/models", DiskKind.NVME, disk_gbps),))
    return inv.with_gpus(tuple(gpus))


def apple(ram_gib: float, bandwidth: float) -> Inventory:
    """An Apple Silicon machine: one unified-memory GPU sharing RAM with the CPU."""
    share = int(ram_gib * GIB * 0.75)
    g = gpu("Apple M-series", share / GIB, bandwidth, backend=Backend.METAL, unified=True,
            tflops=20)
    return rig(g, ram_gib=ram_gib, ram_bw=bandwidth, cores=12)
