"""A DFlash drafter pinned by the user is priced: its memory on the main device, one
drafter pass per step."""

from __future__ import annotations

from typing import Any

import pytest

import planner.plan as plan_module
from planner.memory import DeviceMemory
from planner.plan import plan
from planner.request import Request, SpecMode, SpecRequest, TaskKind
from planner.speculation import dflash_pass_seconds, draft_bytes
from planner.speed import spec_step_seconds, verify_cost
from tests.planner import shapes as S
from tests.planner.rigs import RTX_4090, rig

DFLASH_8B = S.ModelShape("Qwen3-8B-DFlash", "dflash", 5, 4096, 32, 8, 128, 12288, 151936,
                         40960)


def _on(memory: tuple[DeviceMemory, ...], device: str) -> int:
    return sum(m.total_bytes for m in memory if m.device == device)


def test_a_pinned_dflash_drafter_holds_memory_on_the_main_gpu_and_drafts_a_block_per_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    inv, model, drafter = rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"), \
        S.build(DFLASH_8B, "Q8_0")
    seen: list[tuple[Any, Any, Any]] = []
    choose = plan_module.choose_spec

    def spy(*args: Any) -> Any:
        out = choose(*args)
        seen.append((args[3], out[0], out[2]))  # the trial before, the outcome, after
        return out

    monkeypatch.setattr(plan_module, "choose_spec", spy)
    p = plan(inv, model, Request(advise=False, context=8192, task=TaskKind.CODE,
                                 draft_profile=drafter, draft_path="/dflash.gguf",
                                 spec=SpecRequest(SpecMode.DFLASH, 4)))
    before, outcome, after = seen[0]
    assert p.speculative.mode == SpecMode.DFLASH and outcome.mode == SpecMode.DFLASH
    # and the engine is told to load that drafter
    assert p.engine.spec_mode == "dflash" and p.engine.draft_model_path == "/dflash.gguf"
    assert p.draft_model == "/dflash.gguf"
    assert outcome.draft_tokens == 4 and outcome.tokens_per_step > 1.5
    # the drafter's weights and its KV cache for the whole context, on the main GPU
    added = draft_bytes(drafter, before.config.n_ctx)
    assert added > drafter.weights_bytes
    assert _on(after.memory, "gpu0") == _on(before.memory, "gpu0") + added
    assert _on(after.memory, "host") == _on(before.memory, "host")
    # one pass for the block of 4, not one per drafted token as with a draft model
    token_s = before.speed.token_s
    pass_s = dflash_pass_seconds(inv, drafter, model, "gpu0", inv.host.cores)
    step_s = outcome.step_cost * token_s
    verify = verify_cost(inv, "gpu0", before.speed)
    fixed = spec_step_seconds(inv, before.speed)
    assert step_s == pytest.approx(token_s * (1 + 4 * verify) + pass_s + fixed)


def test_a_dflash_pin_without_a_drafter_is_refused() -> None:
    p = plan(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
             Request(advise=False, context=8192, spec=SpecRequest(SpecMode.DFLASH, 4)))
    assert p.speculative.mode == SpecMode.OFF
    assert any(n.code.value == "spec_draft_missing" for n in p.decisions)


def test_the_final_plan_holds_the_drafter_on_its_device() -> None:
    inv, model = rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M")
    base = plan(inv, model, Request(advise=False, task=TaskKind.CODE,
                                    spec=SpecRequest(SpecMode.OFF)))
    for mode, drafter in ((SpecMode.DFLASH, S.build(DFLASH_8B, "Q8_0")),
                          (SpecMode.DRAFT, S.build(S.QWEN25_3B, "Q4_K_M"))):
        p = plan(inv, model, Request(advise=False, task=TaskKind.CODE, draft_profile=drafter,
                                     draft_path="/d.gguf", spec=SpecRequest(mode, 4)))
        assert p.speculative.mode == mode
        gpu, gpu0 = (next(d for d in q.devices if d.id == "gpu0") for q in (p, base))
        held = draft_bytes(drafter, p.engine.n_ctx)
        # the drafter is in the memory map, and the context left it room
        assert gpu.weights_bytes >= gpu0.weights_bytes + held - (1 << 20), mode
        assert gpu.weights_bytes + gpu.kv_bytes + gpu.compute_bytes + gpu.other_bytes \
            <= gpu.capacity_bytes - gpu.reserve_bytes, mode
