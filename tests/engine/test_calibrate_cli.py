"""``loadout calibrate`` and ``loadout bench --spec`` as a user runs them (demo model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def loadout(*args: str, timeout: float = 300, threads: bool = True
            ) -> subprocess.CompletedProcess[str]:
    # one thread: on a busy shared machine two threads wait on each other at every barrier
    extra = ["--threads", "1"] if threads else []
    return subprocess.run([sys.executable, "-m", "loadout", *args, *extra],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_calibrate_records_three_runs_and_the_next_plan_rests_on_them() -> None:
    result = loadout("calibrate", "demo", "--seconds", "0", "--max-tokens", "20", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "loadout.calibration/1" and len(doc["runs"]) == 3
    assert all(r["generated_tokens"] == 20 and r["decode_tps"] > 0 for r in doc["runs"])
    predicted = doc["predicted"]
    assert predicted["calibration"]["runs"] == 3
    assert predicted["calibration"]["scope"] == "model"
    assert predicted["raw"]["decode_tps"] > 0
    # the plan command says so too, with the raw prediction beside it
    shown = loadout("plan", "demo", threads=False)
    assert shown.returncode == 0, shown.stderr
    assert "calibrated on 3 runs on this machine" in shown.stdout
    assert "raw prediction" in shown.stdout


def test_calibrate_core_only_prints_one_cores_rates_and_saves_nothing() -> None:
    result = loadout("calibrate", "--core-only", "--json", threads=False)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "loadout.core_rate/1" and doc["rounds"] >= 1
    assert 5 < doc["prefill_gflops"] < 2000 and 0.5 < doc["decode_gbps"] < 200
    assert not (Path(os.environ["LOADOUT_HOME"]) / "cache" / "hardware-probes.json").exists()


def test_bench_runs_the_speculation_it_is_given_and_shows_both_sides() -> None:
    result = loadout("bench", "demo", "--spec", "ngram:3", "--json", "--raw", "--ignore-eos",
                     "--max-tokens", "24")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    # a pinned n-gram length is a maximum: the planner picks the best length up to it
    assert doc["launch"]["spec_mode"] == "ngram" and 1 <= doc["launch"]["draft_tokens"] <= 3
    assert doc["speculation"]["mode"] == "ngram"
    assert doc["speculation"]["drafted_tokens"] >= 0
    assert doc["predicted"]["tokens_per_step"] >= 1.0


def test_bench_refuses_an_unknown_speculation_mode_before_loading() -> None:
    result = loadout("bench", "demo", "--spec", "telepathy:2", "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert "loadout bench: error:" in result.stderr and "telepathy" in result.stderr


def test_calibrate_without_a_plan_is_refused() -> None:
    result = loadout("calibrate", "demo", "--no-plan", "--seconds", "0")
    assert result.returncode == 2 and "--no-plan" in result.stderr
