"""The engine parameters carry out exactly the placement the plan describes."""

from __future__ import annotations

import re

import pytest

from planner.placement import pinned_layout
from planner.plan import plan
from planner.request import Request
from tests.planner import shapes as S
from tests.planner.rigs import RTX_3060, RTX_3090, RTX_4090, gpu, rig


@pytest.mark.parametrize("inv, model", [
    (rig(RTX_3090, RTX_3090), S.build(S.LLAMA3_70B, "Q4_K_M", 39.59)),
    (rig(RTX_4090, RTX_3060), S.build(S.QWEN25_32B, "Q6_K")),
    (rig(RTX_4090, RTX_3060, ram_gib=64), S.build(S.LLAMA3_70B, "Q4_K_M", 39.59)),
    (rig(gpu("RTX 4070", 12, 504), ram_gib=64), S.build(S.LLAMA3_70B, "Q4_K_M", 39.59)),
])
def test_ngl_and_tensor_split_reproduce_the_planned_layer_ranges(inv, model) -> None:  # type: ignore[no-untyped-def]
    p = plan(inv, model, Request(advise=False))
    e = p.engine
    devices = [f"gpu{g.index}" for g in inv.gpus]
    # llama.cpp's own assignment of these parameters (mirrored by pinned_layout)
    again = pinned_layout(model, devices, "gpu0", e.n_gpu_layers, None, e.tensor_split)
    assert again.placement.layer_devices == p.layout.placement.layer_devices  # type: ignore[union-attr]


def test_expert_overrides_match_exactly_the_experts_planned_for_ram() -> None:
    model = S.build(S.QWEN35_122B_A10B, "Q4_K_M")
    p = plan(rig(RTX_4090, ram_gib=96), model, Request(advise=False))
    rules = [(re.compile(r), d) for r, d in p.engine.tensor_overrides]
    placement = p.layout.placement  # type: ignore[union-attr]
    for i, dev in enumerate(placement.expert_devices[:model.n_layers - model.nextn_layers]):
        name = f"blk.{i}.ffn_gate_exps.weight"
        on_cpu = any(r.search(name) and d == "CPU" for r, d in rules)
        assert on_cpu == (dev == "host"), i


def test_the_chosen_speculation_reaches_the_engine_parameters() -> None:
    from engine.launch import LaunchSpec
    from planner.request import SpecMode, SpecRequest, TaskKind

    model = S.build(S.QWEN25_32B, "Q4_K_M")
    ngram = plan(rig(RTX_4090, RTX_3090), model,
                 Request(advise=False, spec=SpecRequest(SpecMode.NGRAM, 4)))
    assert ngram.speculative.mode == SpecMode.NGRAM
    assert ngram.engine.spec_mode == "ngram" and ngram.engine.draft_tokens == 4
    spec = LaunchSpec.from_plan_engine("/m.gguf", ngram.engine)
    assert spec.spec_mode == "ngram" and spec.draft_tokens == 4
    draft = S.build(S.QWEN25_3B, "Q4_K_M")
    drafted = plan(rig(RTX_4090, RTX_3090), model,
                   Request(advise=False, task=TaskKind.CODE, draft_profile=draft,
                           draft_path="/d.gguf", spec=SpecRequest(SpecMode.DRAFT)))
    assert drafted.engine.spec_mode == "draft"
    assert drafted.engine.draft_model_path == "/d.gguf"
    assert drafted.engine.draft_n_gpu_layers == -1  # beside the target, on the GPU
    off = plan(rig(RTX_4090), S.build(S.LLAMA3_8B, "Q4_K_M"),
               Request(advise=False, task=TaskKind.CREATIVE))
    assert off.speculative.mode == SpecMode.OFF and "spec_mode" not in off.engine.to_json()


def test_engine_params_read_back_from_the_plan_document_are_the_same() -> None:
    from planner.plan_types import EngineParams
    from planner.request import SpecMode, SpecRequest

    for request in (Request(advise=False), Request(advise=False, kv_type="q8_0",
                                                   spec=SpecRequest(SpecMode.NGRAM, 4))):
        p = plan(rig(RTX_4090, RTX_3060, ram_gib=64), S.build(S.LLAMA3_70B, "Q4_K_M", 39.59),
                 request)
        doc = p.to_json()["engine"]
        assert EngineParams.from_json(doc) == p.engine
        assert EngineParams.from_json(doc).to_json() == doc
