"""The answer on the Vulkan device equals the CPU engine's greedy answer (full and half
offload), and llama.cpp offloaded the layers the plan asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.gpu.conftest import run_worker
from tests.gpu.worker import ANSWER_TOKENS, PROMPT


def _cpu_answer(demo_model: Path) -> list[int]:
    from engine.launch import LaunchSpec
    from engine.requests import GenerationRequest, SamplingParams
    from engine.runtime import Engine

    engine = Engine(LaunchSpec(str(demo_model), n_ctx=512, n_gpu_layers=0, n_threads=2,
                               warm_up=False))
    try:
        final = engine.submit(GenerationRequest(prompt=PROMPT, params=SamplingParams(
            temperature=0.0, max_tokens=ANSWER_TOKENS, ignore_eos=True))).result(300)
    finally:
        engine.close()
    return list(final.token_ids)


def test_greedy_answer_on_the_device_equals_the_cpu_engines(
        gpu_home: Path, vulkan_device: dict[str, Any], demo_model: Path) -> None:
    found = run_worker(gpu_home, "answer", "full", "half", timeout=900)
    cpu = _cpu_answer(demo_model)
    assert len(cpu) == ANSWER_TOKENS
    for pin, n_layers in (("full", 31), ("half", 15)):
        got = found[pin]
        assert got["tokens"] == cpu, (pin, got["text"])
        offloaded = [ln for ln in got["log"] if "offloaded" in ln and "layers to GPU" in ln]
        assert offloaded and f"offloaded {n_layers}/31 layers" in offloaded[-1], offloaded
