"""User pins are honoured exactly, priced, and flagged when the planner would do better."""

from __future__ import annotations

from planner.codes import Code
from planner.plan import plan
from planner.request import Request, Role, SpecMode, SpecRequest
from tests.planner import shapes as S
from tests.planner.rigs import RTX_3090, RTX_4090, rig


def _codes(notes) -> set[Code]:  # type: ignore[no-untyped-def]
    return {n.code for n in notes}


def test_pinned_ngl_is_honoured_and_priced_with_a_warning_when_slower() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    inv = rig(RTX_4090)
    own = plan(inv, model, Request(advise=False))
    pinned = plan(inv, model, Request(n_gpu_layers=20, advise=False))
    assert pinned.engine.n_gpu_layers == 20
    # llama.cpp keeps the first n_layer + 1 - ngl blocks on the CPU
    devices = pinned.layout.placement.layer_devices  # type: ignore[union-attr]
    assert devices.count("host") == model.n_layers + 1 - 20
    assert all(d == "host" for d in devices[:model.n_layers + 1 - 20])
    assert pinned.predicted.decode_tps < own.predicted.decode_tps
    assert Code.OVERRIDE_SLOWER in _codes(pinned.warnings)
    assert Code.OVERRIDE_SLOWER not in _codes(own.warnings)


def test_pinned_n_cpu_moe_keeps_the_first_layers_experts_in_ram() -> None:
    model = S.build(S.QWEN3_30B_A3B, "Q4_K_M", 18.55)
    p = plan(rig(RTX_4090), model, Request(n_cpu_moe=10, advise=False))
    pl = p.layout.placement  # type: ignore[union-attr]
    assert [i for i, d in enumerate(pl.expert_devices) if d == "host"] == list(range(10))
    assert all(d == "gpu0" for d in pl.layer_devices)
    rule = p.engine.tensor_overrides[0]
    assert rule[1] == "CPU" and "blk\\.(0|1|2|3|4|5|6|7|8|9)\\." in rule[0]
    assert Code.OVERRIDE_SLOWER in _codes(p.warnings)


def test_pinned_placement_that_overflows_a_gpu_does_not_fit_instead_of_crashing() -> None:
    model = S.build(S.LLAMA3_70B, "Q4_K_M", 39.59)
    p = plan(rig(RTX_4090), model, Request(n_gpu_layers=999, context=8192, advise=False))
    assert not p.fits
    assert Code.OVERRIDE_DOES_NOT_FIT in p.reasons
    assert p.predicted.decode_tps > 0  # still priced


def test_pinned_tensor_split_is_passed_through_exactly() -> None:
    model = S.build(S.LLAMA3_70B, "Q4_K_M", 39.59)
    p = plan(rig(RTX_3090, RTX_3090), model,
             Request(tensor_split=(3.0, 1.0), context=8192, advise=False))
    assert p.engine.tensor_split == (3.0, 1.0)
    devices = p.layout.placement.layer_devices  # type: ignore[union-attr]
    assert devices.count("gpu0") > 2 * devices.count("gpu1")


def test_pinned_kv_type_is_used_as_given() -> None:
    p = plan(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
             Request(kv_type="q4_0", advise=False))
    assert p.kv_type == "q4_0" and p.engine.type_k.id == 2 and p.engine.type_v.id == 2
    assert p.flash_attn


def test_pinned_spec_mode_and_length_are_honoured() -> None:
    model = S.build(S.QWEN35_27B, "Q4_K_M", 17.11)
    p = plan(rig(RTX_4090), model,
             Request(spec=SpecRequest(SpecMode.MTP, 3), context=32768, advise=False))
    assert p.speculative.mode == SpecMode.MTP and p.speculative.draft_tokens == 3
    off = plan(rig(RTX_4090), model,
               Request(spec=SpecRequest(SpecMode.OFF), context=32768, advise=False))
    assert off.speculative.mode == SpecMode.OFF
    assert p.predicted.decode_tps > off.predicted.decode_tps


def test_asking_for_mtp_on_a_model_without_a_head_says_so() -> None:
    p = plan(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
             Request(spec=SpecRequest(SpecMode.MTP), advise=False))
    assert p.speculative.mode == SpecMode.OFF
    assert Code.SPEC_MTP_UNAVAILABLE in _codes(p.decisions)


def test_user_roles_switch_a_gpu_off_and_pick_the_main() -> None:
    model = S.build(S.LLAMA3_8B, "Q4_K_M")
    inv = rig(RTX_3090, RTX_4090)
    p = plan(inv, model, Request(roles=(Role.OFF, Role.MAIN), advise=False))
    roles = {r.gpu: (r.role, r.reason) for r in p.roles}
    assert roles[0] == (Role.OFF, Code.ROLE_OFF_USER)
    assert roles[1] == (Role.MAIN, Code.ROLE_MAIN_USER)
    assert set(p.layout.placement.layer_devices) == {"gpu1"}  # type: ignore[union-attr]
    assert p.engine.main_gpu == 1
