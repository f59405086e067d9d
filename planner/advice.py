"""Bottleneck and advice: what dominates the time per token, and what would help.

The bottleneck is read off the priced time per token (which device, which bytes). Advice
re-plans what-ifs (a smaller quantization, a MoE model of similar quality, a shorter
context or q8_0 KV, more RAM, faster RAM, a bigger or second GPU, less RAM kept free)
and states each one's predicted decode speed, including the ones that would *not* help
and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from planner.codes import Code
from planner.inventory import Inventory
from planner.plan_types import Advice, Bottleneck, Plan
from planner.profile import ModelProfile, TensorKind
from planner.quant import LADDER, NOMINAL_BITS, rescaled, smaller_tier
from planner.request import Request
from planner.speed import CONSTANTS, DISK, HOST, core_gbps, gpu_of

log = logging.getLogger(__name__)

HELPS = 1.10        # a change "helps" when it buys at least 10% decode speed
MAX_ADVICE = 5


def find_bottleneck(plan: Plan, inventory: Inventory) -> Bottleneck | None:
    """The largest single cost in the time per plain token."""
    speed = plan.predicted
    total = speed.token_s
    if total <= 0:
        return None
    parts: list[tuple[float, str, str]] = [(speed.transfer_s, "transfer", "transfer")]
    for d in speed.devices:
        parts += [(d.weights_s, d.device, "weights"), (d.experts_s, d.device, "experts"),
                  (d.kv_s, d.device, "kv"), (d.overhead_s, d.device, "overhead"),
                  (d.disk_s, DISK, "disk")]
    seconds, device, what = max(parts)
    if what == "disk" or (plan.streams_from_disk and seconds < sum(
            d.disk_s for d in speed.devices) * 2):
        kind = Code.CAPACITY_BOUND
        device, what = DISK, "disk"
        seconds = sum(d.disk_s for d in speed.devices)
    elif what == "transfer":
        kind = Code.TRANSFER_BOUND
    elif what == "overhead":
        kind = Code.OVERHEAD_BOUND
    elif device == HOST and _host_core_bound(plan, inventory):
        kind = Code.COMPUTE_BOUND
    else:
        kind = Code.BANDWIDTH_BOUND
    return Bottleneck(kind, device, what, seconds / total, seconds * 1000)


def _host_core_bound(plan: Plan, inventory: Inventory) -> bool:
    """True when the CPU's cores, not its RAM, limit how fast it reads weights."""
    threads = plan.engine.n_threads
    nominal = inventory.host.bandwidth_gbps * CONSTANTS.cpu_bw_fraction
    return threads * core_gbps(inventory) < nominal


Replan = Callable[[Inventory, ModelProfile, Request], "Plan"]


def advise(inventory: Inventory, profile: ModelProfile, request: Request, plan: Plan,
           replan: Replan) -> tuple[Advice, ...]:
    """What-ifs with their predicted speeds: the ones that help most, then the ones that
    would not (e.g. more RAM when bandwidth-bound)."""
    # what-ifs at the plan's context, so that they compare like with like
    quiet = replace(request, advise=False, context=request.context or plan.context,
                    kv_type=request.kv_type or plan.kv_type)
    now = plan.predicted.decode_tps
    out: list[Advice] = []

    def judge(code: Code, what_if: Plan, **numbers: Any) -> None:
        tps = what_if.predicted.decode_tps
        helps = (tps >= now * HELPS and what_if.fits) or (what_if.fits and not plan.fits) \
            or _runs_where_it_did_not(plan, what_if)
        out.append(Advice(code, tps, what_if.fits, helps, tuple(numbers.items())))

    default_reserve = Request().host_reserve_bytes
    if not plan.fits and request.host_reserve_bytes > default_reserve:
        judge(Code.ADVICE_SMALLER_HOST_RESERVE, replan(inventory, profile, replace(
            quiet, host_reserve_bytes=default_reserve)),
              reserve_bytes=request.host_reserve_bytes,
              ram_bytes=inventory.host.ram_available_bytes)
    _smaller_quant(inventory, profile, plan, quiet, replan, judge)
    if not profile.is_moe:
        judge(Code.ADVICE_MOE_MODEL, replan(inventory, _moe_like(profile), quiet),
              active_share=0.19)
    if plan.kv_type == "f16" and request.kv_type is None:
        judge(Code.ADVICE_KV_Q8_0, replan(inventory, profile, replace(quiet, kv_type="q8_0")),
              context=plan.context)
    if plan.context > 8192:
        shorter = plan.context // 4
        judge(Code.ADVICE_SHORTER_CONTEXT, replan(inventory, profile, replace(
            quiet, context=shorter, kv_type=request.kv_type)), context=shorter)
    host = inventory.host
    more_ram = replace(host, ram_total_bytes=host.ram_total_bytes * 2,
                       ram_available_bytes=host.ram_available_bytes + host.ram_total_bytes)
    judge(Code.ADVICE_MORE_RAM, replan(replace(inventory, host=more_ram), profile, quiet),
          ram_bytes=more_ram.ram_total_bytes)
    faster = replace(host, bandwidth_gbps=host.bandwidth_gbps * 1.5)
    judge(Code.ADVICE_FASTER_RAM, replan(replace(inventory, host=faster), profile, quiet),
          bandwidth_gbps=round(faster.bandwidth_gbps, 1))
    main = next((r for r in plan.roles if r.role.value == "main"), None)
    if main is not None:
        gpu = gpu_of(inventory, main.device)
        assert gpu is not None
        bigger = replace(gpu, total_bytes=gpu.total_bytes * 2,
                         free_bytes=gpu.free_bytes + gpu.total_bytes)
        gpus = tuple(bigger if g.index == gpu.index else g for g in inventory.gpus)
        judge(Code.ADVICE_BIGGER_GPU, replan(inventory.with_gpus(gpus), profile, quiet),
              vram_bytes=bigger.total_bytes)
        second = replace(gpu, drives_display=False)
        judge(Code.ADVICE_SECOND_GPU,
              replan(inventory.with_gpus((*inventory.gpus, second)), profile, quiet),
              gpu=gpu.name)
    helpful = sorted((a for a in out if a.helps), key=lambda a: -a.decode_tps)[:MAX_ADVICE]
    useless = [a for a in out if not a.helps and a.code in (
        Code.ADVICE_MORE_RAM, Code.ADVICE_BIGGER_GPU, Code.ADVICE_SECOND_GPU,
        Code.ADVICE_SMALLER_HOST_RESERVE)]
    if not helpful and plan.fits:  # "nothing to change" is never said of what cannot run
        helpful = [Advice(Code.ADVICE_NO_CHANGE_NEEDED, now, plan.fits, False)]
    return tuple(helpful + useless)


def _runs_where_it_did_not(plan: Plan, what_if: Plan) -> bool:
    """The what-if holds the KV cache and buffers the plan could not (it runs, if slowly)."""
    return Code.CONTEXT_DOES_NOT_FIT in plan.reasons and \
        Code.CONTEXT_DOES_NOT_FIT not in what_if.reasons


def _smaller_quant(inventory: Inventory, profile: ModelProfile, plan: Plan, quiet: Request,
                   replan: Replan, judge: Callable[..., None]) -> None:
    """The next tier down; when the plan does not fit (or streams from disk), the best
    tier down the ladder that would fit."""
    tier = smaller_tier(profile)
    if tier is None:
        return
    if plan.fits and not plan.streams_from_disk:
        judge(Code.ADVICE_SMALLER_QUANT,
              replan(inventory, rescaled(profile, tier, False), quiet), quant=tier)
        return
    tiers = [t for t in LADDER if NOMINAL_BITS[t] <= NOMINAL_BITS[tier]]
    what_if = None
    for name in tiers[:5]:
        what_if = replan(inventory, rescaled(profile, name, False), quiet)
        if what_if.fits and not what_if.streams_from_disk:
            judge(Code.ADVICE_SMALLER_QUANT, what_if, quant=name)
            return
    if what_if is not None:
        judge(Code.ADVICE_SMALLER_QUANT, what_if, quant=tiers[min(4, len(tiers) - 1)])


def _moe_like(profile: ModelProfile) -> ModelProfile:
    """What-if: a MoE model of similar quality (1.5x the FFN bytes as 64 experts, 8 used)."""
    layers = []
    for layer in profile.layers:
        ffn = layer.bytes_of(TensorKind.FFN)
        kinds = tuple((k, b) for k, b in layer.bytes_by_kind if k != TensorKind.FFN)
        layers.append(replace(layer, bytes_by_kind=(*kinds, (TensorKind.FFN, ffn // 64),
                                                    (TensorKind.EXPERTS, ffn * 3 // 2))))
    return replace(profile, layers=tuple(layers), expert_count=64, expert_used_count=8,
                   name=f"{profile.name} (MoE what-if)")
