"""From a priced arrangement to the Plan's report: devices, spills and reason codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.codes import Code
from planner.engine_params import ranges
from planner.inventory import Inventory
from planner.plan_types import DeviceUse, Note, Spill
from planner.profile import ModelProfile, TensorKind
from planner.quant import bits_of, is_low_bit
from planner.request import Request, SpecMode, TaskKind
from planner.speed import CONSTANTS, DISK, HOST, Speed, gpu_of

if TYPE_CHECKING:
    from planner.trials import Trial


def devices_of(inventory: Inventory, profile: ModelProfile, trial: Trial
               ) -> tuple[DeviceUse, ...]:
    """Per-device memory map (GPUs in index order, then host, then disk)."""
    by_dev = {m.device: m for m in trial.memory}
    placement = trial.layout.placement
    roles = {r.device: r for r in trial.roles}
    out: list[DeviceUse] = []
    for gpu in inventory.gpus:
        dev = f"gpu{gpu.index}"
        m = by_dev.get(dev)
        role = roles.get(dev)
        reserve = role.reserve_bytes if role else 0
        out.append(DeviceUse(
            id=dev, kind="gpu", name=gpu.name,
            weights_bytes=m.weights_bytes if m else 0, kv_bytes=m.kv_bytes if m else 0,
            compute_bytes=m.compute_bytes if m else 0,
            other_bytes=(m.output_bytes + m.overhead_bytes) if m else 0,
            reserve_bytes=reserve, capacity_bytes=gpu.free_bytes,
            layers=tuple(ranges([i for i, d in enumerate(placement.layer_devices)
                                 if d == dev])),
            expert_layers=tuple(ranges([i for i, d in enumerate(placement.expert_devices)
                                        if d == dev]))))
    host = by_dev.get(HOST)
    h = inventory.host
    disk_bytes = trial.disk_bytes
    out.append(DeviceUse(
        id=HOST, kind="host", name=h.cpu,
        weights_bytes=(host.weights_bytes - disk_bytes) if host else 0,
        kv_bytes=host.kv_bytes if host else 0,
        compute_bytes=host.compute_bytes if host else 0,
        other_bytes=(host.output_bytes + host.overhead_bytes) if host else 0,
        reserve_bytes=max(0, h.ram_available_bytes - trial.host_budget),
        capacity_bytes=h.ram_available_bytes,
        layers=tuple(ranges([i for i, d in enumerate(placement.layer_devices) if d == HOST])),
        expert_layers=tuple(ranges([i for i, d in enumerate(placement.expert_devices)
                                    if d == HOST and profile.layers[i].bytes_of(
                                        TensorKind.EXPERTS)]))))
    if disk_bytes:
        disk = max(inventory.disks, key=lambda d: d.read_gbps, default=None)
        out.append(DeviceUse(id=DISK, kind="disk", name=disk.path if disk else "",
                             weights_bytes=disk_bytes, kv_bytes=0, compute_bytes=0,
                             other_bytes=0, reserve_bytes=0, capacity_bytes=profile.file_bytes))
    return tuple(out)


def spills_of(profile: ModelProfile, trial: Trial, speed: Speed) -> tuple[Spill, ...]:
    """Every move to a slower tier, with its predicted cost per token."""
    placement = trial.layout.placement
    has_gpu = any(d != HOST for d in placement.layer_devices)
    if not has_gpu:
        out: list[Spill] = []
    else:
        host_time = next((d for d in speed.devices if d.device == HOST), None)
        host_ms = (host_time.total_s - host_time.disk_s) * 1000 if host_time else 0.0
        transfer_ms = speed.transfer_s * 1000
        out = []
        cpu_layers = [i for i, d in enumerate(placement.layer_devices) if d == HOST]
        exp_layers = list(trial.layout.expert_host_layers)
        costs = trial.costs
        assert costs is not None
        layer_bytes = sum(costs.core[i] + costs.expert[i] for i in cpu_layers)
        expert_bytes = sum(costs.expert[i] for i in exp_layers)
        total = layer_bytes + expert_bytes
        for kind, layers, nbytes in ((Code.LAYERS_TO_RAM, cpu_layers, layer_bytes),
                                     (Code.EXPERTS_TO_RAM, exp_layers, expert_bytes)):
            if layers:
                share = nbytes / total if total else 0.0
                out.append(Spill(kind, tuple(ranges(layers)), nbytes, HOST,
                                 (host_ms + transfer_ms) * share))
    if trial.disk_bytes:
        host_time = next((d for d in speed.devices if d.device == HOST), None)
        out.append(Spill(Code.WEIGHTS_ON_DISK, (), trial.disk_bytes, DISK,
                         host_time.disk_s * 1000 if host_time else 0.0))
    return tuple(out)


def reasons_of(profile: ModelProfile, trial: Trial, speed: Speed, min_tps: float
               ) -> tuple[tuple[Code, ...], bool]:
    """The plan's reason codes and whether it fits (runs at all)."""
    placement = trial.layout.placement
    reasons: list[Code] = []
    on_gpu = [d for d in placement.layer_devices if d != HOST]
    fits = trial.runnable and not trial.gpu_over
    if not trial.runnable:
        reasons.append(Code.CONTEXT_DOES_NOT_FIT)
    if trial.gpu_over:
        reasons.append(Code.OVERRIDE_DOES_NOT_FIT)
    if trial.disk_bytes:
        # too slow from disk is the reason only of a plan whose KV and buffers fit: one
        # that cannot hold them is not priced (both at once would contradict each other)
        if trial.runnable and speed.decode_tps < min_tps:
            fits = False
            reasons.append(Code.MODEL_LARGER_THAN_MEMORY)
        reasons.append(Code.WEIGHTS_ON_DISK)
    if fits:
        reasons.insert(0, Code.FITS_WITH_DISK_STREAMING if trial.disk_bytes else Code.FITS)
    else:
        reasons.insert(0, Code.DOES_NOT_FIT)
    if not on_gpu:
        reasons.append(Code.CPU_ONLY)
    elif len(on_gpu) == len(placement.layer_devices) and not trial.layout.expert_host_layers:
        reasons.append(Code.ALL_ON_GPU)
    if trial.layout.expert_host_layers and on_gpu:
        reasons.append(Code.EXPERTS_TO_RAM)
    if on_gpu and len(on_gpu) < len(placement.layer_devices):
        reasons.append(Code.LAYERS_TO_RAM)
    return tuple(reasons), fits


def warnings_of(profile: ModelProfile, request: Request, best: Trial, speed: Speed
                ) -> list[Note]:
    """The plan's warnings (codes and numbers)."""
    out: list[Note] = []
    bits = round(bits_of(profile), 2)
    if is_low_bit(profile) and request.task in (TaskKind.AGENT, TaskKind.CODE):
        out.append(Note(Code.LOW_BITS_FOR_TASK, (("bits", bits), ("task", request.task.value))))
    if is_low_bit(profile) and profile.is_moe and speed.spec.mode == SpecMode.MTP:
        out.append(Note(Code.LOW_BITS_MOE_MTP_LOOPS, (("bits", bits),)))
    if best.disk_bytes:
        out.append(Note(Code.WEIGHTS_ON_DISK, (("disk_bytes", best.disk_bytes),)))
    if best.gpu_over:
        out.append(Note(Code.OVERRIDE_DOES_NOT_FIT, ()))
    if any(d == HOST for d in best.layout.placement.layer_devices) and \
            any(d != HOST for d in best.layout.placement.layer_devices):
        out.append(Note(Code.KV_IN_RAM, (("layers", best.layout.n_cpu_layers),)))
    if request.parallel > 1:
        out.append(Note(Code.PARALLEL_KV, (("parallel", request.parallel),
                                           ("cells", best.context * request.parallel))))
    if 0 < speed.decode_tps < CONSTANTS.usable_decode_tps:
        out.append(Note(Code.SLOW_DECODE, (("decode_tps", round(speed.decode_tps, 2)),)))
    return out


def software_notes(inventory: Inventory, speed: Speed) -> list[Note]:
    """A warning per software device (one computing on the CPU) that holds weights: the
    speed model prices it as a GPU it is not, so the plan's speeds are nominal there."""
    out: list[Note] = []
    for d in speed.devices:
        gpu = gpu_of(inventory, d.device)
        if gpu is not None and gpu.software and d.weights_s + d.experts_s > 0:
            out.append(Note(Code.SOFTWARE_DEVICE_SPEED, (("gpu", gpu.index),
                                                         ("name", gpu.name))))
    return out
