"""What each detection step hands back: the GPUs it found and why parts are missing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from planner.gpus import GpuSpec
from planner.inventory import Gpu


@dataclass(frozen=True)
class ProbeResult:
    """GPUs found by one source, and reason codes for what it could not tell."""

    gpus: tuple[Gpu, ...] = ()
    notes: tuple[str, ...] = ()


class CancelFlag(Protocol):
    """Anything with ``is_set()``: a :class:`threading.Event` is the usual one."""

    def is_set(self) -> bool:
        """True once the caller wants the work stopped."""
        ...


# Read-equivalent bandwidth assumed when nothing better is known (GB/s), with a reason code.
UNKNOWN_GPU_BANDWIDTH_GBPS = 200.0
DEFAULT_HOST_BANDWIDTH_GBPS = 40.0


def choose_bandwidth(driver_gbps: float, spec: GpuSpec | None, notes: list[str]) -> float:
    """A GPU's memory bandwidth: the driver's peak, else the table's, else a typical one.

    Appends the reason code saying which (``bandwidth_driver_peak`` / ``_nominal`` /
    ``_unknown``) to ``notes``.
    """
    if driver_gbps > 0:
        notes.append("bandwidth_driver_peak")
        return driver_gbps
    if spec:
        notes.append("bandwidth_nominal")
        return spec.bandwidth_gbps
    notes.append("bandwidth_unknown")
    return UNKNOWN_GPU_BANDWIDTH_GBPS
