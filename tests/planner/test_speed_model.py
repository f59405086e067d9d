"""The speed model's physics: bandwidth, active experts, depth, spills, speculation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.plan import plan
from planner.request import Request, SpecMode
from planner.speed import (
    CPU_BYTE_RATE,
    CPU_PREFILL_RATE,
    KV_PAD,
    DeviceLoad,
    best_draft_length,
    cpu_prefill_rate,
    cpu_type_rate,
    per_token_acceptance,
    predict,
    prefill_kv_cells,
    price_spec,
    tokens_per_step,
)
from tests.planner import shapes as S
from tests.planner.rigs import RTX_3090, RTX_4090, gpu, rig

QUIET = Request(advise=False, context=8192)


def test_decode_scales_with_bandwidth_when_bandwidth_bound() -> None:
    model = S.build(S.LLAMA2_70B, "Q4_0", 36.37)
    slow = plan(rig(gpu("A", 80, 1000)), model, QUIET).predicted.decode_tps
    fast = plan(rig(gpu("A", 80, 2000)), model, QUIET).predicted.decode_tps
    assert 1.7 < fast / slow < 2.0  # the fixed per-layer cost keeps it under 2x


def test_moe_reads_only_its_active_experts() -> None:
    moe = S.build(S.QWEN3_30B_A3B, "Q4_K_M", 18.55)
    dense = S.build(S.QWEN25_32B, "Q4_K_M", 19.0)
    inv = rig(ram_gib=64, ram_bw=80)
    assert plan(inv, moe, QUIET).predicted.decode_tps > \
        4 * plan(inv, dense, QUIET).predicted.decode_tps


def test_decode_slows_as_the_context_to_read_grows() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    shallow = plan(rig(RTX_4090), model, QUIET).predicted
    deep = plan(rig(RTX_4090), model, replace(QUIET, depth=8000)).predicted
    assert deep.decode_tps < shallow.decode_tps * 0.95
    assert deep.depth == 8000


def test_layers_in_ram_cost_far_more_than_layers_in_vram() -> None:
    model = S.build(S.LLAMA3_8B, "Q8_0")
    inv = rig(RTX_3090, ram_gib=64, ram_bw=60)
    resident = plan(inv, model, QUIET).predicted.decode_tps
    half = plan(inv, model, replace(QUIET, n_gpu_layers=17)).predicted.decode_tps
    assert half < resident / 3


def test_two_gpus_in_layer_split_are_not_faster_than_one_that_holds_it_all() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    one = plan(rig(RTX_3090), model, QUIET).predicted.decode_tps
    two = plan(rig(RTX_3090, RTX_3090), model,
               replace(QUIET, tensor_split=(1.0, 1.0))).predicted.decode_tps
    assert two <= one


def test_prefill_is_far_faster_than_decode_on_a_gpu_and_ttft_adds_the_prompt() -> None:
    p = plan(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
             replace(QUIET, prompt_tokens=4000)).predicted
    assert p.prefill_tps > 10 * p.decode_tps
    assert p.ttft_s == pytest.approx(4000 / p.prefill_tps + p.token_s, rel=0.05)


def test_tokens_per_step_follows_the_speculation_formula() -> None:
    assert tokens_per_step(0.0, 4) == pytest.approx(1.0)
    assert tokens_per_step(0.5, 2) == pytest.approx(1.75)
    assert tokens_per_step(0.8, 3) == pytest.approx((1 - 0.8**4) / 0.2)


def test_measured_acceptance_converts_to_a_per_token_acceptance() -> None:
    a = per_token_acceptance(0.6, 3)
    assert sum(a**i for i in (1, 2, 3)) / 3 == pytest.approx(0.6, abs=1e-6)
    assert per_token_acceptance(0.6, 1) == pytest.approx(0.6)


def test_longer_drafts_pay_less_as_acceptance_falls() -> None:
    high = best_draft_length(SpecMode.MTP, 0.85, 0.02, 0.001, 0.15)
    low = best_draft_length(SpecMode.MTP, 0.4, 0.02, 0.001, 0.15)
    assert high.draft_tokens > low.draft_tokens
    useless = best_draft_length(SpecMode.DRAFT, 0.05, 0.02, 0.01, 0.5)
    assert useless.mode == SpecMode.OFF


def test_verifying_a_moe_batch_reads_more_experts() -> None:
    dense = price_spec(SpecMode.MTP, 3, 0.7, 0.02, 0.0, 0.15)
    moe = price_spec(SpecMode.MTP, 3, 0.7, 0.02, 0.0, 0.15, expert_share=0.6,
                     expert_ratio=8 / 256)
    assert moe.step_cost > dense.step_cost * 1.5


def test_predict_sums_devices_and_hops() -> None:
    inv = rig(RTX_4090)
    one = predict(inv, [DeviceLoad("gpu0", weight_bytes=1e9, layers=10)], [], 4096, 8, 0, 0,
                  512)
    hop = predict(inv, [DeviceLoad("gpu0", weight_bytes=1e9, layers=10)],
                  [("host", "gpu0")] * 10, 4096, 8, 0, 0, 512)
    assert hop.token_s > one.token_s
    assert one.decode_tps == pytest.approx(1 / one.token_s)


def test_a_tied_output_reads_the_embeddings_like_an_untied_output_would() -> None:
    tied = S.build(S.QWEN25_3B, "Q4_0")
    untied = S.build(replace(S.QWEN25_3B, tied=False), "Q4_0")
    inv = rig(ram_gib=32, ram_bw=50)
    a = plan(inv, tied, QUIET).predicted.decode_tps
    b = plan(inv, untied, QUIET).predicted.decode_tps
    assert a == pytest.approx(b, rel=0.03)


def test_cpu_type_rate_is_the_bytes_harmonic_mean_of_each_type_s() -> None:
    assert cpu_type_rate([("Q4_K_M", 100)]) == 1.0  # the reference type
    assert cpu_type_rate([("Q8_0", 100)]) == CPU_BYTE_RATE["Q8_0"]
    assert cpu_type_rate([("IQ3_XXS", 100), ("F32", 1)]) == 1.0  # not measured: by bytes
    mix = cpu_type_rate([("Q4_1", 300), ("Q8_0", 100)])  # the demo's kind of file
    assert mix == pytest.approx(400 / (300 / CPU_BYTE_RATE["Q4_1"] + 100 / CPU_BYTE_RATE["Q8_0"]))
    assert cpu_type_rate([]) == 1.0


def test_cpu_prefill_rate_is_the_weights_harmonic_mean_of_each_type_s() -> None:
    assert cpu_prefill_rate([("Q4_K_M", 100)]) == 1.0  # the reference type
    assert cpu_prefill_rate([("Q4_1", 100)]) == CPU_PREFILL_RATE["Q4_1"]
    assert cpu_prefill_rate([("IQ3_XXS", 100), ("F32", 1)]) == 1.0  # not measured
    # the demo's kind of file, counted in weights: 20 bytes hold 32 Q4_1 weights, 34 bytes
    # 32 Q8_0 ones
    q41, q80 = 300 * 32 / 20, 100 * 32 / 34
    mix = cpu_prefill_rate([("Q4_1", 300), ("Q8_0", 100)])
    assert mix == pytest.approx((q41 + q80) / (q41 / CPU_PREFILL_RATE["Q4_1"]
                                               + q80 / CPU_PREFILL_RATE["Q8_0"]))
    assert cpu_prefill_rate([]) == 1.0


def test_cpu_prefill_is_priced_per_weight_type() -> None:
    # the same weights prefill at each type's own rate on a CPU (bench/cpu_type_rate.py
    # --prefill): Q8_0 more than twice as fast as Q4_1, whatever their bytes
    inv = rig(ram_bw=40, cores=4)
    q8, q41, q4k = (plan(inv, S.build(S.LLAMA3_8B, t), QUIET).predicted.prefill_tps
                    for t in ("Q8_0", "Q4_1", "Q4_K_M"))
    assert q8 / q41 == pytest.approx(CPU_PREFILL_RATE["Q8_0"] / CPU_PREFILL_RATE["Q4_1"],
                                     rel=0.05)
    assert q4k > q8 > q41


def test_cpu_prefill_rate_sees_only_the_block_matrices() -> None:
    # a prompt's tokens are multiplied by the blocks' matrices; the embedding is a lookup
    # and the output layer runs for the last token, so a Q8_0 embedding (the demo's) does
    # not lend a Q4_1 model its prefill rate
    base = S.build(S.QWEN25_3B, "Q4_1")
    tensors = tuple(replace(t, ggml_type="Q8_0", nbytes=t.nbytes * 34 // 20)
                    if t.name == "token_embd.weight" else t for t in base.tensors)
    model = replace(base, tensors=tensors, quant_bytes=(("Q4_1", 1), ("Q8_0", 1)))
    assert dict(model.block_quant_bytes).keys() == {"Q4_1"}
    inv = rig(ram_bw=40, cores=4)
    loads = plan(inv, model, QUIET).predicted
    assert loads.prefill_tps == pytest.approx(plan(inv, base, QUIET).predicted.prefill_tps,
                                              rel=0.02)


def test_a_prompt_token_attends_to_the_padded_cells_in_use() -> None:
    assert prefill_kv_cells(32, 512) == KV_PAD  # one batch: its padded length
    assert prefill_kv_cells(KV_PAD + 1, 512) == 2 * KV_PAD
    assert prefill_kv_cells(4096, 512) == pytest.approx((4096 + 512) / 2 + KV_PAD / 2)


def test_cpu_prefill_without_flash_attention_pays_attention_per_head() -> None:
    # more query heads of the same width attend to more (the weights are the same)
    few = S.build(S.LLAMA3_8B, "Q4_K_M")
    many = replace(few, layers=tuple(replace(la, n_head=la.n_head * 2) for la in few.layers))
    inv = rig(ram_bw=40, cores=4)
    off = replace(QUIET, flash_attn=False, prompt_tokens=2048)
    assert plan(inv, many, off).predicted.prefill_tps < \
        0.95 * plan(inv, few, off).predicted.prefill_tps
    on = replace(off, flash_attn=True)  # not measured with flash attention: not priced
    assert plan(inv, many, on).predicted.prefill_tps == \
        pytest.approx(plan(inv, few, on).predicted.prefill_tps)


def test_few_cpu_cores_are_bound_by_the_weight_type_many_by_the_ram() -> None:
    # one core decodes Q8_0's bytes faster than Q4_1's (bench/cpu_type_rate.py); the RAM
    # reads every type's bytes alike
    q8 = S.build(S.LLAMA3_8B, "Q8_0")
    q4 = S.build(S.LLAMA3_8B, "Q4_1")
    bits = 8.5 / 5.0
    one = [plan(rig(ram_bw=40, cores=1), m, QUIET).predicted.decode_tps for m in (q8, q4)]
    assert one[1] / one[0] < bits * 0.75  # compute-bound: less than the bytes say
    many = [plan(rig(ram_bw=40, cores=16), m, QUIET).predicted.decode_tps for m in (q8, q4)]
    assert many[1] / many[0] == pytest.approx(bits, rel=0.1)  # bandwidth-bound: bytes
