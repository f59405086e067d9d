"""Small readers of Linux's sysfs/procfs, rooted anywhere (tests use a fake tree)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

NVIDIA_PCI_VENDOR = 0x10DE
AMD_PCI_VENDOR = 0x1002
INTEL_PCI_VENDOR = 0x8086


def read_text(path: Path) -> str | None:
    """The stripped content of a small file, or ``None`` if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_int(path: Path, base: int = 10) -> int | None:
    """An integer file (``base`` 0 accepts ``0x`` prefixes), or ``None``."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.split()[0], base) if text else None
    except ValueError:
        return None


@dataclass(frozen=True)
class PciDisplay:
    """A PCI display controller (class 0x03xxxx): whatever driver it has, or none."""

    bus_id: str
    vendor: int
    device: int
    driver: str


def pci_displays(sys_root: Path = Path("/sys")) -> list[PciDisplay]:
    """Every display-class PCI function, in bus order (empty where sysfs is absent)."""
    base = sys_root / "bus" / "pci" / "devices"
    found: list[PciDisplay] = []
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return found
    for dev in entries:
        klass = read_int(dev / "class", 0)
        if klass is None or klass >> 16 != 0x03:
            continue
        driver_link = dev / "driver"
        driver = driver_link.resolve().name if driver_link.exists() else ""
        found.append(PciDisplay(bus_id=dev.name, vendor=read_int(dev / "vendor", 0) or 0,
                                device=read_int(dev / "device", 0) or 0, driver=driver))
    return found
