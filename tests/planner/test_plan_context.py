"""Context, KV type, parallel slots, speculation, quantization tier and the JSON contract."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner.codes import Code
from planner.plan import plan
from planner.quant import choose, is_low_bit
from planner.request import Priority, Request, SpecMode, TaskKind
from planner.speed import CONSTANTS
from tests.planner import shapes as S
from tests.planner.rigs import RTX_4090, gpu, rig

QUIET = Request(advise=False)


def _codes(notes) -> set[Code]:  # type: ignore[no-untyped-def]
    return {n.code for n in notes}


def test_default_context_is_capped_by_the_training_context() -> None:
    model = S.build(S.LLAMA2_7B, "Q4_0")  # trained at 4K
    p = plan(rig(RTX_4090), model, QUIET)
    assert p.context == 4096
    assert Code.CONTEXT_TRAIN_LIMIT in _codes(p.decisions)


def test_context_beyond_training_is_capped_unless_rope_scaling_is_asked() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")  # trained at 8K
    capped = plan(rig(RTX_4090), model, Request(context=32768, advise=False))
    assert capped.context == 8192
    assert Code.CONTEXT_CAPPED_TO_TRAIN in _codes(capped.warnings)
    scaled = plan(rig(RTX_4090), model, Request(context=32768, rope_scaling=True,
                                                advise=False))
    assert scaled.context == 32768
    assert Code.CONTEXT_ABOVE_TRAIN in _codes(scaled.warnings)


def test_short_of_memory_the_context_shrinks_below_32k_only_with_a_warning() -> None:
    model = S.build(replace(S.LLAMA2_7B, n_ctx_train=65536), "Q4_0")  # 0.5 MB KV per token
    p = plan(rig(ram_gib=12, ram_bw=40), model, QUIET)
    assert p.fits and not p.streams_from_disk
    assert 4096 <= p.context < 32768
    assert Code.CONTEXT_BELOW_32K in _codes(p.warnings)
    roomy = plan(rig(ram_gib=64, ram_bw=40), model, QUIET)
    assert roomy.context >= 32768
    assert Code.CONTEXT_BELOW_32K not in _codes(roomy.warnings)


def test_quantized_kv_is_chosen_when_it_keeps_weights_on_the_gpu() -> None:
    inv = rig(gpu("RTX 4070", 12, 504), ram_gib=32, ram_bw=60)
    model = S.build(S.QWEN25_32B, "IQ2_XXS")
    f16 = plan(inv, model, Request(context=32768, kv_type="f16", advise=False))
    auto = plan(inv, model, Request(context=32768, advise=False))
    assert auto.kv_type in ("q8_0", "q4_0")
    assert auto.predicted.decode_tps > f16.predicted.decode_tps
    kv_note = next(d for d in auto.decisions if d.code.value.startswith("kv_"))
    assert kv_note.code in (Code.KV_Q8_0_KEEPS_GPU, Code.KV_Q4_0_KEEPS_GPU)


def test_parallel_slots_multiply_the_kv_cache() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    one = plan(rig(RTX_4090), model, Request(context=8192, advise=False))
    four = plan(rig(RTX_4090), model, Request(context=8192, parallel=4, advise=False))
    assert four.engine.n_ctx == 4 * 8192 and four.engine.n_seq_max == 4
    kv1 = next(d for d in one.devices if d.id == "gpu0").kv_bytes
    kv4 = next(d for d in four.devices if d.id == "gpu0").kv_bytes
    assert 3.9 * kv1 <= kv4 <= 4.1 * kv1
    assert Code.PARALLEL_KV in _codes(four.warnings)


def test_speculation_is_off_for_creative_writing_and_on_for_code_with_an_mtp_head() -> None:
    model = S.build(S.QWEN35_27B, "Q4_K_M", 17.11)
    code = plan(rig(RTX_4090), model, Request(task=TaskKind.CODE, advise=False))
    creative = plan(rig(RTX_4090), model, Request(task=TaskKind.CREATIVE, advise=False))
    assert code.speculative.mode == SpecMode.MTP and code.speculative.draft_tokens >= 1
    # the MTP head's weights and buffers are paid with context, never with spilled layers
    assert Code.ALL_ON_GPU in code.reasons and code.context < creative.context
    assert code.speculative.tokens_per_step > 1.5
    assert creative.speculative.mode == SpecMode.OFF
    assert Code.SPEC_OFF_CREATIVE in _codes(creative.decisions)
    assert code.predicted.decode_tps > creative.predicted.decode_tps


def test_speculation_is_off_with_many_parallel_slots() -> None:
    model = S.build(S.QWEN35_27B, "Q4_K_M", 17.11)
    p = plan(rig(RTX_4090), model, Request(task=TaskKind.CODE, parallel=4, context=8192,
                                            advise=False))
    assert p.speculative.mode == SpecMode.OFF


def test_low_bit_moe_with_mtp_warns_that_it_may_loop() -> None:
    model = S.build(S.QWEN35_35B_A3B, "IQ2_XXS")
    p = plan(rig(RTX_4090), model, Request(task=TaskKind.AGENT, advise=False))
    codes = _codes(p.warnings)
    assert is_low_bit(model)
    assert Code.LOW_BITS_FOR_TASK in codes
    if p.speculative.mode == SpecMode.MTP:
        assert Code.LOW_BITS_MOE_MTP_LOOPS in codes


def test_quant_choice_takes_the_best_quality_that_fits_without_disk() -> None:
    inv = rig(RTX_4090, ram_gib=32, ram_bw=60)
    files = [S.build(S.LLAMA3_70B, q) for q in ("Q8_0", "Q4_K_M", "IQ2_XXS")]
    plans = [plan(inv, f, QUIET) for f in files]
    pick = choose([(f, p.fits, p.streams_from_disk, p.predicted.decode_tps)
                   for f, p in zip(files, plans, strict=True)], CONSTANTS.usable_decode_tps)
    assert plans[0].streams_from_disk
    assert pick.file_type in ("Q4_K_M", "IQ2_XXS")
    if not plans[1].streams_from_disk and plans[1].predicted.decode_tps >= 5:
        assert pick.file_type == "Q4_K_M"


def test_plan_json_has_every_contract_key() -> None:
    p = plan(rig(RTX_4090), S.build(S.QWEN3_30B_A3B, "Q4_K_M"), Request())
    doc = json.loads(json.dumps(p.to_json()))
    for key in ("schema", "fits", "reasons", "roles", "devices", "context", "parallel",
                "kv_type", "flash_attn", "quant", "speculative", "predicted", "warnings",
                "engine", "advice", "bottleneck", "spill"):
        assert key in doc, key
    assert doc["schema"] == "loadout.plan/1"
    for d in doc["devices"]:
        assert {"id", "kind", "weights_bytes", "kv_bytes", "compute_bytes", "reserve_bytes",
                "capacity_bytes"} <= set(d)
    assert {"decode_tps", "prefill_tps", "ttft_s", "prompt_tokens"} <= set(doc["predicted"])
    assert {"mode", "draft_tokens"} <= set(doc["speculative"])
    for key in ("n_ctx", "n_seq_max", "n_batch", "n_ubatch", "n_threads", "flash_attn",
                "type_k", "type_v", "n_gpu_layers", "tensor_split", "main_gpu", "split_mode",
                "use_mmap", "offload_kqv", "swa_full", "kv_unified", "tensor_overrides"):
        assert key in doc["engine"], key
    assert all(a["decode_tps"] >= 0 for a in doc["advice"])


def test_priority_context_plans_the_training_context_when_memory_allows() -> None:
    model = S.build(S.QWEN3_30B_A3B, "Q4_K_M", 18.55)
    inv = rig(gpu("RTX 4070", 12, 504), ram_gib=64, ram_bw=80)
    speed = plan(inv, model, QUIET)
    context = plan(inv, model, Request(priority=Priority.CONTEXT, advise=False))
    assert context.context == model.n_ctx_train
    assert context.context >= speed.context
    assert context.fits and not context.streams_from_disk


@pytest.mark.parametrize(("head_dim", "n_head", "kv"), [(16, 64, "f16"), (64, 16, "q8_0")])
def test_a_quantized_cache_is_chosen_only_when_its_rows_are_whole_blocks(
        head_dim: int, n_head: int, kv: str) -> None:
    # llama.cpp refuses q8_0 / q4_0 for 16-wide heads (32-element blocks): the same cache
    # (512 K and V elements per cell) picks q8_0 for 64-wide heads, keeps f16 for 16-wide
    shape = S.ModelShape(f"hd{head_dim}", "llama", 32, 1024, n_head, 512 // head_dim,
                         head_dim, 4096, 32000, 131072)
    p = plan(rig(gpu("G", 8, 400)), S.build(shape, "Q4_K_M"),
             Request(advise=False, context=131072))
    assert p.kv_type == kv
