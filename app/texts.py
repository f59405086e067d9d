"""Codes from the planner and engine, as translated sentences (only ``app/`` does this)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication

if TYPE_CHECKING:
    from planner.plan_types import Plan

log = logging.getLogger(__name__)


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Mark ``text`` for translation in ``context`` (lupdate finds it); returns it as is."""
    return text


CTX = "Codes"

ROLE_NAMES: dict[str, str] = {
    "main": QT_TRANSLATE_NOOP("Codes", "Main"),
    "helper": QT_TRANSLATE_NOOP("Codes", "Helper"),
    "off": QT_TRANSLATE_NOOP("Codes", "Off"),
}

DISK_KINDS: dict[str, str] = {
    "nvme": QT_TRANSLATE_NOOP("Codes", "NVMe SSD"),
    "ssd": QT_TRANSLATE_NOOP("Codes", "SSD"),
    "hdd": QT_TRANSLATE_NOOP("Codes", "Hard disk"),
    "unknown": QT_TRANSLATE_NOOP("Codes", "Unknown"),
}

TASK_NAMES: dict[str, str] = {
    "chat": QT_TRANSLATE_NOOP("Codes", "Chat"),
    "code": QT_TRANSLATE_NOOP("Codes", "Code"),
    "agent": QT_TRANSLATE_NOOP("Codes", "Agent / tools"),
    "math": QT_TRANSLATE_NOOP("Codes", "Math"),
    "creative": QT_TRANSLATE_NOOP("Codes", "Creative writing"),
}

SPEC_NAMES: dict[str, str] = {
    "auto": QT_TRANSLATE_NOOP("Codes", "Automatic"),
    "off": QT_TRANSLATE_NOOP("Codes", "Off"),
    "ngram": QT_TRANSLATE_NOOP("Codes", "N-gram"),
    "draft": QT_TRANSLATE_NOOP("Codes", "Draft model"),
    "mtp": QT_TRANSLATE_NOOP("Codes", "MTP heads"),
    "dflash": QT_TRANSLATE_NOOP("Codes", "DFlash drafter"),
}

KV_NAMES: dict[str, str] = {
    "auto": QT_TRANSLATE_NOOP("Codes", "Automatic"),
    "f16": QT_TRANSLATE_NOOP("Codes", "f16 (full)"),
    "q8_0": QT_TRANSLATE_NOOP("Codes", "q8_0 (half)"),
    "q4_0": QT_TRANSLATE_NOOP("Codes", "q4_0 (quarter)"),
}

SEGMENT_NAMES: dict[str, str] = {
    "weights": QT_TRANSLATE_NOOP("Codes", "Weights"),
    "experts": QT_TRANSLATE_NOOP("Codes", "Experts"),
    "kv": QT_TRANSLATE_NOOP("Codes", "KV cache"),
    "compute": QT_TRANSLATE_NOOP("Codes", "Compute buffers"),
    "projector": QT_TRANSLATE_NOOP("Codes", "Vision projector"),
    "reserve": QT_TRANSLATE_NOOP("Codes", "Reserve"),
    "free": QT_TRANSLATE_NOOP("Codes", "Free"),
    "over": QT_TRANSLATE_NOOP("Codes", "Over capacity"),
}

SOURCE_NAMES: dict[str, str] = {
    "loadout": QT_TRANSLATE_NOOP("Codes", "Loadout downloads"),
    "hf-cache": QT_TRANSLATE_NOOP("Codes", "Hugging Face cache"),
    "lmstudio": QT_TRANSLATE_NOOP("Codes", "LM Studio"),
    "ollama": QT_TRANSLATE_NOOP("Codes", "Ollama"),
    "folder": QT_TRANSLATE_NOOP("Codes", "your folder"),
}

DEVICE_KINDS: dict[str, str] = {
    "gpu": QT_TRANSLATE_NOOP("Codes", "GPU"),
    "host": QT_TRANSLATE_NOOP("Codes", "RAM"),
    "disk": QT_TRANSLATE_NOOP("Codes", "Disk"),
}

# Reason and warning codes of the planner (planner/codes.py) as sentences. Values in
# braces come from the code's own fields.
CODE_SENTENCES: dict[str, str] = {
    "off_same_host": QT_TRANSLATE_NOOP(
        "Codes", "It is a worker on this same machine: it would add no speed."),
    "same_host": QT_TRANSLATE_NOOP(
        "Codes", "GPU {gpu} ({endpoint}) is a worker on this same machine: it shares this "
                 "machine's cores and memory bandwidth."),
    "remote_layers": QT_TRANSLATE_NOOP(
        "Codes", "Some layers run on GPU {gpu} at {endpoint}, over a {link_gbps} GB/s link "
                 "({link_latency_ms} ms latency): {transfer_ms_per_token} ms of transfers per "
                 "token."),
    "remote_needed_for_fit": QT_TRANSLATE_NOOP(
        "Codes", "The model needs the remote GPU to fit."),
    "remote_faster": QT_TRANSLATE_NOOP(
        "Codes", "The remote GPU makes it faster despite the network link."),
    "remote_not_used": QT_TRANSLATE_NOOP(
        "Codes", "The {workers} remote workers are not used: this machine alone is as fast."),
    "fits": QT_TRANSLATE_NOOP("Codes", "Everything fits in GPU memory and RAM."),
    "fits_in_ram": QT_TRANSLATE_NOOP("Codes", "Everything fits in RAM."),  # no GPU used
    "fits_with_disk_streaming": QT_TRANSLATE_NOOP(
        "Codes", "It fits only by reading part of the model from disk while it runs: expect a big slowdown."),  # noqa: E501
    "does_not_fit": QT_TRANSLATE_NOOP(
        "Codes", "This model does not fit on this machine, not even read from disk."),
    "model_larger_than_memory": QT_TRANSLATE_NOOP(
        "Codes", "The model is larger than all GPU memory and RAM together."),
    "context_does_not_fit": QT_TRANSLATE_NOOP(
        "Codes", "The weights fit, but the KV cache for this context does not."),
    "no_disk": QT_TRANSLATE_NOOP("Codes", "There is no disk to read the rest of the model from."),
    "main_largest": QT_TRANSLATE_NOOP(
        "Codes", "It has the most free VRAM times bandwidth, so it holds the output layer and most layers."),  # noqa: E501
    "main_user": QT_TRANSLATE_NOOP("Codes", "You chose it as the main GPU."),
    "helper_faster": QT_TRANSLATE_NOOP("Codes", "Sharing layers with it makes the whole faster."),
    "helper_needed_for_fit": QT_TRANSLATE_NOOP(
        "Codes", "It is needed to keep weights out of RAM and off the disk."),
    "helper_user": QT_TRANSLATE_NOOP("Codes", "You chose it as a helper."),
    "off_under_8gb": QT_TRANSLATE_NOOP(
        "Codes", "It has less than 8 GB, which costs more in transfers than it adds."),
    "off_would_be_slower": QT_TRANSLATE_NOOP(
        "Codes", "Giving it a share would make the whole slower."),
    "off_user": QT_TRANSLATE_NOOP("Codes", "You switched it off."),
    "off_not_needed": QT_TRANSLATE_NOOP("Codes", "Everything fits on the faster GPUs without it."),
    "display_reserve": QT_TRANSLATE_NOOP(
        "Codes", "It drives a display, so more memory is kept free on it."),
    "all_on_gpu": QT_TRANSLATE_NOOP("Codes", "All layers are on the GPU."),
    "experts_to_ram": QT_TRANSLATE_NOOP(
        "Codes", "The routed experts of some layers stay in RAM (the cheapest bytes to move)."),
    "layers_to_ram": QT_TRANSLATE_NOOP("Codes", "Some whole layers run on the CPU from RAM."),
    "weights_on_disk": QT_TRANSLATE_NOOP(
        "Codes", "What RAM cannot hold stays on disk and is read from there: speed falls off a cliff."),  # noqa: E501
    "cpu_only": QT_TRANSLATE_NOOP("Codes", "No usable GPU: the model runs on the CPU from RAM."),
    "unified_memory": QT_TRANSLATE_NOOP(
        "Codes", "The GPU shares memory with the CPU (unified memory)."),
    "user_placement": QT_TRANSLATE_NOOP("Codes", "The layer placement is the one you set."),
    "context_user": QT_TRANSLATE_NOOP("Codes", "The context is the one you asked for."),
    "context_from_budget": QT_TRANSLATE_NOOP(
        "Codes", "The context is {context} tokens: the largest that fits in the memory left after the weights."),  # noqa: E501
    "context_train_limit": QT_TRANSLATE_NOOP(
        "Codes", "The context is capped at {train} tokens, the length the model was trained for."),
    "context_below_32k": QT_TRANSLATE_NOOP(
        "Codes", "The context is below 32K tokens because memory is short."),
    "context_above_train": QT_TRANSLATE_NOOP(
        "Codes", "The context is longer than the model was trained for (rope scaling)."),
    "context_capped_to_train": QT_TRANSLATE_NOOP(
        "Codes", "The context you asked for was capped at the training length."),
    "kv_f16": QT_TRANSLATE_NOOP("Codes", "The KV cache is kept at full precision (f16)."),
    "flash_attn_off_cpu": QT_TRANSLATE_NOOP(
        "Codes", "Flash attention is off: on this CPU it reads the KV cache several times "
        "slower ({with_tps} t/s with it, {without_tps} t/s without, at {depth} tokens)."),
    "flash_attn_user": QT_TRANSLATE_NOOP("Codes", "Flash attention is on, as you chose."),
    "flash_attn_user_off": QT_TRANSLATE_NOOP("Codes", "Flash attention is off, as you chose."),
    "kv_type_not_whole_blocks": QT_TRANSLATE_NOOP(
        "Codes", "llama.cpp cannot hold this model's KV cache as {kv_type}: its heads of {head_dim} values are not whole blocks of {block}. Choose f16 or Automatic for the KV cache."),  # noqa: E501
    "flash_attn_needed_by_kv": QT_TRANSLATE_NOOP(
        "Codes", "Flash attention stays on: llama.cpp needs it for a {kv_type} KV cache."),
    "kv_q8_0_keeps_weights_on_gpu": QT_TRANSLATE_NOOP(
        "Codes", "The KV cache is q8_0 so that the weights stay on the GPU."),
    "kv_q8_0_buys_context": QT_TRANSLATE_NOOP(
        "Codes", "The KV cache is q8_0 to make room for more context."),
    "kv_q4_0_keeps_weights_on_gpu": QT_TRANSLATE_NOOP(
        "Codes", "The KV cache is q4_0 so that the weights stay on the GPU."),
    "kv_q4_0_buys_context": QT_TRANSLATE_NOOP(
        "Codes", "The KV cache is q4_0 to make room for more context."),
    "kv_user": QT_TRANSLATE_NOOP("Codes", "The KV cache type is the one you chose."),
    "kv_in_ram": QT_TRANSLATE_NOOP(
        "Codes", "Part of the KV cache is in RAM, which costs far more per byte than weights there."),  # noqa: E501
    "quant_only_file": QT_TRANSLATE_NOOP("Codes", "This is the only quantization available."),
    "quant_best_that_fits": QT_TRANSLATE_NOOP(
        "Codes", "This is the best quality that fits without reading from disk."),
    "quant_fastest_usable": QT_TRANSLATE_NOOP(
        "Codes", "No quantization reaches a usable speed; this is the fastest."),
    "low_bits_for_task": QT_TRANSLATE_NOOP(
        "Codes", "At 3 bits or less, quality drops sharply for code and agent work."),
    "low_bits_moe_mtp_loops": QT_TRANSLATE_NOOP(
        "Codes", "Few bits with a MoE model and MTP on is known to cause endless loops."),
    "spec_off_creative": QT_TRANSLATE_NOOP(
        "Codes", "Speculation is off: it does not help creative writing."),
    "spec_off_parallel": QT_TRANSLATE_NOOP(
        "Codes", "Speculation is off: its gain vanishes with several parallel slots."),
    "spec_off_no_gain": QT_TRANSLATE_NOOP(
        "Codes", "Speculation is off: it would not be faster here."),
    "spec_off_no_room": QT_TRANSLATE_NOOP(
        "Codes", "Speculation is off: its memory does not fit on the GPU."),
    "spec_off_task": QT_TRANSLATE_NOOP("Codes", "Speculation is off for this kind of task."),
    "spec_mtp": QT_TRANSLATE_NOOP("Codes", "The model's MTP heads draft tokens ahead."),
    "spec_ngram": QT_TRANSLATE_NOOP("Codes", "N-gram lookup drafts tokens ahead."),
    "spec_draft": QT_TRANSLATE_NOOP("Codes", "A small draft model drafts tokens ahead."),
    "spec_user": QT_TRANSLATE_NOOP("Codes", "Speculation is set the way you chose."),
    "spec_mtp_unavailable": QT_TRANSLATE_NOOP(
        "Codes", "MTP was asked for, but this model has no MTP heads."),
    "spec_draft_missing": QT_TRANSLATE_NOOP(
        "Codes", "A draft model was asked for, but none is set."),
    "override_slower": QT_TRANSLATE_NOOP(
        "Codes", "Your setting is slower than the planner's choice."),
    "override_does_not_fit": QT_TRANSLATE_NOOP("Codes", "Your placement does not fit on a device."),
    "override_ignored": QT_TRANSLATE_NOOP(
        "Codes", "Your setting does not apply here and was ignored."),
    "slow_decode": QT_TRANSLATE_NOOP("Codes", "Decoding will be slow for interactive use."),
    "parallel_kv": QT_TRANSLATE_NOOP("Codes", "Each parallel slot needs its own KV cache."),
    "software_device_speed": QT_TRANSLATE_NOOP(
        "Codes", "GPU {gpu} ({name}) is a software device that computes on the CPU: speeds "
        "are not predicted for it."),
    "capacity_bound": QT_TRANSLATE_NOOP(
        "Codes", "Bottleneck: capacity. Part of the model is read from disk."),
    "bandwidth_bound": QT_TRANSLATE_NOOP(
        "Codes", "Bottleneck: memory bandwidth. Each token reads every active weight."),
    "compute_bound": QT_TRANSLATE_NOOP("Codes", "Bottleneck: compute."),
    "overhead_bound": QT_TRANSLATE_NOOP("Codes", "Bottleneck: fixed per-token costs."),
    "transfer_bound": QT_TRANSLATE_NOOP("Codes", "Bottleneck: transfers between devices."),
    "advice_smaller_quant": QT_TRANSLATE_NOOP("Codes", "Use a smaller quantization."),
    "advice_moe_model": QT_TRANSLATE_NOOP(
        "Codes", "Use a mixture-of-experts model: it reads only the active experts per token."),
    "advice_shorter_context": QT_TRANSLATE_NOOP("Codes", "Ask for a shorter context."),
    "advice_kv_q8_0": QT_TRANSLATE_NOOP("Codes", "Use a q8_0 KV cache."),
    "advice_more_ram": QT_TRANSLATE_NOOP("Codes", "Add RAM (to {ram_bytes}), so nothing is read from disk."),  # noqa: E501
    "advice_faster_ram": QT_TRANSLATE_NOOP(
        "Codes", "Use faster RAM (more channels or a higher clock)."),
    "advice_bigger_gpu": QT_TRANSLATE_NOOP("Codes", "Use a GPU with more memory ({vram_bytes})."),
    "advice_second_gpu": QT_TRANSLATE_NOOP("Codes", "Add a second GPU (like a {gpu})."),
    "advice_no_change_needed": QT_TRANSLATE_NOOP(
        "Codes", "Nothing to change: this is as fast as this machine gets."),
    "advice_smaller_host_reserve": QT_TRANSLATE_NOOP(
        "Codes", "Keep less RAM free in Settings: keeping {reserve_bytes} of the {ram_bytes} available leaves the model too little."),  # noqa: E501
}


def tr(text: str) -> str:
    """Translate ``text`` in the ``Codes`` context."""
    return QCoreApplication.translate(CTX, text)


def _lookup(table: dict[str, str], code: str) -> str:
    source = table.get(code)
    return tr(source) if source is not None else code


def role_text(role: str) -> str:
    """``main`` -> "Main" (translated)."""
    return _lookup(ROLE_NAMES, role)


def disk_kind_text(kind: str) -> str:
    """``nvme`` -> "NVMe SSD" (translated)."""
    return _lookup(DISK_KINDS, kind)


def task_text(task: str) -> str:
    """``code`` -> "Code" (translated)."""
    return _lookup(TASK_NAMES, task)


def spec_text(mode: str) -> str:
    """``mtp`` -> "MTP heads" (translated)."""
    return _lookup(SPEC_NAMES, mode)


def kv_text(kv: str) -> str:
    """``q8_0`` -> "q8_0 (half)" (translated)."""
    return _lookup(KV_NAMES, kv)


def segment_text(kind: str) -> str:
    """``kv`` -> "KV cache" (translated)."""
    return _lookup(SEGMENT_NAMES, kind)


def source_text(source: str) -> str:
    """``lmstudio`` -> "LM Studio": where a model was found."""
    return _lookup(SOURCE_NAMES, source)


def device_kind_text(kind: str) -> str:
    """``host`` -> "RAM" (translated)."""
    return _lookup(DEVICE_KINDS, kind)


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def code_sentence(code: str, fields: dict[str, Any] | None = None) -> str:
    """A planner reason or warning code as a plain-language sentence.

    Unknown codes (a newer planner) are shown as the code itself and logged once.
    """
    source = CODE_SENTENCES.get(code)
    if source is None:
        log.warning("no sentence for planner code %r", code)
        return code
    return tr(source).format_map(_Fields(_readable(fields or {})))


def _readable(fields: dict[str, Any]) -> dict[str, Any]:
    """Byte counts as GiB, token counts as 32K: the numbers a sentence shows."""
    from app.formatting import fmt_bytes, fmt_tokens

    out: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, int) and not isinstance(value, bool):
            if key.endswith("_bytes"):
                value = fmt_bytes(value)
            elif key in ("context", "train", "tokens"):
                value = fmt_tokens(value)
        out[key] = value
    return out


def plan_roles(plan: Plan | None) -> dict[int, tuple[str, str]]:
    """GPU index -> (role code, reason sentence), from a Plan (or nothing)."""
    if plan is None:
        return {}
    return {r.gpu: (r.role.value, code_sentence(r.reason.value) if r.reason else "")
            for r in plan.roles}


# The most telling reason first: what the user must change differs for each.
_FIT_REASONS = ("kv_type_not_whole_blocks", "model_larger_than_memory",
                "override_does_not_fit", "no_disk", "context_does_not_fit", "does_not_fit")


def fit_reason(plan: Plan) -> str:
    """Why ``plan`` does not fit, as one sentence (its most telling reason code)."""
    codes = [getattr(r, "value", str(r)) for r in plan.reasons]
    code = next((c for c in _FIT_REASONS if c in codes), "does_not_fit")
    note = next((w for w in plan.warnings if getattr(w.code, "value", w.code) == code), None)
    return code_sentence(code, dict(note.numbers) if note is not None else None)
