"""This machine's run records: written by the engine when a request finishes (demo model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import run_records
from engine.launch import LaunchSpec
from engine.planned_launch import plan_launch
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine

PROMPT = "Write a short story about a lighthouse keeper and the sea, in plain words. " * 3


def _ask(engine: Engine, max_tokens: int) -> None:
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True,
                            loop_guard="off")
    final = engine.submit(GenerationRequest(prompt=PROMPT, params=params)).result(120)
    assert final.error is None


@pytest.mark.slow
def test_a_finished_request_is_recorded_with_its_plans_regime_and_prediction(
        demo_model: Path) -> None:
    launch = plan_launch(str(demo_model), context=1024, prompt_tokens=64, n_threads=1)
    assert launch.plan is not None and launch.spec.run_features
    with Engine(launch.spec) as engine:
        _ask(engine, 24)
        _ask(engine, 2)  # a two-token answer is recorded but is no run to learn from
    records = run_records.load()
    assert [r["reason"] for r in records] == ["length", "length"]
    first = records[0]
    assert first["features"]["regime"] == "cpu/dense/resident/plain"
    assert first["features"]["decode_tps"] == pytest.approx(
        launch.plan["predicted"]["decode_tps"], rel=0.01)
    assert first["measured"]["generated_tokens"] == 24
    samples = run_records.samples()
    assert len(samples) == 1 and (samples[0].decode_ratio or 0) > 0
    # the next plan of this model on this machine rests on that run
    again = plan_launch(str(demo_model), context=1024, prompt_tokens=64, n_threads=1)
    assert again.plan is not None
    calibration = again.plan["predicted"]["calibration"]
    assert calibration["runs"] == 1 and calibration["scope"] == "regime"
    assert again.plan["predicted"]["raw"]["decode_tps"] == pytest.approx(
        launch.plan["predicted"]["decode_tps"], rel=0.01)


def test_an_engine_loaded_without_a_plan_records_nothing() -> None:
    assert LaunchSpec("m.gguf").run_features == ""
    assert run_records.recorder("") is None


def test_recording_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    features = json.dumps({"regime": "cpu/dense/resident/plain", "model": "m"})
    assert run_records.recorder(features) is not None
    monkeypatch.setenv(run_records.ENV, "off")
    assert run_records.recorder(features) is None


def test_unreadable_lines_are_skipped_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    features = {"regime": "cpu/dense/resident/plain", "model": "m", "decode_tps": 50.0,
                "prefill_tps": 500.0, "token_s": 0.02, "depth": 0, "kv_s_per_cell": 0.0}
    measured = {"decode_tps": 40.0, "prefill_tps": 400.0, "prompt_tokens": 300,
                "cached_tokens": 0, "generated_tokens": 64}
    record = run_records.recorder(json.dumps(features), path)
    assert record is not None
    record(measured, "stop")
    with open(path, "a", encoding="utf-8") as f:
        f.write("{not json\n[1, 2]\n")
    record(measured, "error")      # a failed request is not a measured run
    record(measured, "length")
    assert len(run_records.load(path)) == 2
    assert [s.decode_ratio for s in run_records.samples(path)] == [0.8, 0.8]


def test_a_large_record_file_keeps_its_latest_lines(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.jsonl"
    monkeypatch.setattr(run_records, "TRIM_BYTES", 200)
    monkeypatch.setattr(run_records, "KEEP", 5)
    for i in range(100):
        run_records.append({"i": i}, path)
    kept = [r["i"] for r in run_records.load(path)]
    assert kept[-1] == 99 and len(kept) <= 40 and kept == sorted(kept)
