"""Shared fixtures: every test runs with Loadout's folders in a temporary directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def loadout_home(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point LOADOUT_HOME (config, data, cache, logs, models) at a fresh temp folder."""
    home = tmp_path_factory.mktemp("loadout-home")
    monkeypatch.setenv("LOADOUT_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield home


@pytest.fixture(scope="session")
def demo_model() -> Path:
    """The embedded SmolLM2-135M-Instruct Q4_1 GGUF."""
    from engine.demo import demo_model_path

    return demo_model_path()


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session-wide folder for synthetic GGUFs (written once, shared by tests)."""
    return tmp_path_factory.mktemp("gguf")


@pytest.fixture(scope="session")
def llama_gguf(synthetic_dir: Path) -> Path:
    """A tiny loadable llama model with random weights."""
    from tests.helpers.gguf_factory import write_llama

    return write_llama(synthetic_dir / "tiny-llama.gguf")


@pytest.fixture(scope="session")
def moe_gguf(synthetic_dir: Path) -> Path:
    """A tiny loadable qwen3moe model (8 experts, 2 used)."""
    from tests.helpers.gguf_factory import write_qwen3moe

    return write_qwen3moe(synthetic_dir / "tiny-qwen3moe.gguf")


@pytest.fixture(scope="session")
def sparse_70b(synthetic_dir: Path) -> Path:
    """A header-only sparse llama-70B Q4_K file (~40 GB apparent size)."""
    from tests.helpers.gguf_factory import write_sparse_70b

    return write_sparse_70b(synthetic_dir / "llama-70b-Q4_K.gguf")
