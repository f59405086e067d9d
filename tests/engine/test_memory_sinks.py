"""The memory model against llama.cpp's own buffers on gpt-oss-shaped models (attention
sinks, biases on every projection, sliding-window blocks, routed experts with biases),
with flash attention and quantized KV, at several contexts and micro-batches.

Narrow models on purpose: there the experts' intermediate tensors set the compute
buffer's high-water mark (at gpt-oss's published widths the output logits do, and hide
them). Every case loads the model with llama.cpp in this process (CPU) and compares the
buffer sizes it prints with ``planner.memory.estimate`` (``bench/memory_accuracy.py``).
The full grid: ``bench/sinks_memory.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from planner.memory import MemoryConfig
from tests.helpers.gguf_factory import Shape
from tests.helpers.gguf_gpt_oss import write_gpt_oss

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

SHAPES = {
    # the factory's default widths (16-wide heads: f16 cache only), wider experts
    "narrow": Shape(n_layers=4, n_expert=8, n_expert_used=2, n_ff_exp=256),
    # 64-wide heads (a quantized cache needs whole 32-element blocks per row), four
    # experts used per token, as gpt-oss does
    "narrow-hd64": Shape(n_layers=4, n_embd=128, n_head=2, n_head_kv=1, head_dim=64,
                         n_expert=16, n_expert_used=4, n_ff_exp=256),
}
CASES = [
    ("narrow", MemoryConfig(n_ctx=4096, flash_attn=True)),
    ("narrow", MemoryConfig(n_ctx=1024, flash_attn=True, n_ubatch=64)),
    ("narrow", MemoryConfig(n_ctx=32768, n_seq=4, flash_attn=True, n_ubatch=2048)),
    ("narrow-hd64", MemoryConfig(n_ctx=4096, type_k="q8_0", type_v="q8_0", flash_attn=True)),
    ("narrow-hd64", MemoryConfig(n_ctx=32768, type_k="q8_0", type_v="q8_0", flash_attn=True,
                                 n_ubatch=2048)),
    ("narrow-hd64", MemoryConfig(n_ctx=4096, n_seq=4, type_k="q4_0", type_v="q4_0",
                                 flash_attn=True, n_ubatch=256)),
    ("narrow-hd64", MemoryConfig(n_ctx=8192, type_k="q8_0", type_v="q8_0", flash_attn=True,
                                 n_ubatch=1024)),
]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_accuracy",
                                                  ROOT / "bench" / "memory_accuracy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sinks")
    return {name: write_gpt_oss(folder / f"{name}.gguf", shape, header_only=True)
            for name, shape in SHAPES.items()}


@pytest.mark.parametrize(("model", "config"), CASES,
                         ids=[f"{m}-ctx{c.n_ctx}-{c.type_k}-ub{c.n_ubatch}-x{c.n_seq}"
                              for m, c in CASES])
def test_gpt_oss_buffers_are_never_under_llama_cpp_s(
        models: dict[str, Path], model: str, config: MemoryConfig) -> None:
    config = MemoryConfig(**{**config.__dict__, "n_batch": max(2048, config.n_ubatch)})
    rows = {r.part: r for r in _bench().compare({model: models[model]}, [config])}
    total, compute = rows["total"], rows["compute"]
    assert total.measured > 0 and compute.measured > 0
    assert total.error_pct >= -2.0, f"total under by {total.error_pct:.2f}%"
    assert abs(total.error_pct) <= 3.0, f"total off by {total.error_pct:.2f}%"
    assert abs(compute.error_pct) <= 5.0, f"compute off by {compute.error_pct:.2f}%"
