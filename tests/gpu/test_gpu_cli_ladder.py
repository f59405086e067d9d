"""The out-of-memory ladder of the real CLI, on the Vulkan device: ``loadout bench`` plans
a model for the device's reported heap, the device holds less (this process's address
space capped, which is lavapipe's device memory), the load runs out of memory on
``Vulkan0``, and the CLI re-plans with less on that device and answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.gpu import worker
from tests.gpu.conftest import HERE, ROOT, gpu_env
from tests.helpers.gguf_factory import Shape, write_llama

ROOM_MIB = 450  # for every buffer of the load: less than the first plan puts on the device
ARGS = ("--ctx", "512")


def _cli(home: Path, *args: str, capped: Path | None = None) -> subprocess.CompletedProcess[str]:
    prefix = [str(HERE / "capped_cli.py"), str(capped), str(ROOM_MIB)] if capped else \
        ["-m", "loadout"]
    return subprocess.run([sys.executable, *prefix, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600,
                          env=gpu_env(home, MALLOC_ARENA_MAX="1"))


def test_bench_replans_after_the_device_runs_out_of_memory_and_answers(
        gpu_home: Path, vulkan_device: dict[str, Any], tmp_path: Path) -> None:
    model = write_llama(tmp_path / "big.gguf", Shape(**worker.BIG),  # type: ignore[arg-type]
                        header_only=True)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(worker.PROMPT, encoding="utf-8")
    planned = _cli(gpu_home, "plan", str(model), "--json", *ARGS)
    assert planned.returncode == 0, planned.stderr[-2000:]
    first = json.loads(planned.stdout)
    on_device = sum(d["weights_bytes"] + d["kv_bytes"] + d["compute_bytes"]
                    for d in first["devices"] if d["id"] == "gpu0")
    assert first["engine"]["n_gpu_layers"] > 0 and on_device > ROOM_MIB << 20

    got = _cli(gpu_home, "bench", str(model), "--json", "--prompt-file", str(prompt), "--raw",
               "--max-tokens", "2", "--ignore-eos", "--threads", "2", *ARGS, capped=model)
    assert got.returncode == 0, got.stderr[-4000:]
    assert "out of memory on Vulkan0; re-planned with less on that device" in got.stderr
    doc = json.loads(got.stdout.strip().splitlines()[-1])
    assert doc["generated_tokens"] == 2
    assert doc["launch"]["n_gpu_layers"] < first["engine"]["n_gpu_layers"]


def test_serve_replans_after_the_device_runs_out_of_memory_and_answers(
        gpu_home: Path, vulkan_device: dict[str, Any], tmp_path: Path) -> None:
    from openai import OpenAI

    model = write_llama(tmp_path / "big.gguf", Shape(**worker.BIG),  # type: ignore[arg-type]
                        header_only=True)
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "capped_cli.py"), str(model), str(ROOM_MIB), "serve",
         str(model), "--port", "0", "--ready-json", "--no-warmup", "--threads", "2", *ARGS],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=gpu_env(gpu_home, MALLOC_ARENA_MAX="1"))
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready", ready
        client = OpenAI(base_url=ready["base_url"], api_key="none", timeout=300)
        answer = client.completions.create(model="big", prompt=worker.PROMPT, max_tokens=1,
                                           temperature=0.0)
        assert answer.usage is not None and answer.usage.completion_tokens == 1
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=60)
    assert "out of memory on Vulkan0; re-planned with less on that device" in err
