"""How well one core's measured Q4_K rates carry to real models (raw predictions, no
correction from earlier runs).

Hardware detection measures what one core makes of Q4_K weights with the engine's own
kernels (``engine/hardware/core_rate.py``: a random-weight Q4_K llama, prefill GFLOP/s
and decode GB/s). This bench loads, in one process with llama.cpp's API and one thread
each, that probe model, the demo (SmolLM2-135M: Q4_1 blocks, a tied Q8_0 embedding), the
similar model of ``bench/self_calibration.py`` (20 blocks 384 wide cut from the demo's
own tensors) and that model requantized to Q8_0, and times round after round, the order
rotating, each model's prefill of one prompt (one batch) and its decode of the tokens
after it, one at a time, in the calling thread's CPU seconds (the machine's other load
mostly cancels; the median over the rounds is printed).

The probe's rates are measured by its own code in this process (fastest round, as at
detection), then every model is planned for one thread on this machine with them
(``Host.core_prefill_gflops`` / ``core_decode_gbps``) and, for comparison, with the speed
model's published constants at the host's clock (what a plan used before). Printed per
model: measured CPU t/s, the two raw predictions and their errors.

Run: ``.venv/bin/python bench/core_rate.py [--rounds 5] [--prompt 128]`` (about a
minute; CPU).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class Planned:
    """One model planned for one thread on this machine (the raw prediction)."""

    def __init__(self, path: Path, prompt: int, decoded: int) -> None:
        from engine.gguf_file import load_profile
        from engine.hardware import detect
        from planner.request import Request
        from planner.speed import _type_key

        self.profile = load_profile(str(path))
        self.base = detect(model_dirs=[], measure=False)
        self.request = Request(context=prompt + decoded + 64, prompt_tokens=prompt,
                               depth=prompt + decoded // 2, advise=False, flash_attn=False)
        blocks = dict(self.profile.block_quant_bytes)
        self.block_type = _type_key(max(blocks, key=lambda t: blocks[t]))

    def predict(self, gflops: float, gbps: float) -> dict[str, float]:
        """Raw prefill and decode t/s with these core rates (0: the constants)."""
        from planner.plan import plan

        host = replace(self.base.host, cores=1, core_prefill_gflops=gflops,
                       core_decode_gbps=gbps)
        speed = plan(replace(self.base, host=host), self.profile, self.request).predicted
        return {"prefill": speed.prefill_tps, "decode": speed.decode_tps}

    def implied(self, rate: Any, figure: str, measured: float) -> float:
        """The rate of the blocks' type (relative to Q4_K: ``CPU_PREFILL_RATE`` or
        ``CPU_BYTE_RATE``) at which this model is predicted at ``measured`` t/s."""
        import planner.speed as speed

        table = speed.CPU_PREFILL_RATE if figure == "prefill" else speed.CPU_BYTE_RATE
        kept = table.get(self.block_type)
        lo, hi = 0.02, 20.0
        try:
            for _ in range(40):
                mid = (lo * hi) ** 0.5
                table[self.block_type] = mid
                if self.predict(rate.prefill_gflops, rate.decode_gbps)[figure] < measured:
                    lo = mid
                else:
                    hi = mid
        finally:
            if kept is None:
                table.pop(self.block_type)
            else:
                table[self.block_type] = kept
        return (lo * hi) ** 0.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompt", type=int, default=128, help="prompt tokens (one batch)")
    parser.add_argument("--decode", type=int, default=32, help="tokens decoded after it")
    parser.add_argument("--twin", action="store_true",
                        help="also the demo's random-weight twin (bench/decode_parts.py)")
    args = parser.parse_args(argv)
    import time

    from bench.self_calibration import similar_model
    from engine.demo import demo_model_path
    from engine.hardware import core_rate

    with tempfile.TemporaryDirectory(prefix="loadout-core-carry-") as tmp:
        os.environ["LOADOUT_HOME"] = str(Path(tmp) / "home")
        os.environ["LOADOUT_RUN_RECORDS"] = "off"
        rate = core_rate.measure()
        print(f"probe (as at detection): {rate.prefill_gflops:.1f} GFLOP/s prefill, "
              f"{rate.decode_gbps:.2f} GB/s decode per core ({rate.rounds} rounds, "
              f"{rate.seconds:.2f} s)", flush=True)
        paths = {"probe Q4_K": core_rate.write_probe_model(Path(tmp) / "probe.gguf"),
                 "demo": Path(demo_model_path()),
                 "similar model": similar_model(Path(tmp)),
                 "similar Q8_0": similar_model(Path(tmp), "Q8_0")}
        if args.twin:
            from bench.decode_parts import write_twin

            paths["demo twin"] = write_twin(Path(tmp) / "twin.gguf", "random")
        planned = {n: Planned(p, args.prompt, args.decode) for n, p in paths.items()}
        n_ctx = args.prompt + args.decode + 16
        models = {n: core_rate._Probe(p, n_ctx) for n, p in paths.items()}
        ids = [3 + (7 * i) % 500 for i in range(args.prompt + args.decode)]
        runs: dict[str, list[tuple[float, float]]] = {n: [] for n in models}
        names = list(models)
        try:
            for m in models.values():  # the first touch of each buffer: not timed
                m.run(ids[:8], 0)
            for r in range(args.rounds):
                for n in names[r % len(names):] + names[:r % len(names)]:
                    m = models[n]
                    m.clear()
                    prefill = m.run(ids[:args.prompt], 0) / args.prompt
                    t0 = time.thread_time()
                    for i in range(args.decode):
                        m.run([ids[args.prompt + i]], args.prompt + i)
                    runs[n].append((prefill, (time.thread_time() - t0) / args.decode))
                print(f"round {r + 1} (CPU t/s prefill / decode): " + ", ".join(
                    f"{n} {1 / v[-1][0]:.0f} / {1 / v[-1][1]:.0f}" for n, v in runs.items()),
                    flush=True)
        finally:
            for m in models.values():
                m.free()
    report(runs, planned, rate, args)
    return 0


def report(runs: dict[str, list[tuple[float, float]]], planned: dict[str, Planned], rate: Any,
           args: argparse.Namespace) -> None:
    """Per model and figure: measured CPU t/s, the raw predictions and their errors, and
    the rate of the model's block type that its measured speed implies."""
    import planner.speed as speed

    print(f"raw predictions (one thread, prompt {args.prompt} tokens in one batch, "
          f"{args.decode} decoded after it) against the median CPU t/s over {args.rounds} "
          f"rotating rounds:")
    print(f"  {'model':<14} {'figure':<8} {'measured':>9} {'range':>13} "
          f"{'with probe':>10} {'error':>7} {'constants':>9} {'error':>7} "
          f"{'type':>5} {'rate':>5} {'implied':>7}")
    for n, v in runs.items():
        p = planned[n].predict(rate.prefill_gflops, rate.decode_gbps)
        c = planned[n].predict(0.0, 0.0)
        kind = planned[n].block_type
        for i, figure in enumerate(("prefill", "decode")):
            tps = [1 / x[i] for x in v]
            med = statistics.median(tps)
            table = speed.CPU_PREFILL_RATE if figure == "prefill" else speed.CPU_BYTE_RATE
            implied = planned[n].implied(rate, figure, med)
            print(f"  {n:<14} {figure:<8} {med:9.1f} {min(tps):6.0f}..{max(tps):<6.0f} "
                  f"{p[figure]:10.1f} {(p[figure] / med - 1) * 100:+6.1f}% {c[figure]:9.1f} "
                  f"{(c[figure] / med - 1) * 100:+6.1f}% {kind:>5} "
                  f"{table.get(kind, 1.0):5.2f} {implied:7.3f}")
    print("rate: the speed model's rate of the blocks' type relative to Q4_K (prefill: per "
          "weight, decode: per byte); implied: the rate at which the prediction with the "
          "probe's figures meets the measured median")


if __name__ == "__main__":
    sys.exit(main())
