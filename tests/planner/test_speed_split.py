"""The speed model where a token is split between a GPU and the host (layers or experts in
RAM): what the host's part costs, by weight type and by kind of state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.plan import plan
from planner.quant import is_iquant
from planner.request import Request
from planner.speed import CONSTANTS, DeviceLoad, host_bandwidth, predict
from tests.planner import shapes as S
from tests.planner.rigs import RTX_4090, apple, rig

QUIET = Request(advise=False, context=8192)


def _cpu_decode(quant: str) -> float:
    model = S.build(S.QWEN3_8B, quant, 5.0)   # the same bytes in every type
    return plan(rig(ram_bw=80, cores=8), model, QUIET).predicted.decode_tps


def test_iq4_xs_streams_like_a_k_quant_and_codebook_iquants_do_not() -> None:
    assert not is_iquant(S.build(S.QWEN3_8B, "IQ4_XS"))
    assert is_iquant(S.build(S.QWEN3_8B, "IQ2_XXS"))
    assert is_iquant(S.build(S.QWEN3_8B, "IQ3_XXS"))
    k, iq4, iq2 = _cpu_decode("Q4_K_M"), _cpu_decode("IQ4_XS"), _cpu_decode("IQ2_XXS")
    assert iq4 == pytest.approx(k, rel=0.05)
    assert iq2 < k / 2


@pytest.mark.parametrize("flash", [True, False])
def test_a_recurrent_state_is_streamed_once_not_read_like_an_attention_cache(
        flash: bool) -> None:
    inv = rig(ram_bw=80, cores=8)
    state = predict(inv, [DeviceLoad("host", state_bytes=1e8, layers=1)], [], 4096, 8, 0, 0,
                    512, flash=flash).devices[0]
    cache = predict(inv, [DeviceLoad("host", kv_bytes=1e8, layers=1)], [], 4096, 8, 0, 0,
                    512, flash=flash).devices[0]
    assert state.kv_s == pytest.approx(1e8 / host_bandwidth(inv, 8))
    assert cache.kv_s >= state.kv_s   # an attention kernel's read costs more per byte


def test_the_host_part_of_a_split_token_pays_its_arithmetic_on_top_of_its_reads() -> None:
    inv = rig(RTX_4090, ram_bw=80, cores=8)
    host = DeviceLoad("host", weight_bytes=2e9, flops=8e9, layers=8)
    alone = predict(inv, [host], [], 4096, 8, 0, 0, 512).devices[0]
    split = predict(inv, [host, DeviceLoad("gpu0", weight_bytes=4e9, layers=24)],
                    [("host", "gpu0")], 4096, 8, 0, 0, 512).devices[0]
    assert alone.weights_s == split.weights_s == pytest.approx(2e9 / host_bandwidth(inv, 8))
    assert alone.arith_s == 0.0
    cpu = 8e9 / (8 * CONSTANTS.cpu_core_gflops * 1e9)
    assert split.arith_s == pytest.approx(cpu * CONSTANTS.hybrid_arith_share)
    assert split.total_s > alone.total_s


def test_unified_memory_is_not_a_split_between_host_and_gpu() -> None:
    inv = apple(64, 400)
    host = DeviceLoad("host", weight_bytes=2e9, flops=8e9, layers=8)
    split = predict(inv, [host, DeviceLoad("gpu0", weight_bytes=4e9, layers=24)],
                    [("host", "gpu0")], 4096, 8, 0, 0, 512).devices[0]
    assert split.arith_s == 0.0


def test_experts_left_in_ram_cost_their_active_bytes_and_arithmetic() -> None:
    model = S.build(S.QWEN3_30B_A3B, "Q4_K_M", 18.55)
    inv = rig(RTX_4090, ram_bw=80, cores=8)
    p = plan(inv, model, Request(advise=False, context=8192, n_cpu_moe=48))
    host = next(d for d in p.predicted.devices if d.device == "host")
    # all 48 blocks' experts are in RAM: 8 of 128 experts are read per token
    experts = sum(t.nbytes for t in model.tensors if "_exps" in t.name) * 8 / 128
    assert host.experts_s == pytest.approx(experts / host_bandwidth(inv, 8), rel=0.01)
    assert host.arith_s == pytest.approx(host.compute_s * CONSTANTS.hybrid_arith_share)
    assert host.arith_s > 0


def _host_prefill(prompt: int) -> float:
    inv = rig(RTX_4090, ram_bw=80, cores=8)
    host = DeviceLoad("host", weight_bytes=8e9, stored_bytes=8e9, flops=4e9, layers=16)
    gpu0 = DeviceLoad("gpu0", weight_bytes=8e9, stored_bytes=8e9, flops=4e9, layers=16)
    parts = predict(inv, [host, gpu0], [("host", "gpu0")], 4096, 8, prompt, 0, 512)
    return dict(parts.prefill_devices)["host"]


def test_a_prompt_batch_of_32_tokens_or_more_copies_the_host_weights_once() -> None:
    pcie = RTX_4090.pcie_gbps * 1e9 * CONSTANTS.pcie_fraction
    copy = 8e9 / pcie
    # a 100-token prompt pays the whole copy (it used to be spread over a 512-token batch)
    assert _host_prefill(100) * 100 > copy
    assert _host_prefill(100) * 100 < copy * 1.2
    # a long prompt pays one copy per batch of 512
    assert _host_prefill(5120) * 5120 == pytest.approx(10 * copy, rel=0.2)


def test_a_prompt_batch_under_32_tokens_is_computed_by_the_host() -> None:
    cpu = 4e9 / (8 * CONSTANTS.cpu_core_gflops * 1e9)   # 8 cores, no copy over PCIe
    assert _host_prefill(20) == pytest.approx(cpu)
    assert _host_prefill(20) * 20 < 8e9 / (RTX_4090.pcie_gbps * 1e9)


def test_a_pinned_micro_batch_is_kept_and_prices_the_copies_it_makes() -> None:
    model = S.build(S.QWEN3_30B_A3B, "Q4_K_M", 18.55)
    inv = rig(RTX_4090, ram_bw=80, cores=8)
    spilled = Request(advise=False, context=8192, n_cpu_moe=48, prompt_tokens=4096)
    chosen = plan(inv, model, spilled)
    pinned = plan(inv, model, replace(spilled, n_ubatch=512))
    assert chosen.engine.n_ubatch == 2048      # the planner's: fewer copies over PCIe
    assert pinned.engine.n_ubatch == 512
    # 8 copies of the host's experts instead of 2
    assert pinned.predicted.prefill_tps < chosen.predicted.prefill_tps / 2
    with pytest.raises(ValueError, match="n_ubatch"):
        Request(n_ubatch=0)
