"""What a prompt token costs the CPU engine in prefill, by prompt length and attention kind.

The text model of ``bench/vision.py`` (4 llama blocks 512 wide, F16) is loaded three
times in this process: flash attention on (what ``auto`` picks on a CPU) and off on one
thread, and on with two threads (as ``bench/vision.py`` runs it). Every round prefills a
prompt of random token ids of each length with each engine, in turn. Per prompt token it
prints the process's CPU seconds (with one thread, the engine's own work without the waits
for a core that this shared machine's other load adds) and the wall seconds, the median
over the rounds. The growth of the CPU cost with the prompt's length is the attention;
the short prompt's cost is the weights' matmuls. Three tokens are decoded after each
prompt: their wall time per token is printed too (a small batch right after a large one).

Beside it, the planner's prediction of the same: the matmuls at its CPU rate plus the
attention over the prompt's mean depth (``planner.speed.prefill_attention_s``).

Run: ``.venv/bin/python bench/cpu_prefill_cost.py`` (about two minutes; CPU).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def prefill_cpu_s(engine: Any, tokens: int, seed: int) -> tuple[float, float, float]:
    """CPU and wall seconds of the process to prefill ``tokens`` random ids (and sample
    one), and the wall seconds of each of the few tokens decoded right after."""
    from engine.requests import GenerationRequest, SamplingParams

    rng = random.Random(seed)
    ids = tuple(rng.randrange(16, 4000) for _ in range(tokens))
    params = SamplingParams(temperature=0.0, max_tokens=4, cache_prompt=False,
                            ignore_eos=True)
    start = time.process_time()
    final = engine.submit(GenerationRequest(prompt_tokens=ids, params=params)).result(600)
    if final.error:
        raise RuntimeError(final.error)
    m = final.metrics
    assert m.prefill_s is not None and m.decode_tps
    # the process's CPU seconds include the few decoded tokens: prefill's is its wall share
    cpu = time.process_time() - start
    decode_s = (m.generated_tokens - 1) / m.decode_tps
    return cpu * m.prefill_s / (m.prefill_s + decode_s), m.prefill_s, 1.0 / m.decode_tps


def predicted_s(path: Path, tokens: int, threads: int) -> float:
    """The planner's seconds per prompt token on ``threads`` threads (its raw
    prediction, flash attention as ``auto`` picks it here)."""
    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from planner.plan import plan
    from planner.request import Request

    inventory = detect(measure=False)
    inventory = replace(inventory, host=replace(inventory.host, cores=threads))
    request = Request(context=4096, prompt_tokens=tokens, advise=False)
    result = plan(inventory, load_profile(path), request)
    speed = result.raw_predicted or result.predicted
    return 1.0 / speed.prefill_tps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 1024])
    args = parser.parse_args(argv)
    os.environ.setdefault("LOADOUT_RUN_RECORDS", "off")
    from engine.launch import LaunchSpec
    from engine.runtime import Engine
    from tests.helpers.gguf_factory import Shape, write_llama

    shape = Shape(n_layers=4, n_embd=512, n_head=8, n_head_kv=4, head_dim=64, n_ff=1536,
                  n_vocab=4096)
    with tempfile.TemporaryDirectory(prefix="loadout-prefill-") as tmp:
        os.environ["LOADOUT_HOME"] = str(Path(tmp) / "home")
        path = write_llama(Path(tmp) / "text-F16.gguf", shape)
        engines = {(flash, threads): Engine(LaunchSpec(
            str(path), n_threads=threads, n_ctx=4096, n_batch=2048, n_ubatch=512,
            flash_attn=flash)) for flash, threads in (("on", 1), ("off", 1), ("on", 2))}
        runs: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
        try:
            for engine in engines.values():
                prefill_cpu_s(engine, 64, 0)  # first touch, not measured
            for r in range(args.rounds):
                for n in args.lengths:
                    for (flash, threads), engine in engines.items():
                        cpu, wall, dec = prefill_cpu_s(engine, n, 1000 * r + n)
                        runs.setdefault((flash, threads, n), []).append((cpu / n, wall / n,
                                                                         dec))
                print(f"round {r + 1} (wall t/s): " + ", ".join(
                    f"{f}/{t} {n}: {1 / v[-1][1]:.0f}" for (f, t, n), v in runs.items()),
                    flush=True)
        finally:
            for engine in engines.values():
                engine.close()
        print("ms per prompt token (median over rounds); CPU: the process's CPU seconds "
              "(with 2 threads it counts their spinning too), wall: as timed; predicted: "
              "the planner at that thread count; error vs CPU with 1 thread, vs wall else; "
              "decode: wall ms per token decoded right after:")
        print(f"  {'flash':<5} {'threads':>7} {'tokens':>6} {'CPU':>7} {'wall':>7} "
              f"{'wall/CPU':>8} {'predicted':>9} {'error':>7} {'decode':>7}")
        for (flash, threads, n), v in runs.items():
            cpu = statistics.median(c for c, _, _ in v)
            wall = statistics.median(w for _, w, _ in v)
            dec = statistics.median(d for _, _, d in v)
            pred = predicted_s(path, n, threads)
            ref = cpu if threads == 1 else wall
            print(f"  {flash:<5} {threads:>7} {n:>6} {cpu * 1e3:7.3f} {wall * 1e3:7.3f} "
                  f"{wall / cpu:8.2f} {pred * 1e3:9.3f} {(pred / ref - 1) * 100:+6.1f}% "
                  f"{dec * 1e3:7.1f}")
    load = os.getloadavg()[0]
    print(f"  load average {load:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
