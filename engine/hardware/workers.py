"""RPC workers' devices added to an Inventory: GPUs (or CPUs) behind a network link.

Each worker is probed with a bounded conversation in its own protocol
(:func:`engine.rpc.probe_worker`); a reachable one has its link measured by timing a
few-MiB copy into a scratch buffer on its first device (:func:`engine.rpc.measure_link`).
An unreachable or busy worker is left out, with ``worker_unreachable:ENDPOINT:REASON``
in ``Inventory.notes``, so a plan never places anything on it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.rpc import measure_link, parse_endpoint, probe_worker
from planner.inventory import Backend, Gpu, Inventory, Vendor

log = logging.getLogger(__name__)

LOOPBACK_LINK_GBPS = 10.0     # nominal figures when the link cannot be measured
LAN_LINK_GBPS = 0.117         # 1 GbE
LAN_LATENCY_S = 0.5e-3
REMOTE_CPU_GBPS = 60.0        # a worker's RAM bandwidth is not reported: a typical desktop
REMOTE_GPU_GBPS = 300.0       # a worker's GPU bandwidth is not reported: a mid-range card


@dataclass(frozen=True)
class WorkerLink:
    """What the main knows of its link to one worker."""

    gbps: float
    latency_s: float
    measured: bool


def add_workers(inventory: Inventory, endpoints: Sequence[str], timeout_s: float = 3.0,
                link_gbps: float | None = None, measure: bool = True) -> Inventory:
    """A copy of ``inventory`` with the devices of the reachable workers appended.

    Args:
        endpoints: ``HOST:PORT`` of each worker, in the order their devices are wanted.
        timeout_s: bound on each network call to a worker.
        link_gbps: the link bandwidth to use instead of measuring it (GB/s).
        measure: time a copy to each worker (otherwise nominal figures, noted).

    Returns:
        The inventory with one ``Backend.RPC`` Gpu per worker device, and notes for the
        workers left out and for nominal figures.
    """
    gpus = list(inventory.gpus)
    notes = list(inventory.notes)
    seen: set[str] = set()
    for endpoint in endpoints:
        try:
            host, port = parse_endpoint(endpoint)
        except ValueError:
            notes.append(f"worker_unreachable:{endpoint}:bad_address")
            continue
        key = f"{host}:{port}"
        if key in seen:
            continue
        seen.add(key)
        probe = probe_worker(key, timeout_s)
        if not probe.reachable or probe.reason or not probe.devices:
            reason = probe.reason or "no_devices"
            log.warning("worker %s left out: %s", key, reason)
            notes.append(f"worker_unreachable:{key}:{reason}")
            continue
        link = _link(key, host, probe.latency_s or 0.0, timeout_s, link_gbps, measure)
        same_host = _same_host(host)
        for dev in probe.devices:
            gpus.append(_device_gpu(inventory, key, dev.index, dev.free_bytes,
                                    dev.total_bytes, dev.looks_like_cpu, link, same_host,
                                    link_gbps is not None))
    return replace(inventory.with_gpus(tuple(gpus)), notes=tuple(notes))


def _same_host(host: str) -> bool:
    from engine.rpc import is_loopback

    return is_loopback(host)


def _link(endpoint: str, host: str, latency_s: float, timeout_s: float,
          given_gbps: float | None, measure: bool) -> WorkerLink:
    if given_gbps is not None:
        return WorkerLink(given_gbps, latency_s, False)
    measured = measure_link(endpoint, timeout_s=timeout_s) if measure else None
    if measured is not None:
        return WorkerLink(measured.gbps, min(latency_s or measured.round_trip_s,
                                             measured.round_trip_s), True)
    nominal = LOOPBACK_LINK_GBPS if _same_host(host) else LAN_LINK_GBPS
    return WorkerLink(nominal, latency_s or LAN_LATENCY_S, False)


def _device_gpu(inventory: Inventory, endpoint: str, index: int, free: int, total: int,
                cpu: bool, link: WorkerLink, same_host: bool, user_link: bool) -> Gpu:
    notes = ["engine_backend_rpc"]
    measured = ["link_latency_s"]
    if link.measured:
        measured.append("link_gbps")
    elif not user_link:
        notes.append("link_nominal")
    if cpu and same_host:
        bandwidth = inventory.host.bandwidth_gbps  # the same RAM this machine reads
        measured += [m for m in inventory.host.measured if m == "bandwidth_gbps"]
    else:
        bandwidth = REMOTE_CPU_GBPS if cpu else REMOTE_GPU_GBPS
        notes.append("bandwidth_unknown")
    if same_host:
        notes.append("same_host")
    return Gpu(index=len(inventory.gpus), name=f"{'CPU' if cpu else 'GPU'} {index} of {endpoint}",
               vendor=Vendor.OTHER, backend=Backend.RPC, total_bytes=total,
               free_bytes=min(free, total), bandwidth_gbps=bandwidth, pcie_gbps=0.0,
               measured=tuple(measured), notes=tuple(notes), endpoint=endpoint,
               link_gbps=link.gbps, link_latency_s=link.latency_s, same_host=same_host,
               worker_cpu=cpu)
