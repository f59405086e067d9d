"""How fast the GGUF header reader builds a profile of a huge model.

Run from the repository root::

    .venv/bin/python bench/gguf_read_speed.py

Writes a header-only (sparse) qwen3moe file shaped like a 235B-A22B Q4_K model — over
1,000 tensors, a 151,936-token vocabulary, about 130 GB apparent size, a few MB on disk —
then times ``engine.gguf_file.load_profile`` (cold: cache cleared each run) and
``planner.memory.estimate``. Goal: header read < 200 ms. Exit code 1 if missed.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import gguf_file  # noqa: E402
from planner.memory import MemoryConfig, Placement, estimate  # noqa: E402

GOAL_MS = 200.0
RUNS = 7


def write_big_moe(folder: Path) -> Path:
    """A sparse qwen3moe file: 94 blocks x 128 experts, Q4_K."""
    from tests.helpers.gguf_factory import Shape, write_qwen3moe

    shape = Shape(n_layers=94, n_embd=4096, n_head=64, n_head_kv=4, head_dim=128,
                  n_ff=12288, n_vocab=151936, n_ctx_train=262144, n_expert=128,
                  n_expert_used=8, n_ff_exp=1536, weight_type="Q4_K")
    return write_qwen3moe(folder / "qwen3moe-235b-a22b-Q4_K.gguf", shape, header_only=True)


def main() -> int:
    """Print the timings; return 1 if the header read misses the goal."""
    with tempfile.TemporaryDirectory(prefix="loadout-gguf-") as tmp:
        path = write_big_moe(Path(tmp))
        size = path.stat().st_size
        times = []
        for _ in range(RUNS):
            gguf_file._cache.clear()
            start = time.perf_counter()
            profile = gguf_file.load_profile(path)
            times.append((time.perf_counter() - start) * 1000)
        placement = Placement.all_on("gpu0", profile.n_layers)
        start = time.perf_counter()
        n = 50
        for i in range(n):
            estimate(profile, MemoryConfig(n_ctx=4096 * (1 + i % 16), n_seq=1 + i % 4),
                     placement)
        est_ms = (time.perf_counter() - start) * 1000 / n
    best, median = min(times), statistics.median(times)
    print(f"file: {size / 1e9:.1f} GB apparent, {len(profile.tensors)} tensors, "
          f"vocab {profile.n_vocab}, {profile.n_layers} blocks, {profile.expert_count} experts")
    print(f"load_profile: best {best:.1f} ms, median {median:.1f} ms over {RUNS} cold runs "
          f"(goal < {GOAL_MS:.0f} ms)")
    print(f"estimate: {est_ms:.2f} ms per call (distinct configurations, {n} calls)")
    ok = median < GOAL_MS
    print("goal met" if ok else "goal MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
