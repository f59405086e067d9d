"""Priced arrangements ("trials"): one placement, context and KV type, with its speed.

A plan tries many arrangements, so trials price memory with per-block arithmetic plus
the fixed per-device costs (compute buffers, runtime overhead) the memory model reported
for this model; :func:`exact` then re-checks the chosen one with
:func:`planner.memory.estimate`, which has the last word.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from planner.inventory import Backend, Gpu, Inventory
from planner.memory import DeviceMemory, MemoryConfig, Placement, estimate
from planner.placement import (
    Budget,
    LayerCosts,
    LayerTable,
    Layout,
    fill_layout,
    layer_costs,
    layer_table,
    pinned_layout,
    token_loads,
)
from planner.profile import ModelProfile
from planner.quant import bits_of, is_iquant
from planner.request import Request
from planner.roles import GpuRole, active
from planner.speed import HOST, Speed, predict

log = logging.getLogger(__name__)

KV_QUALITY = {"f16": 1.0, "q8_0": 0.98, "q4_0": 0.93}
N_UBATCH = 512
N_UBATCH_SPILLED = 2048   # host weights cross PCIe once per micro-batch in prefill
MARGIN = 64 << 20


@dataclass
class Context:
    """What every trial of one plan shares (built once per :func:`plan` call)."""

    inventory: Inventory
    profile: ModelProfile
    request: Request
    table: LayerTable
    bits_per_weight: float
    iquant: bool
    fixed: dict[str, int] = field(default_factory=dict)   # compute + overhead per device
    extra: dict[str, int] = field(default_factory=dict)   # learned from exact checks
    costs: dict[tuple[str, int, int, int, bool], LayerCosts] = field(default_factory=dict)

    @staticmethod
    def of(inventory: Inventory, profile: ModelProfile, request: Request,
           like: Context | None = None) -> Context:
        """A context; ``like`` (a context of the same profile) lends its tables."""
        if like is not None and like.profile is profile:
            return Context(inventory, profile, request, like.table, like.bits_per_weight,
                           like.iquant, dict(like.fixed), costs=like.costs)
        ctx = Context(inventory, profile, request, layer_table(profile),
                      profile.bits_per_weight or bits_of(profile), is_iquant(profile))
        if like is not None:  # a what-if of another quantization: buffers are shape-bound
            ctx.fixed.update(like.fixed)
        return ctx


@dataclass(frozen=True)
class Trial:
    """One priced arrangement (before speculation and advice)."""

    roles: tuple[GpuRole, ...]
    kv_type: str
    context: int
    layout: Layout
    memory: tuple[DeviceMemory, ...]
    config: MemoryConfig
    speed: Speed
    runnable: bool           # KV and buffers fit; weights may stream from disk
    gpu_over: bool           # a GPU is over its budget (only with pins)
    disk_bytes: int
    host_budget: int
    costs: LayerCosts | None = field(repr=False, compare=False, default=None)

    @property
    def score(self) -> float:
        ok = 1.0 if self.runnable and not self.gpu_over else 1e-3
        return self.speed.decode_tps * KV_QUALITY[self.kv_type] * ok


def layer_order(inventory: Inventory) -> list[Gpu]:
    """GPUs in the order llama.cpp splits layers over them: workers' devices first."""
    return sorted(inventory.gpus, key=lambda g: (not g.remote, g.index))


def op_limits(inventory: Inventory) -> tuple[tuple[str, int], ...]:
    """Per GPU device, the largest tensor its kernels take (those that have a limit)."""
    return tuple((f"gpu{g.index}", g.max_tensor_bytes) for g in inventory.gpus
                 if g.max_tensor_bytes)


def reorder_devices(inventory: Inventory) -> tuple[str, ...]:
    """GPU devices whose backend reorders the graph before allocating it (Vulkan)."""
    return tuple(f"gpu{g.index}" for g in inventory.gpus
                 if g.backend is Backend.VULKAN and not g.remote)


def host_budget(inventory: Inventory, request: Request) -> int:
    """RAM the model may use: available minus the desktop reserve."""
    return max(0, inventory.host.ram_available_bytes - request.host_reserve_bytes)


def _config(ctx: Context, kv: str, context: int, load_mtp: bool,
            n_ubatch: int = N_UBATCH, flash: bool = True) -> MemoryConfig:
    n_seq = ctx.request.parallel
    return MemoryConfig(n_ctx=context * n_seq, n_seq=n_seq, type_k=kv, type_v=kv,
                        flash_attn=flash, n_batch=max(2048, n_ubatch), n_ubatch=n_ubatch,
                        load_mtp=load_mtp)


def _fixed(ctx: Context, config: MemoryConfig, gpus: tuple[GpuRole, ...]) -> dict[str, int]:
    """Per-device bytes besides weights and KV, from the memory model (once per plan)."""
    if not ctx.fixed:
        n = ctx.profile.n_layers
        main = gpus[0].device if gpus else HOST
        for m in estimate(ctx.profile, config, Placement.all_on(main, n),
                          op_limits(ctx.inventory), reorder_devices(ctx.inventory)):
            ctx.fixed[m.device] = m.compute_bytes + m.output_bytes + m.overhead_bytes
        if main != HOST:  # a CPU running layers needs about what a GPU running them does
            ctx.fixed["gpu*"] = ctx.fixed.get(main, 0)
            ctx.fixed["host*"] = ctx.fixed.get(HOST, 0) + ctx.fixed.get(main, 0)
    return ctx.fixed


def _quick_memory(ctx: Context, costs: LayerCosts, layout: Layout,
                  fixed: dict[str, int]) -> tuple[DeviceMemory, ...]:
    p = ctx.profile
    pl = layout.placement
    weights: dict[str, int] = {HOST: p.token_embd_bytes + p.other_bytes}
    kv: dict[str, int] = {HOST: 0}
    for dev, exp, core, expert, cache in zip(pl.layer_devices, pl.expert_devices, costs.core,
                                             costs.expert, costs.kv, strict=True):
        weights[dev] = weights.get(dev, 0) + core
        weights[exp] = weights.get(exp, 0) + expert
        kv[dev] = kv.get(dev, 0) + cache
    out = pl.output_device
    weights[out] = weights.get(out, 0) + p.output_bytes + (
        p.token_embd_bytes if p.tied_output and out != HOST else 0)
    result = []
    cpu_layers = any(d == HOST for d in pl.layer_devices)
    for dev in sorted(weights, key=lambda d: (d != HOST, d)):
        if dev == HOST:
            other = fixed.get("host*", fixed.get(HOST, 0)) if cpu_layers else fixed.get(HOST, 0)
        else:
            other = fixed.get(dev, fixed.get("gpu*", 0)) + ctx.extra.get(dev, 0)
        result.append(DeviceMemory(dev, weights[dev], kv.get(dev, 0), other, 0, 0))
    return tuple(result)


def trial(ctx: Context, roles: tuple[GpuRole, ...], kv: str, context: int,
          load_mtp: bool = False, exact_memory: bool = False,
          n_ubatch: int = N_UBATCH, flash: bool = True) -> Trial:
    """Place and price one arrangement.

    Args:
        exact_memory: price memory with the memory model itself (slower) instead of
            per-block arithmetic (needed for ``flash`` False: its buffers differ).
        flash: run flash attention.
    """
    inventory, profile, request = ctx.inventory, ctx.profile, ctx.request
    gpus = active(roles)
    if request.n_ubatch:
        n_ubatch = request.n_ubatch
    config = _config(ctx, kv, context, load_mtp, n_ubatch, flash)
    key = (kv, config.n_ctx, config.n_seq, request.depth, load_mtp)
    costs = ctx.costs.get(key)
    if costs is None:
        costs = ctx.costs[key] = layer_costs(ctx.table, kv, config.n_ctx, config.n_seq,
                                             request.depth, load_mtp)
    budgets = {g.device: g.budget_bytes for g in gpus}
    fixed = _fixed(ctx, config, gpus)
    if request.pins_placement:
        layout = pinned_layout(profile, [f"gpu{g.index}" for g in layer_order(inventory)
                                         if any(a.gpu == g.index for a in gpus)],
                               gpus[0].device if gpus else HOST, request.n_gpu_layers,
                               request.n_cpu_moe, request.tensor_split)
    else:
        overhead = {g.device: fixed.get(g.device, fixed.get("gpu*", 0))
                    + ctx.extra.get(g.device, 0) for g in gpus}
        output = profile.output_bytes + (profile.token_embd_bytes if profile.tied_output
                                         else 0)  # a tied output is copied to the GPU
        remote = {f"gpu{g.index}" for g in inventory.gpus if g.remote}
        layout = fill_layout(profile, costs, [Budget(g.device, budgets[g.device],
                                                     g.device in remote)
                                              for g in gpus], overhead, output)
    memory = (tuple(estimate(profile, config, layout.placement, op_limits(inventory),
                             reorder_devices(inventory))) if exact_memory
              else _quick_memory(ctx, costs, layout, fixed))
    return _priced(ctx, roles, kv, context, config, costs, layout, memory, budgets)


def _priced(ctx: Context, roles: tuple[GpuRole, ...], kv: str, context: int,
            config: MemoryConfig, costs: LayerCosts, layout: Layout,
            memory: tuple[DeviceMemory, ...], budgets: dict[str, int]) -> Trial:
    inventory, request = ctx.inventory, ctx.request
    by_dev = {m.device: m for m in memory}
    gpu_over = any(by_dev[d].total_bytes > b for d, b in budgets.items() if d in by_dev)
    unified = sum(by_dev[f"gpu{g.index}"].total_bytes for g in inventory.gpus
                  if g.unified_memory and f"gpu{g.index}" in by_dev)
    h_budget = max(0, host_budget(inventory, request) - unified)
    host = by_dev.get(HOST)
    host_weights = host.weights_bytes if host else 0
    host_other = (host.total_bytes - host.weights_bytes) if host else 0
    runnable = host_other <= h_budget
    # only weights can stay on disk (mmapped): never more than the host holds, whatever
    # the budget (KV and buffers beyond it make the trial not runnable instead)
    disk = min(host_weights, max(0, host_weights + host_other - h_budget))
    disk_fraction = min(1.0, disk / host_weights) if host_weights else 0.0
    loads, hops = token_loads(ctx.profile, costs, layout.placement, disk_fraction,
                              ctx.bits_per_weight, ctx.iquant)
    speed = predict(inventory, loads, hops, ctx.profile.n_embd, inventory.host.cores,
                    request.prompt_tokens, request.depth, config.n_ubatch,
                    flash=config.flash_attn)
    return Trial(roles, kv, context, layout, memory, config, speed, runnable, gpu_over,
                 disk, h_budget, costs)


def exact(ctx: Context, t: Trial) -> Trial:
    """Re-check ``t`` with the memory model; re-place with tighter budgets if it
    overflows a GPU (up to a few rounds)."""
    for _ in range(4):
        memory = tuple(estimate(ctx.profile, t.config, t.layout.placement,
                                op_limits(ctx.inventory), reorder_devices(ctx.inventory)))
        budgets = {g.device: g.budget_bytes for g in active(t.roles)}
        assert t.costs is not None
        checked = _priced(ctx, t.roles, t.kv_type, t.context, t.config, t.costs, t.layout,
                          memory, budgets)
        over = {m.device: m.total_bytes - budgets[m.device] for m in memory
                if m.device in budgets and m.total_bytes > budgets[m.device]}
        if not over or ctx.request.pins_placement:
            return checked
        for dev, excess in over.items():
            ctx.extra[dev] = ctx.extra.get(dev, 0) + excess + MARGIN
        t = trial(ctx, t.roles, t.kv_type, t.context, t.config.load_mtp,
                  exact_memory=not t.config.flash_attn, n_ubatch=t.config.n_ubatch,
                  flash=t.config.flash_attn)
    return replace(checked)
