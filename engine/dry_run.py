"""A second opinion from llama.cpp: the plan's memory per device against a dry run.

llama.cpp can load a model with ``no_alloc`` ("only load metadata and simulate memory
allocations"; its own ``--fit`` is built on it): the model and a context are created with
the plan's exact parameters on this machine's real devices, no buffer is allocated, and
llama.cpp's memory breakdown says what every buffer type would hold
(:mod:`engine.native.memory_breakdown`). :func:`dry_run` does that; :func:`compare` sets
it against the plan's bytes per device (weights + KV + compute; a GPU's fixed runtime
overhead is not a buffer and is left out of both sides); :func:`confirm` re-plans when
they disagree beyond the margin, with the disagreement given back to the planner as what
it already takes: a GPU's free memory (as a rig file would state it) and the host reserve.
The plan that comes out is dry-run again, so what is shown is what llama.cpp says.

On a GPU no machine here has, this is what catches a buffer the memory model got wrong.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.launch import LaunchSpec, spec_of_plan
from planner.inventory import Inventory
from planner.plan_types import EngineParams

log = logging.getLogger(__name__)

MIB = 1 << 20
MARGIN_PCT = 3.0          # the memory model's goal: every total within 3% ...
UNDER_PCT = 2.0           # ... and never under by more than 2%
FLOOR_BYTES = 16 * MIB    # differences below this never count (rounding, tiny buffers)
HOST = "host"
DRY_RUN_ENV = "LOADOUT_DRY_RUN"


@dataclass(frozen=True)
class DryRun:
    """What llama.cpp would allocate: bytes per llama.cpp device (``CPU`` for host memory,
    ``Vulkan0``, ``CUDA1``, ``RPC0`` ...), split as model / context / compute."""

    devices: Mapping[str, tuple[int, int, int]]
    seconds: float

    def total(self, device: str) -> int:
        """All bytes of ``device`` (0 when llama.cpp puts nothing there)."""
        return sum(self.devices.get(device, (0, 0, 0)))


@dataclass(frozen=True)
class DeviceCheck:
    """One device: the plan's bytes and the dry run's."""

    device: str        # the plan's id: "gpu0", "host"
    predicted: int
    dry_run: int

    @property
    def error_pct(self) -> float:
        """Signed error of the plan in percent (positive: the plan asks for more)."""
        return 100.0 * (self.predicted - self.dry_run) / max(self.dry_run, 1)

    @property
    def agrees(self) -> bool:
        """Within the margin: 3% either way, at most 2% under, or under 16 MiB apart."""
        if abs(self.predicted - self.dry_run) <= FLOOR_BYTES:
            return True
        return -UNDER_PCT <= self.error_pct <= MARGIN_PCT


@dataclass(frozen=True)
class Check:
    """The verdict shown beside a plan: ``confirmed`` or ``corrected`` (or ``differs``
    when a correction was not possible), with the per-device figures."""

    status: str                       # confirmed | corrected | differs
    devices: tuple[DeviceCheck, ...]
    seconds: float
    before: tuple[DeviceCheck, ...] = ()   # the first comparison, when corrected

    def to_json(self) -> dict[str, Any]:
        """The ``dry_run`` entry of a plan document."""
        def rows(checks: tuple[DeviceCheck, ...]) -> list[dict[str, Any]]:
            return [{"device": c.device, "predicted_bytes": c.predicted,
                     "dry_run_bytes": c.dry_run, "error_pct": round(c.error_pct, 2)}
                    for c in checks]

        return {"status": self.status, "devices": rows(self.devices),
                "before": rows(self.before), "seconds": round(self.seconds, 3)}


_checks: dict[int, Check] = {}


def check_of(plan: Any) -> Check | None:
    """The check :func:`confirm_for` made for ``plan`` (``None``: none was made)."""
    return _checks.get(id(plan))


def _remember(plan: Any, check: Check | None) -> None:
    if check is None:
        return
    _checks[id(plan)] = check
    try:
        weakref.finalize(plan, _checks.pop, id(plan), None)
    except TypeError:  # not weak-referenceable: keep only the newest few
        while len(_checks) > 8:
            _checks.pop(next(iter(_checks)))


def enabled() -> bool:
    """``LOADOUT_DRY_RUN=0`` turns the dry run off (it is on by default)."""
    return os.environ.get(DRY_RUN_ENV, "1") != "0"


def confirm_for(path: Any, inventory: Inventory | None, request: Any, plan: Any) -> Any:
    """:func:`confirm` for a caller that only wants the plan to load or show: never
    raises (a dry run that cannot be made leaves the plan as it is), and remembers the
    check for :func:`check_of`. Only a plan of a local file is checked."""
    if (not enabled() or path is None or inventory is None or plan is None
            or not getattr(plan, "devices", None)):
        return plan
    try:
        if not Path(str(path)).is_file() or not on_this_machine(inventory):
            return plan
        plan, check = confirm(str(path), inventory, request, plan)
    except Exception as exc:  # a second opinion must never stop the first
        log.warning("llama.cpp's dry run could not be made: %s: %s", type(exc).__name__, exc)
        return plan
    _remember(plan, check)
    return plan


def on_this_machine(inventory: Inventory) -> bool:
    """Whether the inventory's local GPUs are this engine's devices (a rig file of another
    machine, or a what-if, cannot be dry-run here): each by llama.cpp's name, with the
    memory the engine reports within 10%."""
    from engine.ggml_devices import engine_devices
    from planner.engine_params import device_name

    local = [g for g in inventory.gpus if not g.remote]
    if not local:
        return True
    devices = {d.name: d for d in engine_devices()}
    for g in local:
        name = device_name(inventory, f"gpu{g.index}")
        dev = devices.get(name)
        if dev is None:  # the name is the GPU's engine_device when it was detected here
            return False
        if g.total_bytes and abs(dev.total_bytes - g.total_bytes) > 0.1 * g.total_bytes:
            return False
    return True


def dry_run(spec: LaunchSpec) -> DryRun | None:
    """Load ``spec``'s model and context with ``no_alloc`` and read llama.cpp's breakdown.

    Returns ``None`` where llama.cpp's breakdown cannot be read on this platform, or the
    dry run itself fails (the real load then says why).
    """
    from engine.native import memory_breakdown as mb
    from engine.native.context import context_params
    from engine.native.model import capture_native_log, check_model_file, llama, model_params

    if not mb.supported():
        return None
    check_model_file(spec.model_path)
    lib = llama()
    started = time.perf_counter()
    params = model_params(spec, None)
    params.params.no_alloc = True
    params.params.load_mode = lib.LLAMA_LOAD_MODE_NONE  # as llama.cpp's --fit does
    with capture_native_log(logging.WARNING):
        model = lib.llama_model_load_from_file(spec.model_path.encode(), params.params)
    if not model:
        return None
    try:
        with capture_native_log(logging.WARNING):
            ctx = lib.llama_init_from_model(model, context_params(spec))
        if not ctx:
            return None
        try:
            buffers = mb.memory_breakdown(ctx)
        finally:
            lib.llama_free(ctx)
    finally:
        lib.llama_model_free(model)
    if buffers is None:
        return None
    devices: dict[str, tuple[int, int, int]] = {}
    for b in buffers:
        name = _device_of(b.buffer_type)
        m, c, k = devices.get(name, (0, 0, 0))
        devices[name] = (m + b.model, c + b.context, k + b.compute)
    return DryRun(devices=devices, seconds=time.perf_counter() - started)


def _device_of(buffer_type: str) -> str:
    # Host buffer types (CPU, CPU_Mapped, CPU_REPACK, Vulkan_Host, CUDA_Host) are RAM.
    if buffer_type.upper().startswith("CPU") or buffer_type.endswith("_Host"):
        return "CPU"
    return buffer_type.split("[", 1)[0]  # "RPC0[host:port]" -> "RPC0"


def engine_names(inventory: Inventory, plan_engine: EngineParams | Mapping[str, Any]
                 ) -> dict[str, str]:
    """llama.cpp's device names of the plan's devices (``Vulkan0`` -> ``gpu0``, ``CPU`` ->
    ``host``; a worker's device by the ``RPCn`` name the plan's worker order gives it)."""
    from planner.engine_params import device_name, rpc_device_names

    names = {"CPU": HOST}
    for g in inventory.gpus:
        if not g.remote:
            names[device_name(inventory, f"gpu{g.index}")] = f"gpu{g.index}"
    workers = list(plan_engine.rpc_workers) if isinstance(plan_engine, EngineParams) else [
        str(w) for w in plan_engine.get("rpc_workers") or ()]
    for index, name in rpc_device_names(inventory, workers).items():
        names[name] = f"gpu{index}"
    return names


def predicted(plan: Any) -> dict[str, int]:
    """The plan's buffer bytes per device (a GPU's fixed runtime overhead left out).

    Weights the plan reads from disk count on the host: llama.cpp's breakdown counts the
    whole memory-mapped file as CPU memory, resident or not, so the host is compared as
    "mapped + KV + compute" on both sides (not as a shortfall of RAM).
    """
    from planner.memory import GPU_OVERHEAD_BYTES

    out: dict[str, int] = {}
    mapped = 0
    for d in plan.devices:
        if d.kind == "disk":
            mapped += d.weights_bytes
            continue
        used = d.weights_bytes + d.kv_bytes + d.compute_bytes + d.other_bytes
        if d.kind == "gpu" and used:
            used -= min(GPU_OVERHEAD_BYTES, d.other_bytes)
        out[d.id] = used
    if mapped:
        out[HOST] = out.get(HOST, 0) + mapped
    return out


def compare(plan: Any, dry: DryRun, names: Mapping[str, str]) -> tuple[DeviceCheck, ...]:
    """The plan against the dry run, device by device (devices both leave empty skipped)."""
    want = predicted(plan)
    got: dict[str, int] = {}
    for engine_name, parts in dry.devices.items():
        dev = names.get(engine_name, engine_name)
        got[dev] = got.get(dev, 0) + sum(parts)
    ids = sorted(set(want) | set(got), key=lambda d: (d == HOST, d))
    return tuple(DeviceCheck(d, want.get(d, 0), got.get(d, 0)) for d in ids
                 if want.get(d, 0) or got.get(d, 0))


def corrected_inputs(inventory: Inventory, request: Any, checks: tuple[DeviceCheck, ...]
                     ) -> tuple[Inventory, Any]:
    """The planner's inputs with the dry run's disagreement given back: each GPU's free
    memory moved by what the plan got wrong there (less when it under-predicted, more
    when it over-predicted), the host reserve likewise."""
    by_id = {c.device: c for c in checks if not c.agrees}
    gpus = []
    for g in inventory.gpus:
        c = by_id.get(f"gpu{g.index}")
        if c is None:
            gpus.append(g)
            continue
        free = g.free_bytes + c.predicted - c.dry_run
        gpus.append(replace(g, free_bytes=max(0, min(free, g.total_bytes or free))))
    host = by_id.get(HOST)
    if host is not None:
        reserve = request.host_reserve_bytes + host.dry_run - host.predicted
        request = replace(request, host_reserve_bytes=max(0, reserve))
    return replace(inventory, gpus=tuple(gpus)), request


def confirm(path: str, inventory: Inventory, request: Any, plan: Any,
            planner: Callable[[Inventory, Any], Any] | None = None,
            spec_of: Callable[[Any], LaunchSpec] | None = None) -> tuple[Any, Check | None]:
    """Dry-run ``plan`` of the model at ``path``; when llama.cpp disagrees beyond the
    margin, re-plan once with the corrected inputs and dry-run that plan too.

    Args:
        planner: ``(inventory, request) -> Plan`` (default: :func:`planner.plan.plan` on
            the file's profile).
        spec_of: ``Plan -> LaunchSpec`` (default: the plan's engine parameters).

    Returns:
        The plan to load (the corrected one when a correction was made) and the check
        (``None`` when no dry run could be made here).
    """
    if planner is None:
        from engine.gguf_file import load_profile
        from planner.plan import plan as make_plan

        profile = load_profile(path)

        def planner(inv: Inventory, req: Any) -> Any:
            return make_plan(inv, profile, req)

    if spec_of is None:
        def spec_of(p: Any) -> LaunchSpec:
            return spec_of_plan(path, p)

    first = dry_run(spec_of(plan))
    if first is None:
        return plan, None
    checks = compare(plan, first, engine_names(inventory, plan.engine))
    if all(c.agrees for c in checks):
        return plan, Check("confirmed", checks, first.seconds)
    log.warning("llama.cpp's dry run disagrees with the plan: %s", ", ".join(
        f"{c.device} {c.error_pct:+.1f}%" for c in checks if not c.agrees))
    inventory2, request2 = corrected_inputs(inventory, request, checks)
    plan2 = planner(inventory2, request2)
    second = dry_run(spec_of(plan2))
    if second is None:
        return plan2, Check("differs", checks, first.seconds)
    checks2 = compare(plan2, second, engine_names(inventory2, plan2.engine))
    # the plan's own figures stay its model's: "corrected" says the plan was re-made so
    # that what llama.cpp will allocate fits the real budgets
    return plan2, Check("corrected", checks2, first.seconds + second.seconds, before=checks)
