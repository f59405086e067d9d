"""Hardware detection: :func:`detect` looks at this machine and returns its ``Inventory``.

Sources, in order: the host (``/proc``, psutil), NVIDIA GPUs (NVML), AMD GPUs (amdsmi or
sysfs), an Apple GPU, then the devices the llama.cpp engine itself sees (which orders the
GPUs and adds Intel / Vulkan-only / Metal devices). Then measurements: host RAM bandwidth,
what one CPU core makes of Q4_K weights with the engine's kernels (``core_rate``), GPU
bandwidth when ``torch`` is installed, and a read probe of each model folder. Measured
figures are cached per machine in the user cache folder; ``remeasure=True`` refreshes them.

Nothing here raises for missing hardware or drivers: each part that cannot be told is
left out or given a nominal figure, with a reason code in ``Inventory.notes`` /
``Gpu.notes`` / ``Disk.notes``. Detection takes a progress callback and a cancel flag,
so the GUI can run it off its thread.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.errors import DetectionCancelled
from engine.ggml_devices import EngineDevice
from engine.hardware import amd, apple, core_rate, nvidia
from engine.hardware.bandwidth import host_bandwidth, load_torch, torch_gpu_bandwidth
from engine.hardware.cache import ProbeCache, fingerprint
from engine.hardware.disks import NOMINAL_READ_GBPS, block_device, probe_read
from engine.hardware.engine_devices import cross_check
from engine.hardware.host import probe_host
from engine.hardware.probe import DEFAULT_HOST_BANDWIDTH_GBPS, CancelFlag, ProbeResult
from engine.hardware.sysfs import NVIDIA_PCI_VENDOR, pci_displays
from planner.inventory import Disk, DiskKind, Gpu, Host, Inventory, Vendor

__all__ = ["DetectionCancelled", "Progress", "Sources", "detect", "refine_due", "refresh"]

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]
"""Called with a step name (``host``, ``gpus``, ``engine``, ``host_bandwidth``,
``cpu_cores``, ``gpu_bandwidth``, ``disks``, ``done``) and the fraction of the work done
(0..1)."""

# Reasons NVML gives on a machine that simply has no NVIDIA GPU.
_NO_NVIDIA = frozenset({"nvml_not_installed", "nvml_unavailable", "nvidia_driver_not_loaded"})


@dataclass(frozen=True)
class Sources:
    """Where detection reads from. Defaults are the real machine; tests swap in fakes
    at the library boundary (a ``pynvml``-like module, a fake sysfs tree, ...).

    ``nvml`` / ``amdsmi`` / ``torch``: the module or a stand-in (``None``: import the real
    one if installed). ``engine_devices``: returns the engine's device list (``None``: ask
    the llama.cpp build). ``cache_dir``: where measurements are cached (``None``: the user
    cache folder). ``core_probe``: measures one CPU core's rates, given the cancel check
    (``None``: the engine in a child process, :func:`core_rate.measure_in_child`).
    """

    nvml: Any = None
    amdsmi: Any = None
    torch: Any = None
    sys_root: Path = Path("/sys")
    proc_root: Path = Path("/proc")
    engine_devices: Callable[[], Sequence[EngineDevice]] | None = None
    env: Mapping[str, str] | None = None
    cache_dir: Path | None = None
    core_probe: Callable[[Callable[[], bool]], core_rate.CoreRate | None] | None = None


class _Run:
    """One detection: progress, cancellation, notes and the probe cache."""

    def __init__(self, progress: Progress | None, cancel: CancelFlag | None) -> None:
        self.progress = progress
        self.cancel = cancel
        self.notes: list[str] = []

    def step(self, name: str, fraction: float) -> None:
        """Report progress at the start of step ``name``; stop here when cancelled."""
        if self.cancelled():
            raise DetectionCancelled(f"hardware detection cancelled before {name}")
        if self.progress is not None:
            self.progress(name, fraction)

    def cancelled(self) -> bool:
        """Whether the caller asked detection to stop."""
        return self.cancel is not None and self.cancel.is_set()


def detect(*, model_dirs: Sequence[Path] | None = None, measure: bool = True,
           remeasure: bool = False, refine: bool = False, progress: Progress | None = None,
           cancel: CancelFlag | None = None, sources: Sources | None = None) -> Inventory:
    """Detect this machine's GPUs, host and model disks.

    A figure once measured is kept, whether the machine was busy then or not: a command
    never measures again on its own (see :func:`refine_due` for the daily background
    pass). Measuring again keeps the best figure seen while the machine is busy (other
    work only slows a probe down); a figure taken on an idle machine replaces the old one.

    Args:
        model_dirs: folders models are read from (default: Loadout's models folder).
        measure: run the probes whose figures are not cached yet (else use nominal
            figures, marked as such).
        remeasure: measure every figure again (asked by the user: ``--remeasure``).
        refine: measure the host's RAM bandwidth and CPU core rate again (the daily
            background pass over figures taken while the machine was busy).
        progress: called as ``progress(step, fraction)`` from the calling thread.
        cancel: checked between steps and inside the probes (``threading.Event``).
        sources: where to read from (tests); the real machine by default.

    Returns:
        The Inventory; parts that could not be detected carry reason codes.

    Raises:
        DetectionCancelled: ``cancel`` was set.
    """
    src = sources or Sources()
    run = _Run(progress, cancel)
    run.step("host", 0.0)
    host = probe_host(src.proc_root, src.sys_root)
    run.step("gpus", 0.1)
    gpus = _vendor_gpus(src, host, run)
    run.step("engine", 0.25)
    gpus = _with_engine(gpus, src, host, run)
    from engine.paths import paths

    cache_dir = src.cache_dir or paths().cache
    cache = ProbeCache.load(cache_dir, _fingerprint(host, gpus))
    before = repr(cache)
    if remeasure and measure:
        # Forget the GPU figures; the host's are measured again below (the best kept while
        # busy); disks are re-measured as they are visited, so a disk not named this time
        # keeps its figure.
        cache.gpus = {}
    again = measure and (remeasure or refine)
    run.step("host_bandwidth", 0.35)
    host = _host_bandwidth(host, cache, measure, again, run)
    run.step("cpu_cores", 0.45)
    host = _core_rate(host, cache, measure, again, src, run)
    run.step("gpu_bandwidth", 0.55)
    gpus = _gpu_bandwidth(gpus, cache, measure, src, run)
    run.step("disks", 0.7)
    disks = _disks(model_dirs, cache, measure, remeasure, src, run)
    if repr(cache) != before:
        cache.save(cache_dir)
    run.step("done", 1.0)
    return Inventory(gpus=tuple(gpus), host=host, disks=tuple(disks), notes=tuple(run.notes))


def refine_due(inventory: Inventory, *, now: float | None = None,
               sources: Sources | None = None) -> bool:
    """Whether this machine's background pass is due: a figure of ``inventory`` (this
    machine's detection) was taken while busy, and not measured again for a day. The app
    then runs ``detect(refine=True)`` off its thread; commands never do."""
    from engine.paths import paths

    src = sources or Sources()
    cache = ProbeCache.load(src.cache_dir or paths().cache,
                            _fingerprint(inventory.host,
                                         [g for g in inventory.gpus if not g.endpoint]))
    return cache.refine_due(time.time() if now is None else now)


def _fingerprint(host: Host, gpus: Sequence[Gpu]) -> str:
    return fingerprint(host.cpu, host.threads, host.ram_total_bytes,
                       [(g.name, g.total_bytes) for g in gpus])


def refresh(inventory: Inventory, *, sources: Sources | None = None) -> Inventory:
    """Re-read free memory (GPUs and RAM) just before a load; measure nothing.

    GPUs are matched by PCI bus id, then engine device name, then name. A GPU that is no
    longer there keeps its place but gets 0 free bytes and the note ``gpu_disappeared``
    (and ``gpu_disappeared:N`` in the inventory notes), so a plan made now leaves it off.
    """
    src = sources or Sources()
    run = _Run(None, None)
    host = probe_host(src.proc_root, src.sys_root)
    fresh = _with_engine(_vendor_gpus(src, host, run), src, host, run)
    pool = list(fresh)
    gpus: list[Gpu] = []
    for old in inventory.gpus:
        now = next((g for g in pool if _same_device(old, g)), None)
        if now is None:
            run.notes.append(f"gpu_disappeared:{old.index}")
            notes = old.notes if "gpu_disappeared" in old.notes else \
                (*old.notes, "gpu_disappeared")
            gpus.append(replace(old, free_bytes=0, notes=notes))
            continue
        pool.remove(now)
        gpus.append(replace(old, free_bytes=min(now.free_bytes, old.total_bytes),
                            other_process_bytes=now.other_process_bytes))
    new_host = replace(inventory.host,
                       ram_available_bytes=min(host.ram_available_bytes,
                                               inventory.host.ram_total_bytes))
    kept = [n for n in inventory.notes if not n.startswith("gpu_disappeared:")]
    return replace(inventory, gpus=tuple(gpus), host=new_host,
                   notes=(*kept, *(n for n in run.notes if n.startswith("gpu_disappeared:"))))


def _same_device(old: Gpu, new: Gpu) -> bool:
    if old.pci_bus_id and new.pci_bus_id:
        return old.pci_bus_id == new.pci_bus_id and old.name == new.name
    if old.engine_device and new.engine_device:
        return old.engine_device == new.engine_device and old.name == new.name
    return old.name == new.name and old.total_bytes == new.total_bytes


def _vendor_gpus(src: Sources, host: Host, run: _Run) -> list[Gpu]:
    gpus: list[Gpu] = []
    if sys.platform != "darwin":
        found = nvidia.probe(src.nvml)
        notes = list(found.notes)
        displays = pci_displays(src.sys_root)
        # No NVIDIA card on the PCI bus: NVML's absence is expected, not news.
        pci_readable = bool(displays) or (src.sys_root / "bus" / "pci").exists()
        if pci_readable and not any(d.vendor == NVIDIA_PCI_VENDOR for d in displays):
            notes = [n for n in notes if n not in _NO_NVIDIA]
        run.notes.extend(notes)
        gpus.extend(found.gpus)
        found = amd.probe(src.amdsmi, src.sys_root, src.env, host.ram_available_bytes)
        run.notes.extend(found.notes)
        gpus.extend(found.gpus)
    found = apple.probe(host.ram_total_bytes, host.ram_available_bytes)
    gpus.extend(found.gpus)
    return gpus


def _with_engine(gpus: list[Gpu], src: Sources, host: Host, run: _Run) -> list[Gpu]:
    try:
        if src.engine_devices is not None:
            devices = list(src.engine_devices())
        else:
            from engine.ggml_devices import engine_devices_quick

            devices = engine_devices_quick()
    except Exception as exc:  # an engine build that fails to load must not stop detection
        log.warning("the engine's device list is unavailable: %s", exc)
        run.notes.append("engine_devices_unavailable")
        return [replace(g, index=i) for i, g in enumerate(gpus)]
    merged: ProbeResult = cross_check(gpus, devices)
    run.notes.extend(merged.notes)
    cpu = next((d for d in devices if d.kind == "cpu"), None)
    if cpu is not None and cpu.total_bytes and \
            abs(cpu.total_bytes - host.ram_total_bytes) > 0.1 * host.ram_total_bytes:
        run.notes.append("engine_ram_mismatch")
    return list(merged.gpus)


def _host_bandwidth(host: Host, cache: ProbeCache, measure: bool, again: bool, run: _Run
                    ) -> Host:
    """The host with its RAM bandwidth: cached (busy or not), else measured when
    ``measure``; measured again only when ``again``."""
    value = cache.host.get("bandwidth_gbps")
    cached = float(value) if isinstance(value, int | float) and \
        not isinstance(value, bool) else 0.0
    known = cached > 0
    if known and not again:
        if cache.host.get("busy"):
            run.notes.append("host_busy_while_measuring")
        return replace(host, bandwidth_gbps=cached,
                       measured=(*host.measured, "bandwidth_gbps"))
    if not measure:
        run.notes.append("host_bandwidth_default")
        return replace(host, bandwidth_gbps=DEFAULT_HOST_BANDWIDTH_GBPS)
    busy = _busy(host.threads)
    gbps = host_bandwidth(host.threads, cancelled=run.cancelled)
    run.step("host_bandwidth", 0.5)  # a cancel during the probe stops here
    if busy and known:
        # other work can only make a copy slower, never faster: keep the best seen, and
        # its "busy" mark only if no idle figure was ever seen
        busy = busy and bool(cache.host.get("busy"))
        gbps = max(gbps, cached)
    cache.host = {"bandwidth_gbps": gbps, "method": "numpy_copy", "threads": host.threads,
                  "busy": busy, "measured_at": time.time()}
    if busy:
        run.notes.append("host_busy_while_measuring")
    return replace(host, bandwidth_gbps=gbps, measured=(*host.measured, "bandwidth_gbps"))


def _core_rate(host: Host, cache: ProbeCache, measure: bool, again: bool, src: Sources,
               run: _Run) -> Host:
    """The host with one core's measured Q4_K rates: cached (busy or not), else measured
    once by the engine on a probe model (a child process, about a second) when ``measure``;
    measured again only when ``again``. A probe that failed is not retried until then."""
    rate = core_rate.from_cache(cache.cpu)
    if measure and (again or (rate is None and not core_rate.failed_before(cache.cpu))):
        probe = src.core_probe or (lambda cancelled: core_rate.measure_in_child(
            cancelled=cancelled))
        busy = _busy(host.threads)
        found = probe(run.cancelled)
        run.step("cpu_cores", 0.5)  # a cancel during the probe stops here
        now = time.time()
        if found is None:  # a failure is remembered; a figure already there is kept
            cache.cpu = {**(cache.cpu if rate is not None else core_rate.cache_entry(None)),
                         "measured_at": now}
        elif busy and rate is not None:
            # as the RAM's: while busy the best of each figure is kept (a neighbour can
            # only slow a core down), "busy" only if no idle figure was ever seen
            rate = core_rate.best(rate, found)
            cache.cpu = {**core_rate.cache_entry(rate, busy=cache.cpu.get("busy") is True),
                         "measured_at": now}
        else:  # the first figure, or one taken on an idle machine: it replaces the old
            rate = found
            cache.cpu = {**core_rate.cache_entry(found, busy=busy), "measured_at": now}
    if rate is None:
        run.notes.append("cpu_core_rate_default")
        return host
    return replace(host, core_prefill_gflops=rate.prefill_gflops,
                   core_decode_gbps=rate.decode_gbps,
                   measured=(*host.measured, "core_prefill_gflops", "core_decode_gbps"))


def _busy(threads: int) -> bool:
    """Whether other work already keeps the CPUs busy (a probe then reads low)."""
    if sys.platform == "win32":  # Windows has no load average
        return False
    try:
        return os.getloadavg()[0] >= 0.75 * threads
    except OSError:
        return False


def _gpu_key(gpu: Gpu) -> str:
    return gpu.pci_bus_id or f"{gpu.name}#{gpu.index}"


def _gpu_bandwidth(gpus: list[Gpu], cache: ProbeCache, measure: bool, src: Sources,
                   run: _Run) -> list[Gpu]:
    probeable = [g for g in gpus if g.vendor in (Vendor.NVIDIA, Vendor.AMD)
                 and "mig_instance" not in g.notes]
    if not probeable:
        return gpus
    if measure and any(_gpu_key(g) not in cache.gpus for g in probeable):
        torch = src.torch if src.torch is not None else load_torch()
        if torch is None:
            run.notes.append("gpu_probe_unavailable")
        else:
            _measure_gpus(torch, probeable, cache, run)
    out: list[Gpu] = []
    for gpu in gpus:
        figures = cache.gpus.get(_gpu_key(gpu), {})
        bw, h2d = figures.get("bandwidth_gbps"), figures.get("h2d_gbps")
        if isinstance(bw, int | float) and bw > 0 and isinstance(h2d, int | float) and h2d > 0:
            gpu = replace(gpu, bandwidth_gbps=float(bw), pcie_gbps=float(h2d),
                          measured=(*gpu.measured, "bandwidth_gbps", "pcie_gbps"))
        out.append(gpu)
    return out


def _measure_gpus(torch: Any, gpus: list[Gpu], cache: ProbeCache, run: _Run) -> None:
    pending = list(gpus)
    for probe in torch_gpu_bandwidth(torch, cancelled=run.cancelled):
        # torch's order may differ from ours (CUDA_DEVICE_ORDER): match by name and size.
        match = next((g for g in pending if g.name == probe.name and
                      abs(g.total_bytes - probe.total_bytes) <= 0.1 * max(1, g.total_bytes)),
                     None)
        if match is None:
            run.notes.append(f"gpu_probe_unmatched:{probe.ordinal}")
            continue
        pending.remove(match)
        cache.gpus[_gpu_key(match)] = {"bandwidth_gbps": probe.bandwidth_gbps,
                                       "h2d_gbps": probe.h2d_gbps, "name": probe.name}


def _disks(model_dirs: Sequence[Path] | None, cache: ProbeCache, measure: bool,
           remeasure: bool, src: Sources, run: _Run) -> list[Disk]:
    if model_dirs is None:
        from engine.paths import paths

        folder = paths().models
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("cannot create the models folder %s: %s", folder, exc)
            run.notes.append("models_folder_unusable")
            return [Disk(path=str(folder), kind=DiskKind.UNKNOWN,
                         read_gbps=NOMINAL_READ_GBPS[DiskKind.UNKNOWN],
                         notes=("models_folder_unusable", "read_nominal"))]
        model_dirs = [folder]
    disks: list[Disk] = []
    fresh: set[str] = set()  # devices measured in this run (remeasure reads each once)
    for folder in model_dirs:
        run.step("disks", 0.7 + 0.3 * len(disks) / max(1, len(model_dirs)))
        disks.append(_disk(Path(folder), cache, measure, remeasure, fresh, src))
    return disks


def _disk(folder: Path, cache: ProbeCache, measure: bool, remeasure: bool, fresh: set[str],
          src: Sources) -> Disk:
    device = block_device(folder, src.sys_root, src.proc_root)
    notes = list(device.notes)
    key = device.cache_key or f"path:{folder.resolve()}"
    if remeasure and measure and key not in fresh:
        cache.disks.pop(key, None)
    fresh.add(key)
    cached = cache.disks.get(key, {})
    gbps = cached.get("read_gbps")
    if isinstance(gbps, int | float) and gbps > 0:
        return Disk(path=str(folder), kind=device.kind, read_gbps=float(gbps), measured=True,
                    device=device.name, notes=(*notes, *cached.get("notes", ())))
    nominal = NOMINAL_READ_GBPS[device.kind]
    if not measure or "folder_missing" in notes:
        return Disk(path=str(folder), kind=device.kind, read_gbps=nominal, device=device.name,
                    notes=(*notes, "read_nominal"))
    try:
        result = probe_read(folder)
    except OSError as exc:
        log.warning("read probe of %s failed: %s", folder, exc)
        return Disk(path=str(folder), kind=device.kind, read_gbps=nominal, device=device.name,
                    notes=(*notes, "read_probe_failed", "read_nominal"))
    notes.extend(result.notes)
    if "page_cache_suspected" in result.notes or result.read_gbps <= 0:
        return Disk(path=str(folder), kind=device.kind, read_gbps=nominal, device=device.name,
                    notes=(*notes, "read_nominal"))
    cache.disks[key] = {"read_gbps": result.read_gbps, "bytes_read": result.bytes_read,
                        "notes": [n for n in result.notes if n != "temp_file"]}
    return Disk(path=str(folder), kind=device.kind, read_gbps=result.read_gbps, measured=True,
                device=device.name, notes=tuple(notes))
