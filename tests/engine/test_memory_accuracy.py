"""The memory model against the buffer sizes llama.cpp itself reports (a quick grid).

The full grid is ``bench/memory_accuracy.py``; this runs the same comparison on fewer
configurations and fails when accuracy regresses past the goal.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from planner.memory import MemoryConfig
from tests.helpers.bench_module import load_bench


def _bench() -> ModuleType:
    return load_bench("memory_accuracy")


@pytest.mark.slow
def test_predicted_buffers_match_llama_cpp(demo_model: Path, tmp_path: Path) -> None:
    bench = _bench()
    models = {"demo": demo_model, **bench.synthetic_models(tmp_path)}
    configs = [
        MemoryConfig(n_ctx=8192, n_seq=1),
        MemoryConfig(n_ctx=4096, n_seq=4, type_k="q8_0", type_v="q8_0", flash_attn=True),
        MemoryConfig(n_ctx=4096, n_seq=1, type_k="q4_0", type_v="q4_0", flash_attn=True,
                     n_ubatch=256),
        MemoryConfig(n_ctx=8192, n_seq=2, flash_attn=True, load_mtp=True),  # qwen35 only
    ]
    rows = bench.compare(models, configs)
    assert len(rows) == (len(models) * (len(configs) - 1) + 1) * 5
    assert all(r.measured > 0 for r in rows)
    misses = bench.verdict(rows)
    assert not misses, "\n".join(misses)
    # the parts that follow fixed rules are exact to llama.cpp's printed precision
    assert all(r.error_pct == 0.0 for r in rows if r.part in ("model", "kv", "output"))
