"""Offline estimates: catalog models sized and planned from their published shape.

The estimate of a model is checked against the real header of a model of the same shape
(a header-only GGUF written here, Q8_0 weights): its size, and the real planner's figures
for both on the same machines.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engine.gguf_file import load_profile
from engine.hub.catalog import Catalog, load_catalog
from engine.hub.estimate import estimated_bytes, estimated_profile, estimated_recommendations
from engine.hub.recommend import Fit, fit_badge
from planner.plan import plan
from planner.profile import ModelProfile
from planner.request import Request, TaskKind
from tests.engine.test_recommend import rig
from tests.helpers.gguf_factory import Shape, write_llama, write_qwen3moe


@pytest.fixture(scope="module")
def bundled() -> Catalog:
    return load_catalog(refresh=False)  # the bundled catalog, nothing listed in a test home


def _plans(profile: ModelProfile, rig_name: str) -> tuple[Fit, float, int, float, str]:
    """Fit, decode t/s, context, KV bytes per token of context and KV type of a plan."""
    p = plan(rig(rig_name), profile, Request(task=TaskKind.CHAT, advise=False))
    kv = sum(d.kv_bytes for d in p.devices) / p.context
    return fit_badge(p), p.predicted.decode_tps, p.context, kv, p.kv_type


def test_size_is_parameters_times_bits_per_weight(bundled: Catalog) -> None:
    model = bundled.get("llama-3.1-8b")
    assert model is not None and model.available == ()  # never listed: no real size
    q4 = estimated_bytes(model, "Q4_K_M")
    assert q4 is not None and 4.8e9 < q4 < 5.0e9        # 8.03 B x 4.89 bits
    sizes = [estimated_bytes(model, q) for q in ("Q8_0", "Q6_K", "Q4_K_M", "IQ3_XXS")]
    assert sizes == sorted(sizes, reverse=True)  # type: ignore[type-var]
    assert estimated_bytes(model, "NO_SUCH_QUANT") is None
    assert estimated_bytes(replace(model, shape=()), "Q4_K_M") is None
    assert estimated_profile(replace(model, shape=())) is None


@pytest.mark.parametrize("model_id, writer, shape", [
    ("llama-3.1-8b", write_llama,
     Shape(n_layers=32, n_embd=4096, n_head=32, n_head_kv=8, head_dim=128, n_ff=14336,
           n_vocab=128256, n_ctx_train=131072, weight_type="Q8_0")),
    ("qwen3-30b-a3b", write_qwen3moe,
     Shape(n_layers=48, n_embd=2048, n_head=32, n_head_kv=4, head_dim=128, n_ff=6144,
           n_vocab=151936, n_ctx_train=40960, n_expert=128, n_expert_used=8, n_ff_exp=768,
           weight_type="Q8_0")),
])
def test_estimate_plans_like_the_real_header_of_that_shape(
        bundled: Catalog, tmp_path: Path, model_id: str, writer: object, shape: Shape) -> None:
    real = load_profile(writer(tmp_path / "real.gguf", shape, header_only=True))  # type: ignore[operator]
    model = bundled.get(model_id)
    assert model is not None
    guess = estimated_profile(model, "Q8_0")
    assert guess is not None
    assert abs(guess.file_bytes - real.file_bytes) / real.file_bytes < 0.05
    for rig_name in ("cpu-16gb", "12gb-48gb", "24gb"):
        real_fit, real_tps, real_ctx, real_kv, real_type = _plans(real, rig_name)
        fit, tps, ctx, kv, kv_type = _plans(guess, rig_name)
        assert fit is real_fit, rig_name
        assert abs(tps - real_tps) / real_tps < 0.15, (rig_name, tps, real_tps)
        assert 0.75 <= ctx / real_ctx <= 1.25, (rig_name, ctx, real_ctx)  # a context step
        if kv_type == real_type:  # the planner may pick another KV type near a limit
            assert abs(kv - real_kv) <= 0.01 * real_kv, rig_name


def test_offline_recommendations_rank_every_shaped_model_and_are_marked(
        bundled: Catalog) -> None:
    result = estimated_recommendations(rig("12gb-48gb"), "chat", bundled)
    assert {r.model_id for r in result.items} == {m.id for m in bundled.models}
    assert all(r.estimated and not r.exact_profile and r.spec == f"hf:{r.repo}"
               for r in result.items)
    assert all(r.download_bytes > 0 and r.decode_tps > 0 for r in result.items)
    tiers = [r.tier for r in result.items]
    assert tiers == sorted(tiers) and tiers[0] == 0  # something usable on a 12 GB GPU
    big = next(r for r in result.items if r.model_id == "deepseek-v3-0324")
    assert big.fit in (Fit.STREAMS_FROM_DISK, Fit.DOES_NOT_FIT)  # 671 B > 12 + 48 GB
    assert big.tier >= 2 and big.download_bytes > 100e9
    assert result.items[0].to_json()["estimated"] is True
