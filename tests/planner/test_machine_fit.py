"""The per-machine correction learnt from this machine's measured runs (pure)."""

from __future__ import annotations

import math

import pytest

from planner.machine_fit import (
    HIGH,
    LOW,
    RunSample,
    fit_correction,
    model_key,
    plan_regime,
    predicted_decode_at,
    regime_of,
    run_features,
    sample_of,
)
from planner.plan import plan
from planner.request import Request, SpecMode, SpecRequest
from tests.planner import rigs
from tests.planner import shapes as S

CPU_DENSE = regime_of("cpu", moe=False, offloaded=False, speculative=False)


def _runs(ratio: float, n: int, regime: str = CPU_DENSE, model: str = "m") -> list[RunSample]:
    return [RunSample(regime, model, ratio, ratio * 1.5) for _ in range(n)]


def test_no_runs_leave_the_prediction_alone() -> None:
    c = fit_correction([], CPU_DENSE)
    assert c.runs == 0 and c.decode_factor == 1.0 and c.prefill_factor == 1.0


def test_three_runs_of_a_regime_set_its_factors() -> None:
    c = fit_correction(_runs(0.8, 3), CPU_DENSE)
    assert c.runs == 3 and c.scope == "regime"
    assert c.decode_factor == pytest.approx(0.8) and c.prefill_factor == pytest.approx(1.2)


def test_the_median_ignores_one_odd_run() -> None:
    runs = [*_runs(0.8, 4), RunSample(CPU_DENSE, "m", 0.1, 0.1)]
    assert fit_correction(runs, CPU_DENSE).decode_factor == pytest.approx(0.8)


def test_the_correction_is_bounded() -> None:
    assert fit_correction(_runs(50.0, 3), CPU_DENSE).decode_factor == HIGH
    assert fit_correction(_runs(0.001, 3), CPU_DENSE).decode_factor == LOW


def test_runs_of_the_same_model_outweigh_the_regime() -> None:
    runs = [*_runs(0.5, 5, model="other"), *_runs(0.9, 2, model="this")]
    c = fit_correction(runs, CPU_DENSE, "this")
    assert c.scope == "model" and c.decode_factor == pytest.approx(0.9)
    # a new model takes the regime's part: each model once, however often it ran
    assert fit_correction(runs, CPU_DENSE, "new").decode_factor == pytest.approx(
        math.sqrt(0.5 * 0.9))


def test_another_regime_of_the_backend_counts_at_half_strength() -> None:
    moe = regime_of("cpu", moe=True, offloaded=False, speculative=False)
    c = fit_correction(_runs(0.64, 3), moe)
    assert c.scope == "backend" and c.decode_factor == pytest.approx(0.8)
    assert fit_correction(_runs(0.64, 3), "cuda/dense/resident/plain").runs == 0


def test_only_the_latest_runs_count() -> None:
    runs = [*_runs(0.5, 30), *_runs(0.9, 20)]
    assert fit_correction(runs, CPU_DENSE).decode_factor == pytest.approx(0.9)


def test_a_calibrated_plan_keeps_its_raw_prediction_and_says_so() -> None:
    inv, model = rigs.rig(), S.build(S.LLAMA3_8B, "Q4_K_M")
    raw = plan(inv, model, Request(advise=False))
    regime = plan_regime(inv, model, raw)
    assert regime.startswith("cpu/dense/resident/plain")
    runs = tuple(RunSample(regime, model_key(model), 0.5, 2.0) for _ in range(5))
    got = plan(inv, model, Request(advise=False, machine_runs=runs))
    assert got.predicted.decode_tps == pytest.approx(raw.predicted.decode_tps * 0.5)
    assert got.predicted.prefill_tps == pytest.approx(raw.predicted.prefill_tps * 2.0)
    assert got.raw_predicted == raw.predicted
    doc = got.to_json()["predicted"]
    assert doc["calibration"]["runs"] == 5 and doc["calibration"]["scope"] == "model"
    assert doc["raw"]["decode_tps"] == pytest.approx(raw.predicted.decode_tps, rel=1e-3)
    assert "raw" not in raw.to_json()["predicted"]


def test_a_gpu_plan_with_experts_in_ram_and_mtp_is_its_own_regime() -> None:
    inv, model = rigs.rig(rigs.RTX_3060), S.build(S.QWEN35_35B_A3B, "Q4_K_M")
    p = plan(inv, model, Request(advise=False, spec=SpecRequest(SpecMode.MTP, 2)))
    assert plan_regime(inv, model, p) == "cuda/moe/offloaded/spec"


def test_a_run_is_compared_with_the_prediction_at_its_own_depth() -> None:
    inv, model = rigs.rig(), S.build(S.LLAMA3_8B, "Q4_K_M")
    p = plan(inv, model, Request(advise=False, depth=1000, context=8192))
    features = run_features(inv, model, p)
    deeper = plan(inv, model, Request(advise=False, depth=5000, context=8192))
    assert predicted_decode_at(features, 5000) == pytest.approx(
        deeper.predicted.decode_tps, rel=0.01)
    measured = {"decode_tps": features["decode_tps"] * 0.7, "prefill_tps": 10.0,
                "prompt_tokens": 1000 - 32, "cached_tokens": 0, "generated_tokens": 64}
    sample = sample_of(features, measured)
    assert sample is not None and sample.decode_ratio == pytest.approx(0.7, rel=0.01)
    assert sample.prefill_ratio == pytest.approx(10.0 / features["prefill_tps"])


def test_a_warm_up_or_one_word_answer_is_not_a_run() -> None:
    features = {"regime": CPU_DENSE, "model": "m", "decode_tps": 50.0, "prefill_tps": 500.0,
                "token_s": 0.02, "depth": 0, "kv_s_per_cell": 0.0}
    short = {"decode_tps": 40.0, "prefill_tps": 400.0, "prompt_tokens": 300,
             "cached_tokens": 0, "generated_tokens": 3}
    assert sample_of(features, short) is None
    assert sample_of({"model": "m"}, {**short, "generated_tokens": 64}) is None
    ok = sample_of(features, {**short, "generated_tokens": 64})
    assert ok is not None and math.isclose(ok.decode_ratio or 0, 0.8)
