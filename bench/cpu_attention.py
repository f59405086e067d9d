"""What a deep KV cache costs a CPU decode, with and without flash attention.

Loads the model twice in the engine (flash attention on / off, same threads), fills the
cache to each depth once, then times single-token decodes there (rounds alternate between
the two contexts; the best round of each is kept, as a shared machine only ever slows a
run down). Prints decode t/s per depth and the KV cost the speed model uses: how many
weight bytes' worth of time one byte of cache costs (``SpeedConstants.cpu_kv_cost`` with
flash attention, ``cpu_kv_cost_noflash`` without).

    python bench/cpu_attention.py [--model demo] [--threads N] [--depths 0,1000,3000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOKENS = 48


def _decode_ms(engine: object, depth: int) -> float:
    """ms per token of ``TOKENS`` single-token decodes after ``depth`` cached tokens."""
    from engine.native.batch import Batch

    ctx = engine._ctx  # type: ignore[attr-defined]
    batch = Batch(512, 1)
    try:
        if ctx.seq_pos_max(0) + 1 != depth:  # fill the cache to ``depth`` once
            ctx.seq_clear(0)
            for start in range(0, depth, 512):
                batch.clear()
                n = min(512, depth - start)
                batch.add_run([100 + (i % 3000) for i in range(start, start + n)], start, 0,
                              logits_last=True)
                assert batch.decode(ctx.ptr) == 0
        t0 = time.perf_counter()
        for i in range(TOKENS):
            batch.clear()
            batch.add(200 + i, depth + i, 0, True)
            assert batch.decode(ctx.ptr) == 0
        elapsed = time.perf_counter() - t0
        ctx.seq_rm(0, depth, -1)  # back to ``depth`` for the next round
        return 1000 * elapsed / TOKENS
    finally:
        batch.free()


def main() -> int:
    from engine.demo import demo_model_path
    from engine.gguf_file import load_profile
    from engine.launch import LaunchSpec
    from engine.models import resolve_local_model
    from engine.runtime import Engine

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--depths", default="0,1000,3000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = demo_model_path() if args.model == "demo" else resolve_local_model(args.model)
    depths = [int(d) for d in args.depths.split(",")]
    profile = load_profile(path)
    # K and V of every attention layer, f16 (2 bytes per value)
    kv_per_token = sum(2 * la.n_head_kv * (la.head_dim_k + la.head_dim_v)
                       for la in profile.layers if la.n_head_kv)
    weights = path.stat().st_size
    n_ctx = max(depths) + TOKENS + 64
    engines = {fa: Engine(LaunchSpec(str(path), n_ctx=n_ctx, n_threads=args.threads,
                                     n_threads_batch=args.threads, flash_attn=fa))
               for fa in ("on", "off")}
    best: dict[tuple[str, int], float] = {}
    try:
        for r in range(args.rounds):
            for depth in depths:
                for fa in (("on", "off") if r % 2 == 0 else ("off", "on")):
                    ms = _decode_ms(engines[fa], depth)
                    best[fa, depth] = min(best.get((fa, depth), ms), ms)
    finally:
        for engine in engines.values():
            engine.close()
    print(f"model {path.name}: {weights / 2**20:.1f} MiB of weights, "
          f"{kv_per_token / 1024:.1f} KiB of f16 cache per token; {args.threads} threads, "
          f"best of {args.rounds} rounds of {TOKENS} tokens")
    print(f"{'depth':>7} {'fa on t/s':>10} {'fa off t/s':>11} {'on cost':>8} {'off cost':>9}")
    for depth in depths:
        row = [f"{depth:>7}"]
        costs = []
        for fa in ("on", "off"):
            row.append(f"{1000 / best[fa, depth]:>10.1f}" if fa == "on"
                       else f"{1000 / best[fa, depth]:>11.1f}")
            base = best[fa, depths[0]]
            extra = best[fa, depth] - base
            kv = kv_per_token * (depth - depths[0])
            # weight bytes' worth of time per cache byte, against this machine's own rate
            costs.append(extra / base * weights / kv if kv > 0 else float("nan"))
        row.append(f"{costs[0]:>8.1f}")
        row.append(f"{costs[1]:>9.1f}")
        print(" ".join(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
