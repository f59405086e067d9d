"""What each detection step hands back: the GPUs it found and why parts are missing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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
