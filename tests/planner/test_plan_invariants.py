"""Invariants over many model shapes x rigs: never raises, never over a GPU's budget."""

from __future__ import annotations

import json

import pytest

from planner.plan import plan
from planner.request import Request, TaskKind
from tests.planner import shapes as S
from tests.planner.rigs import RTX_3060, RTX_3090, RTX_4060, RTX_4090, apple, gpu, rig

MODELS = [S.build(S.LLAMA2_7B, "Q4_0"), S.build(S.LLAMA3_70B, "Q4_K_M"),
          S.build(S.QWEN25_32B, "IQ3_XXS"), S.build(S.MIXTRAL_8X7B, "Q5_K_M"),
          S.build(S.QWEN3_30B_A3B, "Q8_0"), S.build(S.QWEN35_35B_A3B, "Q4_K_M"),
          S.build(S.QWEN3_NEXT_80B, "Q4_K_M"), S.build(S.QWEN35_27B, "Q6_K"),
          S.build(S.GPT_OSS_120B, "MXFP4_MOE", 63.37), S.build(S.GEMMA3_27B, "Q4_K_M"),
          S.build(S.DEEPSEEK_V3, "IQ2_XXS")]
RIGS = {"4090": rig(RTX_4090, ram_gib=64), "3090x2": rig(RTX_3090, RTX_3090, ram_gib=128),
        "4090+3060+4060": rig(RTX_4090, RTX_3060, RTX_4060, ram_gib=64),
        "display 12GB": rig(gpu("RTX 4070", 12, 504, display=True), ram_gib=32),
        "apple 64": apple(64, 400), "cpu 16": rig(ram_gib=16, ram_bw=50)}


@pytest.mark.parametrize("rig_name", list(RIGS))
def test_every_plan_is_within_every_gpu_budget_and_serialises(rig_name: str) -> None:
    inv = RIGS[rig_name]
    for model in MODELS:
        for task in (TaskKind.CHAT, TaskKind.CODE):
            p = plan(inv, model, Request(task=task, advise=False))
            assert p.predicted.decode_tps > 0, model.name
            json.dumps(p.to_json())
            for d in p.devices:
                if d.kind == "gpu" and p.fits:
                    assert d.used_bytes <= d.capacity_bytes - d.reserve_bytes, \
                        (rig_name, model.name, d.id)
            assert p.engine.n_ctx == p.context * p.parallel
            assert p.context <= model.n_ctx_train
