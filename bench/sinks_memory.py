"""Memory model vs llama.cpp on gpt-oss-shaped models: attention sinks, sliding-window
blocks, flash attention and quantized KV, across contexts and batch sizes.

Run from the repository root::

    .venv/bin/python bench/sinks_memory.py            # the grid below
    .venv/bin/python bench/sinks_memory.py --quick    # the cases the tests check

Synthetic gpt-oss models (``tests/helpers/gguf_gpt_oss.py``: sinks, biases, SWA on every
other block, routed experts) are loaded in this process with llama.cpp (CPU); for every
context configuration the buffer sizes llama.cpp prints (model, KV, compute, output) are
compared with ``planner.memory.estimate`` by ``bench/memory_accuracy.py``'s machinery.
Goal: no total under-predicted by more than 2% (the one error that can run out of
memory), each total within 3%. Exit code 1 if missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.memory import MemoryConfig  # noqa: E402

KV = (("f16", False), ("f16", True), ("q8_0", True), ("q4_0", True))


def sink_models(folder: Path) -> dict[str, Path]:
    """Narrow gpt-oss models, where the experts' intermediate tensors set the compute
    buffer (``tests/engine/test_memory_sinks.py``'s), and one at gpt-oss-20b's published
    widths (two blocks: compute buffers follow widths, not depth; its logits set it)."""
    from tests.helpers.gguf_factory import Shape
    from tests.helpers.gguf_gpt_oss import write_gpt_oss

    shapes = {
        "oss-narrow-hd16": Shape(n_layers=4, n_expert=8, n_expert_used=2, n_ff_exp=256),
        "oss-narrow-hd64": Shape(n_layers=4, n_embd=128, n_head=2, n_head_kv=1, head_dim=64,
                                 n_expert=16, n_expert_used=4, n_ff_exp=256),
        "oss-20b-wide": Shape(n_layers=2, n_embd=2880, n_head=64, n_head_kv=8, head_dim=64,
                              n_ff=2880, n_vocab=201088, n_expert=32, n_expert_used=4,
                              n_ff_exp=2880),
    }
    return {name: write_gpt_oss(folder / f"{name}.gguf", shape, header_only=True)
            for name, shape in shapes.items()}


def configs(quick: bool, model: str) -> list[MemoryConfig]:
    """Contexts x batch sizes x KV types x parallel sequences (16-wide heads: f16 only,
    llama.cpp refuses a quantized cache whose rows are not whole blocks)."""
    contexts = (4096, 32768) if quick else (1024, 4096, 32768)
    ubatches = (512, 2048) if quick else (64, 512, 2048)
    kv = KV[1:3] if quick else KV
    if "hd16" in model:
        kv = tuple(k for k in kv if k[0] == "f16")
    return [MemoryConfig(n_ctx=ctx, n_seq=n, type_k=t, type_v=t, flash_attn=fa,
                         n_batch=max(ub, 2048), n_ubatch=ub)
            for ctx in contexts for ub in ubatches for t, fa in kv
            for n in ((1,) if quick else (1, 4))]


def main(argv: list[str] | None = None) -> int:
    """Print every comparison and the misses; return 1 if a goal is missed."""
    from bench.memory_accuracy import MIB, compare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the tests' cases only")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(f"{'model':<16} {'ctx':>6} {'kv':>5} {'fa':>3} {'ub':>5} {'par':>3} "
          f"{'compute MiB pred / llama':>26} {'err':>7} {'total MiB pred / llama':>24} "
          f"{'err':>7}")
    misses, count, worst = [], 0, 0.0
    with tempfile.TemporaryDirectory(prefix="loadout-sinks-") as tmp:
        for model, path in sink_models(Path(tmp)).items():
            grid = configs(args.quick, model)
            rows = compare({model: path}, grid)   # five parts per configuration
            for i, c in enumerate(grid):
                parts = {r.part: r for r in rows[i * 5:(i + 1) * 5]}
                comp, tot = parts["compute"], parts["total"]
                count += 1
                worst = min(worst, tot.error_pct)
                print(f"{model:<16} {c.n_ctx:>6} {c.type_k:>5} "
                      f"{'on' if c.flash_attn else 'off':>3} {c.n_ubatch:>5} {c.n_seq:>3} "
                      f"{comp.predicted / MIB:>12.2f} / {comp.measured / MIB:>10.2f} "
                      f"{comp.error_pct:>+6.1f}% {tot.predicted / MIB:>11.2f} / "
                      f"{tot.measured / MIB:>10.2f} {tot.error_pct:>+6.1f}%")
                if tot.error_pct < -2.0 or abs(tot.error_pct) > 3.0:
                    misses.append(f"{model} ctx {c.n_ctx} {c.type_k} fa {c.flash_attn} "
                                  f"ub {c.n_ubatch} x{c.n_seq}: total {tot.error_pct:+.2f}%, "
                                  f"compute {comp.error_pct:+.2f}%")
    print(f"{count} contexts in {time.perf_counter() - start:.1f} s, most under "
          f"{worst:+.2f}%: " + ("all goals met" if not misses else f"{len(misses)} missed"))
    for miss in misses:
        print("  MISSED", miss)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
