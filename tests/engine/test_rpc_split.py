"""The demo model split across two real ``loadout worker`` processes on loopback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.launch import LaunchSpec
from engine.requests import GenerationRequest, SamplingParams
from engine.runtime import Engine
from tests.engine.test_rpc_worker import ROOT, _free_port, _wait_listening

QUESTION = ({"role": "user", "content": "What is the capital of France? Answer briefly."},)


def _start_worker() -> tuple[str, subprocess.Popen[str]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "loadout", "worker", "--port", str(port),
                             "--threads", "1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    _wait_listening(port, proc)
    return f"127.0.0.1:{port}", proc


@pytest.fixture()
def two_workers() -> Iterator[list[tuple[str, subprocess.Popen[str]]]]:
    workers = [_start_worker(), _start_worker()]
    try:
        yield workers
    finally:
        for _, proc in workers:
            proc.kill()
            proc.wait(timeout=10)


def _answer(spec: LaunchSpec) -> tuple[str, list[str]]:
    engine = Engine(spec)
    try:
        handle = engine.submit(GenerationRequest(
            messages=QUESTION, params=SamplingParams(temperature=0.0, max_tokens=12)))
        return handle.result().text, engine.load_log
    finally:
        engine.close()


def test_split_across_two_workers_answers_exactly_as_one_process(
        demo_model: Path, two_workers: list[tuple[str, subprocess.Popen[str]]]) -> None:
    local, _ = _answer(LaunchSpec(model_path=str(demo_model), n_ctx=512, n_threads=1,
                                  n_gpu_layers=0))
    endpoints = tuple(e for e, _ in two_workers)
    split, log = _answer(LaunchSpec(model_path=str(demo_model), n_ctx=512, n_threads=1,
                                    n_gpu_layers=-1, devices=endpoints,
                                    rpc_workers=endpoints, tensor_split=(0.5, 0.5)))
    assert "Paris" in local
    assert split == local
    # llama.cpp really put weights and KV on both workers
    for endpoint in endpoints:
        assert any(f"[{endpoint}] model buffer size" in line for line in log), log
        assert any(f"[{endpoint}] KV buffer size" in line for line in log), log


def test_an_unreachable_worker_fails_the_load_with_a_clear_error(demo_model: Path) -> None:
    dead = f"127.0.0.1:{_free_port()}"
    spec = LaunchSpec(model_path=str(demo_model), n_ctx=256, n_threads=1, n_gpu_layers=-1,
                      devices=(dead,), rpc_workers=(dead,))
    with pytest.raises(EngineError, match="refused"):
        Engine(spec)
