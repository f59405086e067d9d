"""Plans on the rigs users have: pure, in memory, named after what the planner must do."""

from __future__ import annotations

import re

from planner.codes import Code
from planner.plan import Plan, plan
from planner.quant import rescaled
from planner.request import Request, Role, TaskKind
from tests.planner import shapes as S
from tests.planner.rigs import (
    GIB,
    RTX_3060,
    RTX_3090,
    RTX_4060,
    RTX_4090,
    apple,
    gpu,
    rig,
)

QUIET = Request(advise=False)


def _dev(p: Plan, device: str):  # type: ignore[no-untyped-def]
    return next(d for d in p.devices if d.id == device)


def _roles(p: Plan) -> dict[int, Role]:
    return {r.gpu: r.role for r in p.roles}


def test_moe_on_8gb_gpu_keeps_attention_and_kv_on_gpu_and_experts_in_ram() -> None:
    inv = rig(gpu("RTX 4060 8GB", 8, 272), ram_gib=32, ram_bw=60)
    model = S.build(S.QWEN35_35B_A3B, "Q4_K_M")
    p = plan(inv, model, QUIET)
    pl = p.layout.placement  # type: ignore[union-attr]
    assert p.fits
    assert all(d == "gpu0" for d in pl.layer_devices), "attention stays on the GPU"
    assert sum(d == "host" for d in pl.expert_devices) > model.n_layers // 2
    assert _dev(p, "gpu0").kv_bytes > 0 and _dev(p, "host").kv_bytes == 0
    assert Code.EXPERTS_TO_RAM in p.reasons
    cpu_rules = [re.compile(o[0]) for o in p.engine.tensor_overrides if o[1] == "CPU"]
    on_host = [i for i, d in enumerate(pl.expert_devices) if d == "host"]
    assert cpu_rules[0].search(f"blk.{on_host[0]}.ffn_up_exps.weight")
    assert not cpu_rules[0].search(f"blk.{on_host[0]}.attn_q.weight")
    kept = [i for i, d in enumerate(pl.expert_devices) if d == "gpu0"]
    assert not any(r.search(f"blk.{kept[-1]}.ffn_down_exps.weight") for r in cpu_rules)
    spill = next(s for s in p.spills if s.kind == Code.EXPERTS_TO_RAM)
    assert spill.bytes > 10 * GIB and spill.cost_ms > 0
    gpu0 = _dev(p, "gpu0")
    assert gpu0.used_bytes <= gpu0.capacity_bytes - gpu0.reserve_bytes


def test_125b_moe_on_12gb_and_48gb_fits_in_ram_at_3_bits_and_warns_for_code() -> None:
    inv = rig(RTX_3060, ram_gib=48, ram_bw=70)
    model = S.build(S.QWEN35_122B_A10B, "IQ3_XXS")
    p = plan(inv, model, Request(task=TaskKind.CODE, advise=False))
    assert p.fits and not p.streams_from_disk
    assert all(d == "gpu0" for d in p.layout.placement.layer_devices)  # type: ignore[union-attr]
    assert _dev(p, "host").weights_bytes > 30 * GIB
    assert any(w.code == Code.LOW_BITS_FOR_TASK for w in p.warnings)


def test_27b_dense_q4_on_24gb_is_all_on_gpu_with_a_sized_context() -> None:
    model = S.build(S.GEMMA3_27B, "Q4_K_M")
    p = plan(rig(RTX_4090), model, QUIET)
    assert p.fits and Code.ALL_ON_GPU in p.reasons
    assert 32768 <= p.context <= model.n_ctx_train
    gpu0 = _dev(p, "gpu0")
    assert gpu0.used_bytes <= gpu0.capacity_bytes - gpu0.reserve_bytes
    assert p.engine.n_gpu_layers == model.n_layers + 1
    assert p.engine.n_ctx == p.context


def test_70b_dense_on_two_24gb_gpus_splits_layers_across_both() -> None:
    model = S.build(S.LLAMA3_70B, "Q4_K_M", 39.59)
    inv = rig(RTX_3090, RTX_3090)
    p = plan(inv, model, QUIET)
    assert p.fits and Code.ALL_ON_GPU in p.reasons
    assert set(_roles(p).values()) == {Role.MAIN, Role.HELPER}
    helper = next(r for r in p.roles if r.role == Role.HELPER)
    assert helper.reason == Code.ROLE_HELPER_NEEDED
    split = p.engine.tensor_split
    assert split is not None and all(x > 0 for x in split)
    assert sum(split) == model.n_layers + 1
    assert p.engine.split_mode.id == 1


def test_8gb_card_next_to_a_4090_is_off_with_its_reason() -> None:
    inv = rig(RTX_4090, RTX_4060)
    p = plan(inv, S.build(S.LLAMA3_70B, "Q4_K_M"), QUIET)
    off = next(r for r in p.roles if r.gpu == 1)
    assert off.role == Role.OFF and off.reason == Code.ROLE_OFF_SMALL
    assert all(d != "gpu1" for d in p.layout.placement.layer_devices)  # type: ignore[union-attr]


def test_3060_helps_a_4090_only_when_the_model_does_not_fit_the_4090() -> None:
    inv = rig(RTX_4090, RTX_3060)
    small = plan(inv, S.build(S.LLAMA3_8B, "Q8_0"), QUIET)
    assert _roles(small)[1] == Role.OFF
    big = plan(inv, S.build(S.QWEN25_32B, "Q6_K"), QUIET)  # ~27 GB: not on the 4090 alone
    assert _roles(big)[1] == Role.HELPER
    alone = plan(inv, S.build(S.QWEN25_32B, "Q6_K"),
                 Request(roles=(Role.MAIN, Role.OFF), advise=False))
    assert big.predicted.decode_tps > alone.predicted.decode_tps


def test_apple_32gb_unified_memory_counts_the_gpu_share_against_ram() -> None:
    inv = apple(32, 273)
    model = S.build(S.QWEN3_30B_A3B, "Q4_K_M", 18.55)
    p = plan(inv, model, QUIET)
    assert p.fits and Code.ALL_ON_GPU in p.reasons
    host = _dev(p, "host")
    # the GPU's bytes come out of the same RAM: the host budget shrinks by them
    assert host.reserve_bytes >= 5 * 10**9 + _dev(p, "gpu0").used_bytes - GIB
    assert p.engine.n_gpu_layers == model.n_layers + 1


def test_cpu_only_16gb_runs_an_8b_model_on_the_cpu() -> None:
    inv = rig(ram_gib=16, ram_bw=50)
    p = plan(inv, S.build(S.LLAMA3_8B, "Q4_K_M"), QUIET)
    assert p.fits and Code.CPU_ONLY in p.reasons
    assert p.engine.n_gpu_layers == 0 and p.roles == ()
    assert 3 < p.predicted.decode_tps < 15  # ~5 GB at ~40 GB/s effective


def test_model_larger_than_ram_streams_from_disk_with_a_warning_and_its_cost() -> None:
    inv = rig(ram_gib=32, ram_bw=60)
    p = plan(inv, S.build(S.QWEN3_NEXT_80B, "Q4_K_M", 48.0), QUIET)
    assert p.streams_from_disk
    assert any(w.code == Code.WEIGHTS_ON_DISK for w in p.warnings)
    disk = next(s for s in p.spills if s.kind == Code.WEIGHTS_ON_DISK)
    assert disk.bytes > 10 * GIB and disk.cost_ms > 0
    assert p.bottleneck is not None and p.bottleneck.kind == Code.CAPACITY_BOUND
    resident = plan(rig(ram_gib=96, ram_bw=60), S.build(S.QWEN3_NEXT_80B, "Q4_K_M", 48.0),
                    QUIET)
    assert resident.predicted.decode_tps > 3 * p.predicted.decode_tps


def test_model_that_cannot_run_says_so_and_names_a_quantization_that_would() -> None:
    inv = rig(RTX_4090, ram_gib=32, ram_bw=60)
    model = S.build(S.LLAMA3_70B, "F16")  # 141 GB against 24 GB of VRAM and ~27 GB of RAM
    p = plan(inv, model, Request())
    assert not p.fits
    assert Code.DOES_NOT_FIT in p.reasons and Code.MODEL_LARGER_THAN_MEMORY in p.reasons
    smaller = [a for a in p.advice if a.code == Code.ADVICE_SMALLER_QUANT]
    assert smaller and smaller[0].fits and smaller[0].helps
    named = dict(smaller[0].numbers)["quant"]
    assert named in ("Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M")  # Q8_0 and Q6_K do not fit
    check = plan(inv, rescaled(model, named), Request(advise=False))
    assert check.fits and not check.streams_from_disk
