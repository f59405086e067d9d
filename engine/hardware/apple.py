"""Apple Silicon: the GPU shares unified memory with the CPU.

The engine's Metal device reports the GPU-usable share itself (Metal's
``recommendedMaxWorkingSetSize``); this module estimates it when the engine build has no
Metal backend, so a plan can still be made (and say so).
"""

from __future__ import annotations

import logging
import platform
import subprocess
import sys

from engine.hardware.probe import UNKNOWN_GPU_BANDWIDTH_GBPS, ProbeResult
from planner.gpus import GIB, lookup
from planner.inventory import Backend, Gpu, Vendor

log = logging.getLogger(__name__)


def gpu_share(ram_total: int) -> int:
    """The part of unified memory macOS lets the GPU wire by default.

    About two thirds of RAM up to 36 GiB, three quarters above (the documented default
    working-set limit; ``iogpu.wired_limit_mb`` can raise it).
    """
    fraction = 0.75 if ram_total > 36 * GIB else 2 / 3
    return int(ram_total * fraction)


def apple_gpu(chip: str, ram_total: int, ram_available: int) -> Gpu:
    """The Apple GPU of ``chip`` ("Apple M2 Max") on a machine with this much RAM."""
    share = gpu_share(ram_total)
    spec = lookup(chip)
    return Gpu(index=0, name=chip, vendor=Vendor.APPLE, backend=Backend.METAL,
               total_bytes=share, free_bytes=min(share, ram_available),
               bandwidth_gbps=spec.bandwidth_gbps if spec else UNKNOWN_GPU_BANDWIDTH_GBPS,
               pcie_gbps=0.0, tflops_fp16=spec.tflops_fp16 if spec else 0.0,
               unified_memory=True, drives_display=True,
               notes=("gpu_share_estimated",
                      "bandwidth_nominal" if spec else "bandwidth_unknown"))


def probe(ram_total: int, ram_available: int) -> ProbeResult:
    """The Apple GPU on an Apple Silicon Mac; nothing elsewhere."""
    if sys.platform != "darwin" or platform.machine() != "arm64":
        return ProbeResult()
    try:
        chip = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                              text=True, timeout=2, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("sysctl failed: %s", exc)
        chip = ""
    return ProbeResult(gpus=(apple_gpu(chip or "Apple Silicon", ram_total, ram_available),))
