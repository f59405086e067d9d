"""``plan(inventory, profile, request) -> Plan``: where every byte goes, and how fast.

The planner tries the arrangements worth trying (Main alone or with Helpers; f16, q8_0
or q4_0 KV), places each with the spill order of :mod:`planner.placement`, checks it with
the memory model, prices it with :mod:`planner.speed`, and keeps the fastest that fits.
User pins (``Request`` fields named after llama.cpp options) are honoured exactly and
priced, with a warning when the planner's own choice would have been faster.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace

from planner import embedding_plan as emb
from planner.advice import advise, find_bottleneck
from planner.attention import choose_flash
from planner.codes import Code
from planner.engine_params import engine_params
from planner.ggml_types import KvType
from planner.inventory import Inventory
from planner.machine_fit import calibrate, run_features
from planner.plan_report import devices_of, reasons_of, software_notes, spills_of, warnings_of
from planner.plan_types import (
    SCHEMA,
    Advice,
    Bottleneck,
    DeviceUse,
    EngineParams,
    MachineCorrection,
    Note,
    Plan,
    Spill,
)
from planner.profile import ModelProfile
from planner.projector import ProjectorProfile
from planner.request import Priority, Request, Role, SpecMode
from planner.roles import GpuRole, candidate_roles, with_role
from planner.speculation import choose_spec, draft_bytes, drafter_device, with_drafter
from planner.speed import DISK, HOST, NO_SPEC, SpecOutcome, Speed, spec_decode_tps
from planner.trials import N_UBATCH_SPILLED, Context, Trial, exact, trial
from planner.vision_plan import projector_room, with_projector

log = logging.getLogger(__name__)

MIN_CONTEXT = 4096
GOOD_CONTEXT = 32768
MIN_RUNNABLE_TPS = 0.1      # a token every 10 s: "cannot run"
DRAFTERS = (SpecMode.DRAFT, SpecMode.DFLASH)  # modes that load a second model


def _context_cap(profile: ModelProfile, request: Request) -> int:
    train = profile.n_ctx_train or GOOD_CONTEXT
    if request.rope_scaling and request.context:
        return request.context
    return train


def plan(inventory: Inventory, profile: ModelProfile, request: Request) -> Plan:
    """Plan ``profile`` on ``inventory`` for ``request``. Never raises for "does not fit".

    Args:
        inventory: the machine (detected or from a rig file).
        profile: the model, from its GGUF header.
        request: context, slots, task and the user's pins.

    Returns:
        The :class:`Plan`, with ``fits`` False and reason codes when it cannot run; its
        prediction corrected by ``request.machine_runs`` when there are any (the raw one
        kept in ``raw_predicted``). With ``request.projector``, the projector's memory is
        held back first (:func:`plan_with_projector`).
    """
    # the embedding context is held back first, as a projector is
    if request.embedding_context is not False and emb.plans_embeddings(profile, request):
        base = emb.base_request(profile, request)
        held, less = emb.embedding_room(inventory, plan(inventory, profile, base), profile)
        return emb.with_embeddings(plan(less, profile, base), profile, held)
    if request.projector is not None:
        return plan_with_projector(inventory, profile, replace(request, projector=None),
                                   request.projector, request.projector_offload)
    the_plan = _plan(inventory, profile, request, exact_check=True, like=None)
    if request.machine_runs:
        the_plan = calibrate(inventory, profile, the_plan, request.machine_runs)
    # what the engine records each finished request with (engine/run_records.py)
    features = json.dumps(run_features(inventory, profile, the_plan), separators=(",", ":"))
    return replace(the_plan, engine=replace(the_plan.engine, run_features=features))


def plan_with_projector(inventory: Inventory, profile: ModelProfile, request: Request,
                        projector: ProjectorProfile, offload: bool = True) -> Plan:
    """The plan of ``profile`` with ``projector`` beside it (on the main GPU when
    ``offload`` and the plan has one, else in host RAM): the model is planned once to
    learn the main GPU, then again in what the projector leaves
    (:mod:`planner.vision_plan`)."""
    first = plan(inventory, profile, request)
    use, less = projector_room(inventory, first, projector, offload)
    return with_projector(plan(less, profile, request), use, projector)


def _plan(inventory: Inventory, profile: ModelProfile, request: Request, exact_check: bool,
          like: Context | None) -> Plan:
    """:func:`plan`, optionally without the final memory-model check (what-ifs), reusing
    the tables and fixed per-device costs of a plan of the same model."""
    decisions: list[Note] = []
    warnings: list[Note] = []
    cap = _context_cap(profile, request)
    if request.context is not None:
        context = min(request.context, cap)
        decisions.append(Note(Code.CONTEXT_USER, (("context", context),)))
        if request.context > cap:
            warnings.append(Note(Code.CONTEXT_CAPPED_TO_TRAIN,
                                 (("asked", request.context), ("train", cap))))
        elif request.rope_scaling and request.context > (profile.n_ctx_train or 0):
            warnings.append(Note(Code.CONTEXT_ABOVE_TRAIN,
                                 (("context", context), ("train", profile.n_ctx_train))))
    else:
        # priority "context": start from the training context (shrunk below if needed)
        context = cap if request.priority == Priority.CONTEXT else min(GOOD_CONTEXT, cap)
    ctx = Context.of(inventory, profile, request, like)
    base_roles = candidate_roles(inventory, request)
    best = _best_arrangement(ctx, base_roles, context)
    # too little memory for the KV cache, or weights pushed to disk by it: shorten the
    # context (with a warning) rather than stream from disk
    while (not best.runnable or best.disk_bytes) and request.context is None \
            and best.context > MIN_CONTEXT:
        shorter = _best_arrangement(ctx, base_roles, max(MIN_CONTEXT, best.context // 2))
        if best.runnable and shorter.disk_bytes >= best.disk_bytes:
            break
        best = shorter
    before_spec = best
    spec, spec_notes, best = choose_spec(
        inventory, profile, request, best,
        lambda t, mtp: trial(ctx, t.roles, t.kv_type, t.context, mtp))
    decisions += spec_notes
    drafter = drafter_device(spec.mode, request, before_spec)
    if drafter is not None and drafter != HOST:  # later trials leave it room on that GPU
        ctx.extra[drafter] = ctx.extra.get(drafter, 0) + draft_bytes(
            request.draft_profile, before_spec.config.n_ctx)  # type: ignore[arg-type]
    spec_trial = best
    base = best
    if request.context is None:
        best = _grow_context(ctx, best, cap)
    if exact_check:  # the real plan; what-ifs skip these refinements
        grown = _bigger_ubatch(ctx, best)
        best = exact(ctx, grown)
        if request.context is None and not _same_tiers(best, grown):
            # the memory model found less room than the block arithmetic did: give back
            # context, not weights (its extra bytes are now known to the trials)
            again = trial(ctx, base.roles, base.kv_type, base.context, base.config.load_mtp)
            best = exact(ctx, _grow_context(ctx, again, cap))
        decisions.append(_kv_note(ctx, best))
        best, flash_note = choose_flash(ctx, best)
        if flash_note is not None:
            decisions.append(flash_note)
    if request.context is None:
        decisions.append(Note(Code.CONTEXT_FROM_BUDGET, (("context", best.context),
                                                         ("train", profile.n_ctx_train))))
        if best.context >= cap and cap < GOOD_CONTEXT:
            decisions.append(Note(Code.CONTEXT_TRAIN_LIMIT, (("train", cap),)))
        elif best.context < GOOD_CONTEXT:
            warnings.append(Note(Code.CONTEXT_BELOW_32K, (("context", best.context),)))
    if drafter is not None and (best is not spec_trial or spec_trial is before_spec):
        # the drafter's memory is held in the final arrangement (re-placed since, or a
        # draft model, which speculation prices without holding)
        assert request.draft_profile is not None
        best = with_drafter(best, drafter, draft_bytes(request.draft_profile,
                                                       best.config.n_ctx))
    remote_decisions, remote_warnings = _remote_notes(ctx, best)
    decisions += remote_decisions
    warnings += remote_warnings
    speed = replace(best.speed, decode_tps=spec_decode_tps(best.speed.token_s, spec), spec=spec)
    return _assemble(ctx, best, speed, decisions, warnings, exact_check)


def _kv_note(ctx: Context, best: Trial) -> Note:
    """Why this KV type, with the trade-off in numbers when it is not f16."""
    if ctx.request.kv_type:
        return Note(Code.KV_USER, (("kv_type", best.kv_type),))
    if best.kv_type == "f16":
        return Note(Code.KV_F16, (("kv_type", "f16"),))
    f16 = trial(ctx, best.roles, "f16", best.context, best.config.load_mtp)
    f16_fits = _all_resident(f16) or (f16.runnable and not f16.gpu_over and _same_tiers(
        f16, best))
    q8 = best.kv_type == "q8_0"
    if f16_fits:
        code = Code.KV_Q8_0_BUYS_CONTEXT if q8 else Code.KV_Q4_0_BUYS_CONTEXT
    else:
        code = Code.KV_Q8_0_KEEPS_GPU if q8 else Code.KV_Q4_0_KEEPS_GPU
    return Note(code, (("kv_type", best.kv_type),
                       ("decode_tps", round(best.speed.decode_tps, 2)),
                       ("f16_decode_tps", round(f16.speed.decode_tps, 2)),
                       ("quality", "near_lossless" if q8 else "small_loss")))


def _bigger_ubatch(ctx: Context, best: Trial) -> Trial:
    """With weights in RAM and a GPU, prefill copies them over PCIe per micro-batch: a
    larger micro-batch pays that copy 4x less often, if its buffers still fit."""
    if ctx.request.n_ubatch:
        return best  # the user's -ub
    pl = best.layout.placement
    on_gpu = any(d != HOST for d in pl.layer_devices)
    spilled = any(d == HOST for d in pl.layer_devices) or any(
        d == HOST for d in pl.expert_devices)
    if not (on_gpu and spilled):
        return best
    t = trial(ctx, best.roles, best.kv_type, best.context, best.config.load_mtp,
              exact_memory=True, n_ubatch=N_UBATCH_SPILLED)
    if _same_tiers(t, best) and t.runnable and not t.gpu_over:
        return t
    return best


def _kv_choice(ctx: Context, roles: tuple[GpuRole, ...], context: int) -> Trial:
    """f16 KV unless q8_0 / q4_0 keeps more on the GPU or off the disk, or is needed for
    the context to fit at all (priced, quality-weighted)."""
    if ctx.request.kv_type:
        return trial(ctx, roles, ctx.request.kv_type, context)
    f16 = trial(ctx, roles, "f16", context)
    if _all_resident(f16):
        return f16
    best = f16
    for kv in ("q8_0", "q4_0"):
        if not kv_rows_whole(ctx.profile, kv):
            continue  # llama.cpp refuses the context
        t = trial(ctx, roles, kv, context)
        if _keeps_more(t, f16) and _score(ctx, t) > _score(ctx, best):
            best = t
    return best


def kv_rows_whole(profile: ModelProfile, kv_type: str) -> bool:
    """Whether every attention block's K and V rows are whole blocks of ``kv_type``:
    llama.cpp refuses a quantized cache otherwise ("K cache type q8_0 with block size 32
    does not divide n_embd_head_k=16")."""
    block = KvType.of(kv_type).ggml.block_size
    return all(d % block == 0 for la in profile.layers if la.n_head_kv
               for d in (la.head_dim_k, la.head_dim_v) if d)


def _gpu_weights(t: Trial) -> int:
    return sum(m.weights_bytes for m in t.memory if m.device != HOST)


def _keeps_more(q: Trial, f16: Trial) -> bool:
    """True when a quantized KV cache buys something f16 cannot: the context fitting at
    all, weights kept on a GPU, or fewer bytes streamed from disk."""
    if not f16.runnable or f16.gpu_over:
        return q.runnable and not q.gpu_over
    return _gpu_weights(q) > _gpu_weights(f16) or q.disk_bytes < f16.disk_bytes


KV_QUALITY_FIRST = {"f16": 1.0, "q8_0": 0.85, "q4_0": 0.6}


def _score(ctx: Context, t: Trial) -> float:
    """Decode speed weighted by KV quality (more so when quality is the priority)."""
    if ctx.request.priority == Priority.QUALITY:
        ok = 1.0 if t.runnable and not t.gpu_over else 1e-3
        return t.speed.decode_tps * KV_QUALITY_FIRST[t.kv_type] * ok
    return t.score


def _all_resident(t: Trial) -> bool:
    pl = t.layout.placement
    on_gpu = any(d != HOST for d in pl.layer_devices)
    return (t.runnable and not t.disk_bytes and not t.gpu_over and on_gpu
            and all(d != HOST for d in pl.layer_devices)
            and all(d != HOST for d in pl.expert_devices))


def _best_arrangement(ctx: Context, roles: tuple[GpuRole, ...], context: int) -> Trial:
    """The best of: KV types x (Main alone, Main + each priced Helper)."""
    request = ctx.request
    best = _kv_choice(ctx, roles, context)
    if request.roles is not None or request.tensor_split is not None:
        return best
    helpers = [r for r in best.roles if r.role == Role.HELPER]
    # price each Helper: drop it when the whole is as fast without it
    for h in sorted(helpers, key=lambda r: r.score):
        used = any(d == h.device for d in best.layout.placement.layer_devices)
        if not used:
            best = replace(best, roles=with_role(best.roles, h.gpu, Role.OFF,
                                                 Code.ROLE_OFF_NOT_NEEDED))
            continue
        without = with_role(best.roles, h.gpu, Role.OFF, _off_code(ctx, h.gpu))
        alt = _kv_choice(ctx, without, context)
        # a helper that barely speeds decode but slows prompts a lot is not worth it
        slower_prompts = (alt.runnable and not alt.disk_bytes
                          and best.speed.ttft_s > 1.5 * alt.speed.ttft_s
                          and _score(ctx, best) < 1.1 * _score(ctx, alt))
        if _score(ctx, alt) >= _score(ctx, best) * 0.98 or slower_prompts:
            best = alt
        else:
            needed = alt.disk_bytes > best.disk_bytes or alt.speed.decode_tps < \
                best.speed.decode_tps * 0.5
            best = replace(best, roles=with_role(
                best.roles, h.gpu, Role.HELPER,
                Code.ROLE_HELPER_NEEDED if needed else Code.ROLE_HELPER_FASTER))
    return _local_if_as_fast(ctx, best, context)


def _remote_gpus(ctx: Context) -> set[int]:
    return {g.index for g in ctx.inventory.gpus if g.remote}


def _off_code(ctx: Context, gpu: int) -> Code:
    """Why a GPU priced away is off: a worker on this machine cannot add speed."""
    same = any(g.index == gpu and g.remote and g.same_host for g in ctx.inventory.gpus)
    return Code.ROLE_OFF_SAME_HOST if same else Code.ROLE_OFF_SLOWER


def _local_if_as_fast(ctx: Context, best: Trial, context: int) -> Trial:
    """With no local GPU a worker's device is Main: keep the model on this machine when
    that is as fast and keeps as much off the disk."""
    remote = _remote_gpus(ctx)
    main = next((r for r in best.roles if r.role == Role.MAIN), None)
    if main is None or main.gpu not in remote:
        return best
    roles = best.roles
    for r in best.roles:
        if r.gpu in remote and r.role != Role.OFF:
            roles = with_role(roles, r.gpu, Role.OFF, _off_code(ctx, r.gpu))
    alt = _kv_choice(ctx, roles, context)
    if alt.runnable and alt.disk_bytes <= best.disk_bytes and \
            _score(ctx, alt) >= _score(ctx, best) * 0.98:
        return alt
    return best


def _remote_notes(ctx: Context, best: Trial) -> tuple[list[Note], list[Note]]:
    """Decisions and warnings about workers' devices: which hold layers, what their link
    costs per token, and a worker on this machine (no speed to gain)."""
    remote = [g for g in ctx.inventory.gpus if g.remote]
    if not remote:
        return [], []
    layer_devs = set(best.layout.placement.layer_devices)
    used = [g for g in remote if f"gpu{g.index}" in layer_devs]
    if not used:
        return [Note(Code.REMOTE_NOT_USED, (("workers", len({g.endpoint for g in remote})),))
                ], []
    by_dev = {t.device: t for t in best.speed.devices}
    roles = {r.gpu: r for r in best.roles}
    decisions = []
    for g in used:
        time = by_dev.get(f"gpu{g.index}")
        role = roles.get(g.index)
        reason = role.reason if role is not None else None
        why = {Code.ROLE_HELPER_NEEDED: Code.REMOTE_NEEDED_FOR_FIT.value,
               Code.ROLE_HELPER_USER: "user", Code.ROLE_MAIN_USER: "user"}.get(
            reason, Code.REMOTE_FASTER.value) if reason else Code.REMOTE_FASTER.value
        decisions.append(Note(Code.REMOTE_LAYERS, (
            ("gpu", g.index), ("endpoint", g.endpoint), ("why", why),
            ("link_gbps", round(g.link_gbps, 3)),
            ("link_latency_ms", round(g.link_latency_s * 1e3, 3)),
            ("device_ms_per_token", round(time.total_s * 1e3, 3) if time else 0.0),
            ("transfer_ms_per_token", round(best.speed.transfer_s * 1e3, 3)))))
    warnings = [Note(Code.SAME_HOST, (("gpu", g.index), ("endpoint", g.endpoint)))
                for g in used if g.same_host]
    return decisions, warnings


def _grow_context(ctx: Context, best: Trial, cap: int) -> Trial:
    """Grow the context into what is left, without moving weights to a slower tier."""
    if best.context >= cap or not best.runnable:
        return best

    def at(n: int) -> Trial | None:
        t = trial(ctx, best.roles, best.kv_type, n, best.config.load_mtp)
        return t if _same_tiers(t, best) and t.runnable and not t.gpu_over else None

    top = at(cap)
    if top is not None:
        return top
    lo, hi, keep = best.context, cap, best
    while hi - lo >= 4096:
        mid = (lo + hi) // 2 // 1024 * 1024
        t = at(mid)
        if t is not None:
            lo, keep = mid, t
        else:
            hi = mid
    return keep


def _same_tiers(a: Trial, b: Trial) -> bool:
    pa, pb = a.layout.placement, b.layout.placement
    return (pa.layer_devices == pb.layer_devices and pa.expert_devices == pb.expert_devices
            and a.disk_bytes <= b.disk_bytes)


def _assemble(ctx: Context, best: Trial, speed: Speed, decisions: list[Note],
              warnings: list[Note], real: bool) -> Plan:
    inventory, profile, request = ctx.inventory, ctx.profile, ctx.request

    devices = devices_of(inventory, profile, best)
    spills = spills_of(profile, best, speed)
    reasons, fits = reasons_of(profile, best, speed, MIN_RUNNABLE_TPS)
    warnings += warnings_of(profile, request, best, speed)
    warnings += software_notes(inventory, speed)
    plan_ = Plan(
        fits=fits, reasons=reasons, roles=best.roles, devices=devices, context=best.context,
        parallel=request.parallel, kv_type=best.kv_type, flash_attn=best.config.flash_attn,
        quant=profile.file_type, speculative=speed.spec, predicted=speed,
        warnings=tuple(warnings), engine=_with_spec(engine_params(inventory, profile, request,
                                                                  best), speed.spec, request),
        spills=spills, decisions=tuple(decisions), model=profile.name, layout=best.layout,
        draft_model=request.draft_path if speed.spec.mode in DRAFTERS else None)
    if plan_.speed_nominal:  # no bottleneck or what-if speeds to tell: none are predicted
        return plan_
    plan_ = replace(plan_, bottleneck=find_bottleneck(plan_, inventory))
    if real and (request.pins_placement or request.kv_type or request.spec
                 or request.flash_attn is not None):
        plan_ = _price_override(inventory, profile, request, plan_)
    if request.advise:
        def what_if(inv: Inventory, prof: ModelProfile, req: Request) -> Plan:
            return _plan(inv, prof, req, exact_check=False, like=ctx)

        plan_ = replace(plan_, advice=advise(inventory, profile, request, plan_, what_if))
    return plan_


def _with_spec(params: EngineParams, spec: SpecOutcome, request: Request) -> EngineParams:
    """The engine parameters with the speculation the plan chose (mode, draft length, the
    draft model and where it runs: beside the target's main device)."""
    if spec.mode == SpecMode.OFF:
        return params
    out = replace(params, spec_mode=spec.mode, draft_tokens=spec.draft_tokens)
    if spec.mode in DRAFTERS and request.draft_path:
        out = replace(out, draft_model_path=request.draft_path,
                      draft_n_gpu_layers=-1 if params.n_gpu_layers else 0)
    return out


def _price_override(inventory: Inventory, profile: ModelProfile, request: Request,
                    pinned: Plan) -> Plan:
    free = replace(request, n_gpu_layers=None, n_cpu_moe=None, tensor_split=None,
                   kv_type=None, flash_attn=None, spec=None, advise=False)
    own = plan(inventory, profile, free)
    extra: list[Note] = []
    if own.predicted.decode_tps > pinned.predicted.decode_tps * 1.05 and own.fits:
        extra.append(Note(Code.OVERRIDE_SLOWER, (
            ("pinned_decode_tps", round(pinned.predicted.decode_tps, 2)),
            ("planner_decode_tps", round(own.predicted.decode_tps, 2)))))
    return replace(pinned, warnings=pinned.warnings + tuple(extra))


__all__ = ["DISK", "NO_SPEC", "SCHEMA", "Advice", "Bottleneck", "DeviceUse", "EngineParams",
           "MachineCorrection", "Note", "Plan", "Spill", "plan", "plan_with_projector"]
