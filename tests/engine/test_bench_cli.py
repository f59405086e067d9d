"""``loadout bench`` and ``loadout chat`` as a user runs them (real process, demo model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BENCH_KEYS = {"schema", "decode_tps", "prefill_tps", "ttft_s", "e2e_tps", "prompt_tokens",
              "generated_tokens", "predicted", "text"}


def loadout(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # one thread: on a busy shared machine two threads wait on each other at every barrier
    return subprocess.run([sys.executable, "-m", "loadout", *args, "--threads", "1"],
                          capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def test_bench_json_follows_the_contract(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("What is the capital of France? Answer briefly.")
    result = loadout("bench", "demo", "--json", "--prompt-file", str(prompt),
                     "--max-tokens", "24")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)  # one JSON document and nothing else on stdout
    assert set(doc) >= BENCH_KEYS
    assert doc["schema"] == "loadout.bench/1"
    assert "Paris" in doc["text"]  # greedy: the demo model's known answer
    assert doc["prompt_tokens"] > 10 and doc["cached_tokens"] == 0
    assert 1 < doc["generated_tokens"] <= 24
    for key in ("decode_tps", "prefill_tps", "ttft_s", "e2e_tps"):
        assert isinstance(doc[key], float) and doc[key] > 0
    assert doc["e2e_tps"] < doc["decode_tps"]
    assert 0.0 < doc["decode_overhead"] < 0.5
    predicted = doc["predicted"]
    assert predicted is None or {"decode_tps", "prefill_tps", "ttft_s"} <= set(predicted)
    # predicted where it was measured: at the prompt's length in this model's tokens
    assert predicted is None or predicted["prompt_tokens"] == doc["prompt_tokens"]


def test_bench_repeats_process_the_whole_prompt_and_report_medians(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Write one sentence about the sea.")
    result = loadout("bench", "demo", "--json", "--no-plan", "--prompt-file", str(prompt),
                     "--max-tokens", "6", "--ignore-eos", "--repeat", "3")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["repeats"] == 3 and doc["cached_tokens"] == 0
    for key in ("decode_tps", "prefill_tps", "ttft_s"):
        runs = doc["samples"][key]
        assert len(runs) == 3 and all(v > 0 for v in runs)
        assert doc[key] == sorted(runs)[1]


def test_bench_table_names_every_figure() -> None:
    result = loadout("bench", "demo", "--max-tokens", "8", "--ignore-eos", "--no-plan")
    assert result.returncode == 0, result.stderr
    for label in ("decode t/s", "prefill t/s", "TTFT s", "end-to-end t/s", "measured",
                  "predicted"):
        assert label in result.stdout
    assert "8 generated" in result.stdout


def test_bench_of_a_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    result = loadout("bench", str(tmp_path / "none.gguf"), "--json")
    assert result.returncode == 1 and result.stdout == ""
    assert "no such model file" in result.stderr


def test_chat_streams_the_answer_and_prints_the_speed_line() -> None:
    result = loadout("chat", "demo", "-p", "What is the capital of France? Answer briefly.",
                     "--temperature", "0", "--no-plan")
    assert result.returncode == 0, result.stderr
    assert "Paris" in result.stdout
    speed = result.stderr.strip().splitlines()[-1]
    for label in ("TTFT", "prefill", "decode", "end-to-end", "prompt", "generated tokens"):
        assert label in speed
