"""Speculative decoding: mode (off / ngram / draft / mtp / dflash) and draft length, priced.

A decode step is memory-bound, so verifying ``k`` drafted tokens costs little more than
one token; with per-token acceptance ``a`` a step yields ``(1 - a^(k+1)) / (1 - a)``
tokens. The MTP head and a draft model cost memory (checked with the memory model) and
time per drafted token (priced at the bandwidth of the device that runs them). A DFlash
drafter drafts a whole block in one pass (its weights and the target's output head read
once per step), and its weights and KV cache sit on the target's main device.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from planner.codes import Code
from planner.inventory import Inventory
from planner.memory import DeviceMemory
from planner.plan_types import Note
from planner.profile import LayerKind, ModelProfile, TensorKind
from planner.request import Request, SpecMode, TaskKind
from planner.speed import (
    CONSTANTS,
    HOST,
    NO_SPEC,
    DeviceLoad,
    SpecOutcome,
    acceptance_for,
    best_draft_length,
    device_time,
    per_token_acceptance,
    price_spec,
    spec_step_seconds,
    verify_cost,
)

if TYPE_CHECKING:
    from planner.trials import Trial

log = logging.getLogger(__name__)

MIN_GAIN = 1.10          # speculation must buy at least 10% to be switched on
MAX_PARALLEL = 4         # gains vanish with many slots


def _note(code: Code, **numbers: Any) -> Note:
    return Note(code, tuple(numbers.items()))


def mtp_draft_seconds(inventory: Inventory, profile: ModelProfile, device: str,
                      threads: int) -> float:
    """Seconds to draft one token with the model's NextN head on ``device``."""
    used = profile.expert_used_count / profile.expert_count if profile.is_moe else 0.0
    layer_bytes = 0.0
    for layer in profile.layers:
        if layer.kind == LayerKind.NEXTN:
            nextn = layer.bytes_of(TensorKind.NEXTN)
            experts = layer.bytes_of(TensorKind.EXPERTS)
            layer_bytes += (nextn - experts) + experts * used if experts else nextn * (
                0.25 if profile.is_moe else 1.0)
    output = profile.output_bytes + (profile.token_embd_bytes if profile.tied_output else 0)
    load = DeviceLoad(device, weight_bytes=layer_bytes + output, layers=1)
    return device_time(inventory, load, threads).total_s


def draft_bytes(draft: ModelProfile, context: int) -> int:
    """Memory a draft model needs: its weights and an f16 KV cache for ``context``."""
    kv = sum(la.n_head_kv * (la.head_dim_k + la.head_dim_v) * 2 for la in draft.layers)
    return draft.weights_bytes + kv * context


def draft_device(draft: ModelProfile, trial: Trial, main: str) -> str:
    """Where the draft model runs: the Main GPU when what it needs is left there."""
    if main == HOST:
        return HOST
    budget = next((r.budget_bytes for r in trial.roles if r.device == main), 0)
    used = sum(m.total_bytes for m in trial.memory if m.device == main)
    return main if budget - used >= draft_bytes(draft, trial.context) else HOST


def draft_model_seconds(inventory: Inventory, draft: ModelProfile, device: str,
                        threads: int) -> float:
    """Seconds per token of a draft model run whole on ``device``."""
    used = draft.expert_used_count / draft.expert_count if draft.is_moe else 1.0
    experts = sum(layer.bytes_of(TensorKind.EXPERTS) for layer in draft.layers)
    body = draft.weights_bytes - draft.token_embd_bytes - experts
    load = DeviceLoad(device, weight_bytes=body, expert_bytes=experts * used,
                      layers=draft.n_layers)
    return device_time(inventory, load, threads).total_s


def dflash_pass_seconds(inventory: Inventory, drafter: ModelProfile, target: ModelProfile,
                        device: str, threads: int) -> float:
    """Seconds of one DFlash pass on ``device``: the drafter's weights and the target's
    output head (the drafter borrows it), read once for the whole block."""
    body = drafter.weights_bytes - drafter.token_embd_bytes
    head = target.output_bytes + (target.token_embd_bytes if target.tied_output else 0)
    load = DeviceLoad(device, weight_bytes=body + head, layers=drafter.n_layers)
    return device_time(inventory, load, threads).total_s


def with_drafter(trial: Trial, device: str, nbytes: int) -> Trial:
    """The trial with a drafter's weights and KV cache (``nbytes``) held on ``device``;
    a GPU over its budget is flagged as with any pin."""
    held = next((m for m in trial.memory if m.device == device), None)
    if held is None:
        memory = (*trial.memory, DeviceMemory(device, nbytes, 0, 0, 0, 0))
    else:
        memory = tuple(replace(m, weights_bytes=m.weights_bytes + nbytes)
                       if m is held else m for m in trial.memory)
    budget = next((r.budget_bytes for r in trial.roles if r.device == device), None)
    total = sum(m.total_bytes for m in memory if m.device == device)
    over = budget is not None and total > budget
    return replace(trial, memory=memory, gpu_over=trial.gpu_over or over)


def dflash_outcome(a: float, token_s: float, pass_s: float, verify: float,
                   moe: tuple[float, float], max_k: int = 8, step_s: float = 0.0
                   ) -> SpecOutcome:
    """The block length (1..max_k) with the best tokens per second, or NO_SPEC: one pass
    per step whatever ``k`` (priced as ``pass_s / k`` per drafted token)."""
    return best_draft_length(SpecMode.DFLASH, a, token_s, 0.0, verify, *moe, max_k=max_k,
                             step_s=step_s, pass_s=pass_s)


def _moe_terms(profile: ModelProfile, trial: Trial) -> tuple[float, float]:
    """(share of a token's time spent on routed experts, n_expert_used / n_expert)."""
    if not profile.is_moe or trial.speed.token_s <= 0:
        return 0.0, 0.0
    experts = sum(d.experts_s for d in trial.speed.devices)
    return experts / trial.speed.token_s, profile.expert_used_count / profile.expert_count


def main_device(best: Trial) -> str:
    """The device a drafter sits beside: the Main GPU when it holds layers, else the host."""
    main = next((r.device for r in best.roles if r.role.value == "main"), HOST)
    return main if any(d == main for d in best.layout.placement.layer_devices) else HOST


def drafter_device(mode: SpecMode, request: Request, best: Trial) -> str | None:
    """Where the second model of ``mode`` (a draft model or a DFlash drafter) is held;
    None when the mode loads none."""
    if request.draft_profile is None or mode not in (SpecMode.DRAFT, SpecMode.DFLASH):
        return None
    main = main_device(best)
    return main if mode == SpecMode.DFLASH else draft_device(request.draft_profile, best, main)


def choose_spec(inventory: Inventory, profile: ModelProfile, request: Request, best: Trial,
                retrial: Callable[[Trial, bool], Trial]
                ) -> tuple[SpecOutcome, list[Note], Trial]:
    """Choose and price speculation for the arrangement ``best``.

    Args:
        retrial: re-plans ``best`` with the MTP head loaded (``True``) to price its memory.

    Returns:
        The priced speculation, the decisions behind it, and the (maybe re-placed) trial.
    """
    pinned = request.spec
    threads = inventory.host.cores
    main = main_device(best)
    verify = verify_cost(inventory, main, best.speed)
    step = spec_step_seconds(inventory, best.speed)
    token_s = best.speed.token_s
    if pinned is not None:
        return _pinned(inventory, profile, request, best, retrial, main, verify, step)
    if request.task == TaskKind.CREATIVE:
        return NO_SPEC, [_note(Code.SPEC_OFF_CREATIVE)], best
    if request.parallel >= MAX_PARALLEL:
        return NO_SPEC, [_note(Code.SPEC_OFF_PARALLEL, parallel=request.parallel)], best
    if request.draft_profile is not None and request.draft_profile.architecture == "dflash":
        trial = with_drafter(best, main, draft_bytes(request.draft_profile, best.config.n_ctx))
        pass_s = dflash_pass_seconds(inventory, request.draft_profile, profile, main, threads)
        a = acceptance_for(request.task, SpecMode.DFLASH)
        out = dflash_outcome(a, token_s, pass_s, verify, _moe_terms(profile, best),
                             step_s=step)
        spec_out, notes, _ = _if_worth(out, Code.SPEC_DRAFT, best)
        return spec_out, notes, trial if spec_out.mode == SpecMode.DFLASH else best
    if request.draft_profile is not None:
        draft_s = draft_model_seconds(inventory, request.draft_profile,
                                      draft_device(request.draft_profile, best, main), threads)
        a = acceptance_for(request.task, SpecMode.DRAFT)
        out = best_draft_length(SpecMode.DRAFT, a, token_s, draft_s, verify,
                                *_moe_terms(profile, best), step_s=step)
        return _if_worth(out, Code.SPEC_DRAFT, best)
    if profile.nextn_layers > 0:
        with_mtp = retrial(best, True)
        if not with_mtp.runnable or with_mtp.gpu_over:
            return NO_SPEC, [_note(Code.SPEC_OFF_NO_ROOM)], best
        draft_s = mtp_draft_seconds(inventory, profile, main, threads)
        a = acceptance_for(request.task, SpecMode.MTP)
        out = best_draft_length(SpecMode.MTP, a, with_mtp.speed.token_s, draft_s, verify,
                                *_moe_terms(profile, with_mtp), step_s=step)
        gain = out.tokens_per_step / out.step_cost * token_s / with_mtp.speed.token_s
        if out.mode == SpecMode.MTP and gain >= MIN_GAIN:
            return out, [_note(Code.SPEC_MTP, draft_tokens=out.draft_tokens,
                               acceptance=a, gain=round(gain, 3))], with_mtp
        if with_mtp.speed.token_s > token_s * 1.02:
            return NO_SPEC, [_note(Code.SPEC_OFF_NO_ROOM)], best
    if request.task in (TaskKind.CODE, TaskKind.AGENT):
        a = acceptance_for(request.task, SpecMode.NGRAM)
        out = best_draft_length(SpecMode.NGRAM, a, token_s, 0.0, verify,
                                *_moe_terms(profile, best), step_s=step)
        return _if_worth(out, Code.SPEC_NGRAM, best)
    return NO_SPEC, [_note(Code.SPEC_OFF_TASK, task=request.task.value)], best


def _if_worth(out: SpecOutcome, code: Code, best: Trial
              ) -> tuple[SpecOutcome, list[Note], Trial]:
    gain = out.tokens_per_step / out.step_cost
    if out.mode == SpecMode.OFF or gain < MIN_GAIN:
        return NO_SPEC, [_note(Code.SPEC_OFF_NO_GAIN, gain=round(gain, 3))], best
    return out, [_note(code, draft_tokens=out.draft_tokens, acceptance=out.acceptance,
                       gain=round(gain, 3))], best


def _pinned(inventory: Inventory, profile: ModelProfile, request: Request, best: Trial,
            retrial: Callable[[Trial, bool], Trial], main: str, verify: float,
            step: float = 0.0) -> tuple[SpecOutcome, list[Note], Trial]:
    spec = request.spec
    assert spec is not None
    threads = inventory.host.cores
    mode = spec.mode
    if mode == SpecMode.OFF:
        return NO_SPEC, [_note(Code.SPEC_USER, mode="off")], best
    a = acceptance_for(request.task, mode)
    if spec.acceptance is not None:  # measured as accepted / drafted at the pinned length
        a = per_token_acceptance(spec.acceptance, spec.draft_tokens or 2)
    trial = best
    if mode == SpecMode.MTP:
        if profile.nextn_layers == 0:
            return NO_SPEC, [_note(Code.SPEC_MTP_UNAVAILABLE)], best
        trial = retrial(best, True)
        draft_s = mtp_draft_seconds(inventory, profile, main, threads)
    elif mode == SpecMode.DRAFT:
        if request.draft_profile is None:
            return NO_SPEC, [_note(Code.SPEC_DRAFT_MISSING)], best
        draft_s = draft_model_seconds(inventory, request.draft_profile,
                                      draft_device(request.draft_profile, trial, main), threads)
    elif mode == SpecMode.DFLASH:
        if request.draft_profile is None:
            return NO_SPEC, [_note(Code.SPEC_DRAFT_MISSING)], best
        trial = with_drafter(best, main, draft_bytes(request.draft_profile, best.config.n_ctx))
        pass_s = dflash_pass_seconds(inventory, request.draft_profile, profile, main, threads)
        k = spec.draft_tokens or 0  # a block drafts exactly its length, like the MTP head
        moe = _moe_terms(profile, trial)
        out = dflash_outcome(a, trial.speed.token_s, pass_s, verify, moe, step_s=step) \
            if k == 0 else price_spec(mode, k, a, trial.speed.token_s, pass_s / k, verify,
                                      *moe, step_s=step)
        if out.mode == SpecMode.OFF:  # pinned on: honoured even when it does not pay
            out = price_spec(mode, 2, a, trial.speed.token_s, pass_s / 2, verify, *moe,
                             step_s=step)
        return out, [_note(Code.SPEC_USER, mode=mode.value, draft_tokens=out.draft_tokens,
                           acceptance=a)], trial
    else:
        draft_s = 0.0
    token_s = trial.speed.token_s
    moe = _moe_terms(profile, trial)
    out = best_draft_length(mode, a, token_s, draft_s, verify, *moe,
                            max_k=spec.draft_tokens or 8, step_s=step)
    if spec.draft_tokens is not None and mode == SpecMode.MTP:
        # the MTP head drafts exactly the pinned length; a draft model stops early
        # (llama.cpp's p-min), so its pinned length is a maximum
        out = price_spec(mode, spec.draft_tokens, a, token_s, draft_s, verify, *moe,
                         step_s=step)
    if out.mode == SpecMode.OFF:  # pinned on: honoured even when it does not pay
        out = price_spec(mode, spec.draft_tokens or 2, a, token_s, draft_s, verify, *moe,
                         step_s=step)
    return out, [_note(Code.SPEC_USER, mode=mode.value, draft_tokens=out.draft_tokens,
                       acceptance=a)], trial


__all__ = ["CONSTANTS", "choose_spec", "dflash_pass_seconds", "draft_model_seconds",
           "mtp_draft_seconds", "with_drafter"]
