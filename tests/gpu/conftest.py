"""tests/gpu: every GPU placement path executed on a real ggml GPU backend.

They run on the Vulkan engine build (``python3 dev.py setup --engine vulkan``; ``python3
dev.py test`` builds it once where apt-get can install the Vulkan packages). Without a
GPU, Mesa's lavapipe is the device: a software Vulkan driver that llama.cpp treats as a
GPU with its own memory heap (``GGML_VK_VISIBLE_DEVICES=0`` names it, since ggml skips
CPU-type Vulkan devices otherwise). This process keeps the CPU engine; everything that
loads on the GPU runs in a child process on that build (:mod:`tests.gpu.worker`).

Where the build or a GPU device is missing, every test here is skipped with the reason
(``pytest -ra`` lists it): never a silent pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VULKAN = Path(sys.prefix) / "engines" / "vulkan"
SKIP_ENV = "LOADOUT_GPU_TESTS_SKIP"
HERE = Path(__file__).resolve().parent


def _unavailable() -> str | None:
    reason = os.environ.get(SKIP_ENV)
    if reason:
        return reason
    if not (VULKAN / "engine.json").is_file():
        return (f"no Vulkan engine build in {VULKAN.parent} (python3 dev.py setup --engine "
                "vulkan builds it)")
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _unavailable()
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"GPU tests not run: {reason}"))


def gpu_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a child process on the Vulkan build."""
    env = dict(os.environ, LOADOUT_ENGINE="vulkan", LOADOUT_HOME=str(home),
               PYTHONPATH=str(ROOT))
    env.setdefault("GGML_VK_VISIBLE_DEVICES", "0")
    for name in ("LOADOUT_ENGINE_ACTIVE", "LOADOUT_ENGINE_REASON", "LLAMA_CPP_LIB_PATH",
                 "MTMD_CPP_LIB"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_worker(home: Path, *args: str, timeout: float = 600, **env: str) -> dict[str, Any]:
    """Run ``tests/gpu/worker.py ARGS`` on the Vulkan build; its JSON answer."""
    proc = subprocess.run([sys.executable, str(HERE / "worker.py"), *args], cwd=ROOT,
                          env=gpu_env(home, **env), capture_output=True, text=True,
                          timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"worker {args} failed (exit {proc.returncode}):\n"
                             f"{proc.stderr[-4000:]}\n{proc.stdout[-2000:]}")
    return dict(json.loads(lines[-1]))


@pytest.fixture(scope="session")
def gpu_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LOADOUT_HOME shared by the GPU children (their detection cache lives there)."""
    return tmp_path_factory.mktemp("gpu-home")


@pytest.fixture(scope="session")
def vulkan_device(gpu_home: Path) -> dict[str, Any]:
    """The Vulkan device the engine build sees (skips the module when it sees none)."""
    found = run_worker(gpu_home, "devices", timeout=300)
    gpus = [d for d in found["devices"] if d["kind"] in ("gpu", "igpu")]
    if not gpus:
        pytest.skip(f"GPU tests not run: the Vulkan engine sees no GPU device "
                    f"({found['devices']})")
    return dict(gpus[0])
