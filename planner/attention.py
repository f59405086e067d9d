"""Flash attention or not: on a CPU, llama.cpp's flash-attention kernel reads a deep KV
cache several times slower than the ordinary matmul path does (see
``SpeedConstants.cpu_kv_cost_noflash``), so a model that runs entirely on CPUs (this
machine's, or RPC workers serving theirs) with an f16 cache decodes faster without it.
A quantized V cache needs flash attention, and any GPU prefers it: those plans keep it."""

from __future__ import annotations

from dataclasses import replace

from planner.codes import Code
from planner.plan_types import Note
from planner.speed import HOST
from planner.trials import Context, Trial, trial

UNQUANTIZED_KV = ("f16", "bf16", "f32")
REFERENCE_DEPTH = 4096


def cpu_only(ctx: Context, t: Trial) -> bool:
    """Every layer and the output run on a CPU: this machine's, or a worker's that serves
    its CPU."""
    cpus = {HOST} | {f"gpu{g.index}" for g in ctx.inventory.gpus if g.worker_cpu}
    pl = t.layout.placement
    return all(d in cpus for d in (*pl.layer_devices, pl.output_device))


def choose_flash(ctx: Context, best: Trial) -> tuple[Trial, Note | None]:
    """``best`` without flash attention when the user asks for that, or when it is the
    faster way to run it and still fits as well (priced with the memory model: the
    attention buffers grow without it)."""
    pinned = ctx.request.flash_attn
    if pinned is not None:
        if pinned or best.kv_type not in UNQUANTIZED_KV:
            code = Code.FLASH_USER if pinned else Code.FLASH_NEEDED_BY_KV
            return best, Note(code, (("kv_type", best.kv_type),))
        return _without(ctx, best), Note(Code.FLASH_USER_OFF, ())
    if not best.config.flash_attn or not cpu_only(ctx, best) or best.kv_type not in UNQUANTIZED_KV:
        return best, None
    t = _without(ctx, best)
    if not t.runnable or t.disk_bytes > best.disk_bytes:
        return best, None
    # the numbers behind it: decode at a depth where the cache matters (the request's own
    # depth when it states a deeper one)
    depth = max(ctx.request.depth, min(best.context, REFERENCE_DEPTH))
    deep = replace(ctx, request=replace(ctx.request, depth=depth))
    with_fa, without = (trial(deep, best.roles, best.kv_type, best.context,
                              best.config.load_mtp, n_ubatch=best.config.n_ubatch, flash=f)
                        for f in (True, False))
    return t, Note(Code.FLASH_OFF_CPU, (("depth", depth),
                                        ("with_tps", round(with_fa.speed.decode_tps, 1)),
                                        ("without_tps", round(without.speed.decode_tps, 1))))


def _without(ctx: Context, best: Trial) -> Trial:
    return trial(ctx, best.roles, best.kv_type, best.context, best.config.load_mtp,
                 exact_memory=True, n_ubatch=best.config.n_ubatch, flash=False)
