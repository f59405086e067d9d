"""The machine as the planner sees it: GPUs, host, disks (``loadout.inventory/1``).

Also the format of a rig file: ``loadout detect --json > rig.json``, edit, then
``loadout plan MODEL --rig rig.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from planner.errors import InventoryError
from planner.gpu_device import Backend, Gpu, Vendor
from planner.gpus import complete_rig_gpu

SCHEMA = "loadout.inventory/1"

# Gpu, Vendor and Backend are defined in planner.gpu_device (the GPU table needs them
# too) and are part of this module's face.
__all__ = ["SCHEMA", "Backend", "Disk", "DiskKind", "Gpu", "Host", "Inventory", "Vendor"]


class DiskKind(StrEnum):
    NVME = "nvme"
    SSD = "ssd"
    HDD = "hdd"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Host:
    """The CPU side: RAM and its bandwidth, cores.

    ``core_prefill_gflops`` / ``core_decode_gbps``: what one core makes of Q4_K weights
    with the engine's own kernels, measured on this machine (GFLOP/s of a prompt batch,
    GB/s of a decoded token's weights); 0.0 when not measured (another machine's rig:
    the speed model's constants at the host's clock are used).
    """

    cpu: str
    cores: int
    threads: int
    ram_total_bytes: int
    ram_available_bytes: int
    bandwidth_gbps: float
    isa: tuple[str, ...] = ()
    numa_nodes: int = 1
    measured: tuple[str, ...] = ()
    clock_ghz: float = 0.0        # the cores' top clock; 0 when unknown
    core_prefill_gflops: float = 0.0
    core_decode_gbps: float = 0.0


@dataclass(frozen=True)
class Disk:
    """A place models are read from, with its sequential read bandwidth."""

    path: str
    kind: DiskKind
    read_gbps: float
    measured: bool = False
    device: str = ""              # the block device ("nvme0n1", "sda")
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Inventory:
    """GPUs, host and disks. Frozen; use :func:`dataclasses.replace` for what-ifs."""

    gpus: tuple[Gpu, ...]
    host: Host
    disks: tuple[Disk, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def with_gpus(self, gpus: tuple[Gpu, ...]) -> Inventory:
        """Return a copy with other GPUs (indices renumbered in order)."""
        return replace(self, gpus=tuple(replace(g, index=i) for i, g in enumerate(gpus)))

    def to_json(self) -> dict[str, Any]:
        """Return the ``loadout.inventory/1`` JSON document (a valid rig file)."""
        doc: dict[str, Any] = {"schema": SCHEMA}
        doc["gpus"] = [_plain(asdict(g)) for g in self.gpus]
        doc["host"] = _plain(asdict(self.host))
        doc["disks"] = [_plain(asdict(d)) for d in self.disks]
        doc["notes"] = list(self.notes)
        return doc

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Inventory:
        """Parse a rig file / ``detect --json`` document.

        Raises:
            InventoryError: wrong schema, missing keys, or values of the wrong kind.
        """
        if not isinstance(doc, Mapping):
            raise InventoryError("a rig file must be a JSON object")
        schema = doc.get("schema", SCHEMA)
        if schema != SCHEMA:
            raise InventoryError(f"unknown rig schema {schema!r} (expected {SCHEMA})")
        try:
            gpus = tuple(_gpu(i, complete_rig_gpu(g) if isinstance(g, Mapping) else g)
                         for i, g in enumerate(doc.get("gpus", [])))
            host = _host(doc["host"])
            disks = tuple(_disk(d) for d in doc.get("disks", []))
        except KeyError as exc:
            raise InventoryError(f"rig file is missing the key {exc.args[0]!r}") from exc
        except (TypeError, ValueError) as exc:
            raise InventoryError(f"rig file has a bad value: {exc}") from exc
        return Inventory(gpus=gpus, host=host, disks=disks,
                         notes=tuple(str(n) for n in doc.get("notes", [])))


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}


def _num(value: Any, name: str, minimum: float = 0.0) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value!r}")
    return number


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _gpu(position: int, g: Mapping[str, Any]) -> Gpu:
    if not isinstance(g, Mapping):
        raise ValueError(f"GPU entry {position} is not an object")
    for key in ("total_bytes", "bandwidth_gbps"):
        if key not in g:
            raise ValueError(f"GPU entry {position} ({g.get('name', 'unnamed')}) has no "
                             f"{key!r} and is not a GPU Loadout knows by name")
    total = _int(g["total_bytes"], "total_bytes")
    free = _int(g.get("free_bytes", total), "free_bytes")
    return Gpu(
        index=int(g.get("index", position)),
        name=str(g.get("name", f"GPU {position}")),
        vendor=Vendor(g.get("vendor", "other")),
        backend=Backend(g.get("backend", "vulkan")),
        total_bytes=total,
        free_bytes=min(free, total),
        bandwidth_gbps=_num(g["bandwidth_gbps"], "bandwidth_gbps", 0.001),
        pcie_gbps=_num(g.get("pcie_gbps", 16.0), "pcie_gbps"),
        tflops_fp16=_num(g.get("tflops_fp16", 0.0), "tflops_fp16"),
        drives_display=bool(g.get("drives_display", False)),
        unified_memory=bool(g.get("unified_memory", False)),
        measured=tuple(str(m) for m in g.get("measured", ())),
        notes=tuple(str(n) for n in g.get("notes", ())),
        engine_device=str(g.get("engine_device", "")),
        pci_bus_id=str(g.get("pci_bus_id", "")),
        other_process_bytes=_int(g.get("other_process_bytes", 0), "other_process_bytes"),
        endpoint=str(g.get("endpoint", "")),
        link_gbps=_num(g.get("link_gbps", 0.0), "link_gbps"),
        link_latency_s=_num(g.get("link_latency_s", 0.0), "link_latency_s"),
        same_host=bool(g.get("same_host", False)),
        worker_cpu=bool(g.get("worker_cpu", False)),
        max_tensor_bytes=_int(g.get("max_tensor_bytes", 0), "max_tensor_bytes"),
        software=bool(g.get("software", "software_device" in g.get("notes", ()))),
    )


def _host(h: Mapping[str, Any]) -> Host:
    total = _int(h["ram_total_bytes"], "ram_total_bytes")
    return Host(
        cpu=str(h.get("cpu", "unknown CPU")),
        cores=max(1, _int(h.get("cores", 1), "cores")),
        threads=max(1, _int(h.get("threads", h.get("cores", 1)), "threads")),
        ram_total_bytes=total,
        ram_available_bytes=min(_int(h.get("ram_available_bytes", total),
                                     "ram_available_bytes"), total),
        bandwidth_gbps=_num(h["bandwidth_gbps"], "bandwidth_gbps", 0.001),
        isa=tuple(str(x) for x in h.get("isa", ())),
        numa_nodes=max(1, _int(h.get("numa_nodes", 1), "numa_nodes")),
        measured=tuple(str(m) for m in h.get("measured", ())),
        clock_ghz=_num(h.get("clock_ghz", 0.0), "clock_ghz", 0.0),
        core_prefill_gflops=_num(h.get("core_prefill_gflops", 0.0), "core_prefill_gflops"),
        core_decode_gbps=_num(h.get("core_decode_gbps", 0.0), "core_decode_gbps"),
    )


def _disk(d: Mapping[str, Any]) -> Disk:
    return Disk(
        path=str(d.get("path", "")),
        kind=DiskKind(d.get("kind", "unknown")),
        read_gbps=_num(d.get("read_gbps", 0.5), "read_gbps", 0.001),
        measured=bool(d.get("measured", False)),
        device=str(d.get("device", "")),
        notes=tuple(str(n) for n in d.get("notes", ())),
    )
