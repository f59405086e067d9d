"""How fast one CPU core multiplies each weight type, measured on the engine here.

Synthetic llamas of one shape (16 blocks 768 wide, 32k vocabulary, rows a multiple of
Q4_K's 256), every matrix of one type: F16, Q8_0, Q4_1, Q4_0 and
Q4_K (random weights; Q4_K blocks are written directly, the ``gguf`` package does not
quantize to it). All stay loaded in this process with one engine thread each, and every
round decodes once with each, in turn (the machinery of ``bench/cpu_shape_cost.py``: the
engine thread's CPU seconds per token, so the machine's other load mostly cancels).

Every model multiplies the same weights per token, so the ratio of their times is the
ratio of a core's rates per weight. Printed per type: the time per token over Q4_K's
(median over the rounds, with its range), what it makes per weight and per byte relative
to Q4_K, and the ratio the planner predicts. A core that streamed every type's bytes at
one rate would show the per-byte column at 1.00.

``--prefill N`` measures prefill instead: each model computes a prompt of N tokens in
one batch (llama.cpp's API directly, one thread, as ``bench/decode_parts.py``: the
calling thread's CPU seconds per prompt token, the models in turn round after round).
Prefill multiplies a batch of tokens by each weight (compute, not streaming), so it is
printed per weight: each type's rate over Q4_K's, and the GFLOP/s one core makes of the
block matrices (two per weight per token; the output layer runs for the last token only),
beside what the planner predicts, and (``matrices``) each type's block matrices alone over
Q4_K's, every model's attention priced as the planner prices it and taken out of its time
(the planner's ``CPU_PREFILL_RATE``; Q4_K's own rate there is what hardware detection
measures per core).

Run: ``.venv/bin/python bench/cpu_type_rate.py [--prefill 256]`` (about three minutes;
CPU).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cpu_shape_cost import decode, load, mark_cpu_time, prompt_of  # noqa: E402

TYPES = ("Q4_K", "F16", "Q8_0", "Q4_1", "Q4_0")
REFERENCE = "Q4_K"


def _q4_k_blocks(arr: np.ndarray) -> np.ndarray:
    """Q4_K rows of random codes (144-byte blocks of 256 weights: two f16 scales, 12
    bytes of sub-block scales, 128 of 4-bit codes), small finite scales."""
    rows, cols = arr.reshape(-1, arr.shape[-1]).shape
    rng = np.random.default_rng(7)
    blocks = rng.integers(0, 256, size=(rows, cols // 256, 144), dtype=np.uint8)
    blocks[:, :, 0:4] = np.array([0.002, 0.001], dtype=np.float16).view(np.uint8)
    return blocks.reshape(*arr.shape[:-1], cols // 256 * 144)


def write_models(folder: Path) -> dict[str, Path]:
    """One model per type, all of one shape."""
    from gguf import GGMLQuantizationType

    import tests.helpers.gguf_factory as factory

    quantize = factory.quantize

    def with_q4_k(arr: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
        return _q4_k_blocks(arr) if qtype == GGMLQuantizationType.Q4_K else quantize(arr, qtype)

    factory.quantize = with_q4_k  # type: ignore[assignment]
    try:
        out = {}
        for t in TYPES:
            s = factory.Shape(n_layers=16, n_embd=768, n_head=12, n_head_kv=4, head_dim=64,
                              n_ff=2048, n_vocab=32000, weight_type=t)
            out[t] = factory.write_llama(folder / f"all-{t.lower()}.gguf", s)
        return out
    finally:
        factory.quantize = quantize


def main(argv: list[str] | None = None) -> int:
    global TYPES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--prefill", type=int, default=0,
                        help="measure prefill of a prompt of this many tokens instead")
    parser.add_argument("--types", default=",".join(TYPES),
                        help=f"weight types, {REFERENCE} first (e.g. Q4_K,MXFP4,Q4_1)")
    args = parser.parse_args(argv)
    TYPES = tuple(t.strip().upper() for t in args.types.split(",") if t.strip())
    if not TYPES or TYPES[0] != REFERENCE:
        parser.error(f"--types must start with {REFERENCE}")
    if args.prefill:
        return prefill(args)
    os.environ.setdefault("LOADOUT_RUN_RECORDS", "off")
    mark_cpu_time()
    from gguf import GGUFReader

    with tempfile.TemporaryDirectory(prefix="loadout-types-") as tmp:
        os.environ["LOADOUT_HOME"] = str(Path(tmp) / "home")
        paths = write_models(Path(tmp))
        nbytes = {t: sum(int(x.n_bytes) for x in GGUFReader(p).tensors if len(x.shape) > 1)
                  for t, p in paths.items()}
        engines = {t: load(p, args.threads, args.prompt) for t, p in paths.items()}
        prompt = prompt_of(engines[REFERENCE][0], args.prompt)  # one tokenizer for all
        for engine, _ in engines.values():  # the first touch of each buffer, not measured
            decode(engine, prompt[:40], 4)
        runs: dict[str, list[tuple[float, float, int]]] = {t: [] for t in TYPES}
        try:
            for r in range(args.rounds):
                for t in TYPES:
                    runs[t].append(decode(engines[t][0], prompt, args.max_tokens))
                print(f"round {r + 1} (CPU t/s): " + ", ".join(
                    f"{t} {1 / v[-1][1]:.1f}" for t, v in runs.items()), flush=True)
        finally:
            for engine, _ in engines.values():
                engine.close()
    report(runs, nbytes, {t: f for t, (_, f) in engines.items()}, args)
    return 0


def prefill(args: argparse.Namespace) -> int:
    """Prefill per type: CPU seconds per prompt token over Q4_K's, and GFLOP/s a core."""
    import time

    from gguf import GGUFReader

    from bench.decode_parts import Native
    from engine.planned_launch import plan_launch

    with tempfile.TemporaryDirectory(prefix="loadout-types-") as tmp:
        os.environ["LOADOUT_HOME"] = str(Path(tmp) / "home")
        os.environ.setdefault("LOADOUT_RUN_RECORDS", "off")
        paths = write_models(Path(tmp))
        # block weights (the output layer runs once per prompt; the embedding is a lookup)
        weights = {t: sum(int(x.n_elements) for x in GGUFReader(p).tensors
                          if x.name.startswith("blk.") and len(x.shape) > 1)
                   for t, p in paths.items()}
        predicted = {t: plan_launch(str(p), context=args.prefill + 64, n_threads=1,
                                    prompt_tokens=args.prefill).predicted or {}
                     for t, p in paths.items()}
        models = {t: Native(p, args.prefill + 16) for t, p in paths.items()}
        ids = [1000 + (7 * i) % 20000 for i in range(args.prefill)]  # any ids: same for all
        runs: dict[str, list[float]] = {t: [] for t in TYPES}
        try:
            for m in models.values():  # the first touch of each buffer, not measured
                m.clear()
                m.decode(ids[:32], 0)
            for r in range(args.rounds):
                order = TYPES[r % len(TYPES):] + TYPES[:r % len(TYPES)]
                for t in order:
                    models[t].clear()
                    c0 = time.thread_time()
                    models[t].decode(ids, 0)
                    runs[t].append((time.thread_time() - c0) / len(ids))
                print(f"round {r + 1} (CPU prompt t/s): " + ", ".join(
                    f"{t} {1 / v[-1]:.1f}" for t, v in runs.items()), flush=True)
        finally:
            for m in models.values():
                m.free()
    ref = runs[REFERENCE]
    # the speed model's rate per type is of the block matrices alone: every model's
    # attention (the same in each: one shape) priced as the planner prices it, at
    # CPU_PREFILL_ATTENTION_RATE of Q4_K's rate, is taken out of its time first
    from planner.speed import CPU_PREFILL_ATTENTION_RATE, prefill_kv_cells

    n_layers, n_head, head_dim = 16, 12, 64
    attn = n_layers * 2 * n_head * 2 * head_dim * prefill_kv_cells(args.prefill, 512) \
        / CPU_PREFILL_ATTENTION_RATE
    base = (2 * weights[REFERENCE] + attn) / statistics.median(ref)  # Q4_K's FLOP/s
    ref_pred = 1.0 / float(predicted[REFERENCE].get("prefill_tps") or 1.0)
    print(f"prefill per prompt token over {REFERENCE}'s (calling thread CPU seconds, median "
          f"over {args.rounds} rotating rounds; 1 thread, {args.prefill} tokens in one "
          f"batch); the same weights per token in every model:")
    print(f"  {'type':<5} {'CPU t/s':>7} {'time':>6} {'range':>11} {'weights/s':>9} "
          f"{'GFLOP/s':>7} {'predicted':>9} {'vs CPU':>7} {'matrices':>8}")
    for t in TYPES:
        rel = [v / b for v, b in zip(runs[t], ref, strict=True)]
        time_rel = statistics.median(rel)
        per_token = statistics.median(runs[t])
        gflops = 2 * weights[t] / per_token / 1e9
        pred = 1.0 / float(predicted[t].get("prefill_tps") or 1.0) / ref_pred
        # the block matrices' own rate over Q4_K's, attention taken out
        matrices = 2 * weights[t] / (per_token - attn / base) / base
        print(f"  {t:<5} {1 / per_token:7.1f} {time_rel:6.3f} {min(rel):4.2f}..{max(rel):5.2f} "
              f"{1 / time_rel:9.2f} {gflops:7.1f} {pred:9.3f} {(pred / time_rel - 1) * 100:+6.1f}% "
              f"{matrices:8.3f}")
    print(f"matrices: each type's block matrices over Q4_K's per weight, attention taken out "
          f"(Q4_K's matrices: {base / 1e9:.1f} GFLOP/s, the figure hardware detection "
          f"measures)")
    return 0


def report(runs: dict[str, list[tuple[float, float, int]]], nbytes: dict[str, int],
           features: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    """Per type: time per token over the reference type's, per weight and per byte."""
    from planner.machine_fit import predicted_decode_at

    ref = runs[REFERENCE]
    depth = int(statistics.median(d for _, _, d in ref))
    ref_pred = 1.0 / predicted_decode_at(features[REFERENCE], depth)
    print(f"time per token over {REFERENCE}'s (engine thread CPU seconds, median over "
          f"{args.rounds} interleaved rounds; {args.threads} thread(s), {args.max_tokens} "
          f"tokens at depth ~{depth}):")
    print(f"  {'type':<5} {'MB/token':>8} {'CPU t/s':>7} {'time':>6} {'range':>11} "
          f"{'weights/s':>9} {'bytes/s':>7} {'predicted':>9} {'vs CPU':>7}")
    for t in TYPES:
        rel = [v[1] / b[1] for v, b in zip(runs[t], ref, strict=True)]
        time = statistics.median(rel)
        per_byte = nbytes[t] / nbytes[REFERENCE] / time
        pred = 1.0 / predicted_decode_at(features[t], depth) / ref_pred
        tps = 1.0 / statistics.median(v[1] for v in runs[t])
        print(f"  {t:<5} {nbytes[t] / 1e6:8.1f} {tps:7.1f} {time:6.3f} "
              f"{min(rel):4.2f}..{max(rel):5.2f} {1 / time:9.2f} {per_byte:7.2f} "
              f"{pred:9.3f} {(pred / time - 1) * 100:+6.1f}%")


if __name__ == "__main__":
    sys.exit(main())
