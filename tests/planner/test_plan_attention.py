"""Flash attention where it is faster, and CPU rates that follow the host's clock."""

from __future__ import annotations

from dataclasses import replace

from planner.inventory import Inventory
from planner.memory import MemoryConfig, Placement, estimate
from planner.plan import plan
from planner.request import Request
from tests.planner import shapes as S
from tests.planner.rigs import RTX_4090, rig

CPU_ONLY = rig(ram_gib=32, ram_bw=80.0, cores=8)


def _decision(p, code: str) -> dict:  # type: ignore[no-untyped-def]
    return next(n.to_json() for n in p.decisions if n.code.value == code)


def test_a_cpu_only_plan_turns_flash_attention_off_and_says_by_how_much() -> None:
    p = plan(CPU_ONLY, S.build(S.LLAMA3_8B, "Q4_K_M"), Request(advise=False))
    assert p.flash_attn is False and p.engine.flash_attn is False
    note = _decision(p, "flash_attn_off_cpu")
    assert note["depth"] == 4096 and note["without_tps"] > 1.5 * note["with_tps"]


def test_without_flash_attention_the_cpu_prediction_slows_less_with_depth() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    shallow = plan(CPU_ONLY, model, Request(advise=False, depth=0)).predicted.decode_tps
    deep = plan(CPU_ONLY, model, Request(advise=False, depth=8192)).predicted.decode_tps
    assert deep < shallow
    # the note prices the same plan with flash attention on: far slower at that depth
    note = _decision(plan(CPU_ONLY, model, Request(advise=False, depth=8192)),
                     "flash_attn_off_cpu")
    assert note["depth"] == 8192 and abs(note["without_tps"] - deep) < 0.05 * deep
    assert note["with_tps"] < 0.6 * deep


def test_a_gpu_plan_and_a_quantized_cache_keep_flash_attention() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    on_gpu = plan(rig(RTX_4090), model, Request(advise=False))
    assert on_gpu.flash_attn is True and on_gpu.engine.flash_attn is True
    assert all(n.code.value != "flash_attn_off_cpu" for n in on_gpu.decisions)
    q8 = plan(CPU_ONLY, model, Request(advise=False, kv_type="q8_0"))
    assert q8.kv_type == "q8_0" and q8.flash_attn is True


def test_without_flash_attention_the_attention_buffers_are_priced_larger() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    off = plan(CPU_ONLY, model, Request(advise=False))
    assert off.flash_attn is False and off.context == 8192  # the training context
    host = next(d for d in off.devices if d.id == "host")

    def compute(flash: bool) -> int:
        config = MemoryConfig(n_ctx=8192, flash_attn=flash, n_batch=2048, n_ubatch=512)
        placement = Placement.all_on("host", model.n_layers)
        return sum(m.compute_bytes for m in estimate(model, config, placement))

    # the KQ matrix is materialised without flash attention: the plan prices that
    assert compute(False) > compute(True) + 512 * 8192 * 4
    assert host.compute_bytes == compute(False)


def _clocked(inv: Inventory, ghz: float) -> Inventory:
    return replace(inv, host=replace(inv.host, clock_ghz=ghz))


def test_cpu_rates_follow_the_clock_and_an_unknown_clock_is_the_reference() -> None:
    # a fast-RAM host with 2 cores: the cores, not the RAM, limit the read rate
    base = rig(ram_gib=32, ram_bw=400.0, cores=2)
    model = S.build(S.QWEN25_3B, "Q4_K_M")
    request = Request(advise=False)
    unknown = plan(base, model, request).predicted
    ref = plan(_clocked(base, 3.5), model, request).predicted
    slow = plan(_clocked(base, 1.75), model, request).predicted
    assert abs(unknown.decode_tps - ref.decode_tps) < 1e-6
    assert abs(unknown.prefill_tps - ref.prefill_tps) < 1e-6
    assert 0.45 < slow.decode_tps / ref.decode_tps < 0.65
    assert abs(slow.prefill_tps / ref.prefill_tps - 0.5) < 0.05
    # bandwidth-bound hosts do not care about the clock
    slow_ram = rig(ram_gib=32, ram_bw=20.0, cores=16)
    assert abs(plan(_clocked(slow_ram, 2.0), model, request).predicted.decode_tps
               - plan(slow_ram, model, request).predicted.decode_tps) < 1e-6


def test_a_pinned_flash_attention_is_honoured_or_refused_with_the_reason() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    on = plan(CPU_ONLY, model, Request(advise=False, flash_attn=True, depth=4096))
    assert on.flash_attn is True and _decision(on, "flash_attn_user")
    # the planner's own choice (off) is faster at that depth: the pin is priced and warned
    assert any(w.code.value == "override_slower" for w in on.warnings)
    off_gpu = plan(rig(RTX_4090), model, Request(advise=False, flash_attn=False))
    assert off_gpu.flash_attn is False and off_gpu.engine.flash_attn is False
    assert _decision(off_gpu, "flash_attn_user_off") == {"code": "flash_attn_user_off"}
    q8 = plan(CPU_ONLY, model, Request(advise=False, flash_attn=False, kv_type="q8_0"))
    assert q8.flash_attn is True
    assert _decision(q8, "flash_attn_needed_by_kv")["kv_type"] == "q8_0"
