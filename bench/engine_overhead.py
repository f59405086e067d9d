"""How much speed the engine loses against llama.cpp's own ``llama-bench``.

On the same model, threads and llama.cpp build flags, each round runs:

- ``llama-bench -p 512 -n 0 -r 1`` and ``-p 0 -n 128 -r 1`` (built from the engine's sdist
  by ``bench/llama_tools.py``; each run after llama-bench's own warm-up run of the test);
- the requests ``loadout bench MODEL --raw --no-plan --ignore-eos`` measures, on an engine
  loaded as it loads one (``plan_and_load``), warmed up as it warms up: a 512-token prompt
  and one token (prefill, TTFT), then a short prompt and 128 tokens (decode, so that its KV
  depth matches tg128's); each processes its whole prompt.

The engine stays loaded (and idle) while llama-bench runs, so the two sides of a test run
about a second apart; the side that goes first alternates from round to round, and the
verdict is the median of the rounds' ratios. This machine's speed drifts by tens of
percent within minutes: a ratio of two runs a second apart cancels most of it, and the
median ignores a disturbed round. Targets: decode >= 0.95 x tg128, prefill >= 0.95 x
pp512, demo model load (with its warm-up decode) < 1 s.

    python bench/engine_overhead.py [--model demo] [--threads N] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.llama_tools import build  # noqa: E402

PROMPT_TOKENS = 512
GEN_TOKENS = 128
TARGET = 0.95


def model_path(spec: str) -> Path:
    from engine.models import resolve_local_model

    return resolve_local_model(spec)


def prompt_of(path: Path, n_tokens: int) -> str:
    """A raw text that the model's tokenizer turns into ``n_tokens`` tokens."""
    from engine.launch import LaunchSpec
    from engine.runtime import Engine

    words = ["river", "stone", "lantern", "harbor", "meadow", "copper", "whistle", "garden",
             "thunder", "velvet", "orchard", "pepper", "glacier", "saddle", "marble"]
    text = " ".join(words[i % len(words)] + ("." if i % 9 == 8 else "")
                    for i in range(n_tokens * 2))
    with Engine(LaunchSpec(str(path), n_ctx=4 * n_tokens)) as engine:
        tokens = engine.tokenize(text, add_special=True)
        for cut in range(n_tokens, 0, -1):
            candidate = engine.detokenize(tokens[:cut])
            if len(engine.tokenize(candidate, add_special=True)) == n_tokens:
                return candidate
    raise RuntimeError("could not build a prompt of the wanted length")


def llama_bench(binary: Path, path: Path, threads: int, test: str) -> float:
    """``pp512`` or ``tg128`` in tokens/s: one measured run, after llama-bench's own
    warm-up run of the same test."""
    n_prompt, n_gen = (PROMPT_TOKENS, 0) if test == "pp512" else (0, GEN_TOKENS)
    cmd = [str(binary), "-m", str(path), "-t", str(threads), "-p", str(n_prompt),
           "-n", str(n_gen), "-ngl", "0", "-fa", "auto", "-r", "1", "-o", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    (result,) = json.loads(out)
    return float(result["avg_ts"])


def bench_args(model: str, threads: int, prompt_file: Path, max_tokens: int
               ) -> argparse.Namespace:
    """The arguments of ``loadout bench MODEL --raw --no-plan ...``, parsed by its parser."""
    from loadout.cli import build_parser

    return build_parser().parse_args([
        "bench", model, "--raw", "--no-plan", "--threads", str(threads), "--prompt-file",
        str(prompt_file), "--max-tokens", str(max_tokens), "--ignore-eos"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    from engine.launch import default_threads
    from loadout.commands.bench import bench_prompt, measured_request, warm_up
    from loadout.commands.chat import plan_and_load

    threads = args.threads or default_threads()
    path = model_path(args.model)
    binary = build(("llama-bench",))["llama-bench"]
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        long_prompt = Path(tmp) / "prompt-512.txt"
        long_prompt.write_text(prompt_of(path, PROMPT_TOKENS), encoding="utf-8")
        short_prompt = Path(tmp) / "prompt-short.txt"
        short_prompt.write_text("Once upon a time", encoding="utf-8")
        pre_args = bench_args(args.model, threads, long_prompt, 1)
        dec_args = bench_args(args.model, threads, short_prompt, GEN_TOKENS)
        _, engine = plan_and_load(pre_args)
        try:
            warm_up(engine, bench_prompt(pre_args))
            prefill = measured_request(pre_args, bench_prompt(pre_args))
            decode = measured_request(dec_args, bench_prompt(dec_args))
            for r in range(args.rounds):
                first = "llama-bench" if r % 2 == 0 else "loadout"
                pp512, pre = paired(first, partial(llama_bench, binary, path, threads, "pp512"),
                                    lambda: engine.submit(prefill).result().metrics)
                tg128, dec = paired(first, partial(llama_bench, binary, path, threads, "tg128"),
                                    lambda: engine.submit(decode).result().metrics)
                rounds.append(Round(pp512=pp512, tg128=tg128, prefill=pre.prefill_tps or 0.0,
                                    decode=dec.decode_tps or 0.0,
                                    overhead=dec.decode_overhead or 0.0,
                                    ttft=pre.ttft_s or 0.0,
                                    n_prompt=pre.prompt_tokens, first=first))
                last = rounds[-1]
                print(f"round {r + 1} ({first} first): llama-bench pp512 {last.pp512:.1f} "
                      f"tg128 {last.tg128:.1f} | loadout prefill {last.prefill:.1f} decode "
                      f"{last.decode:.1f} | ratios {last.prefill_ratio:.3f} "
                      f"{last.decode_ratio:.3f}", file=sys.stderr, flush=True)
        finally:
            engine.close()
        load_s = engine.load_seconds
    return report(rounds, path, threads, load_s)


def paired(first: str, reference: Callable[[], float],
           ours: Callable[[], Any]) -> tuple[float, Any]:
    """Run both sides of one test, ``first`` first."""
    if first == "llama-bench":
        ref = reference()
        return ref, ours()
    mine = ours()
    return reference(), mine


@dataclass(frozen=True)
class Round:
    """One round: each side measured once, one right after the other."""

    pp512: float
    tg128: float
    prefill: float
    decode: float
    overhead: float  # share of Loadout's decode time spent outside llama_decode
    ttft: float
    n_prompt: int
    first: str

    @property
    def prefill_ratio(self) -> float:
        return self.prefill / self.pp512 if self.pp512 else 0.0

    @property
    def decode_ratio(self) -> float:
        return self.decode / self.tg128 if self.tg128 else 0.0


def report(rounds: list[Round], path: Path, threads: int, load: float) -> int:
    """Print the medians and the median of the paired ratios; 0 when the targets are met.

    The verdict is the median over rounds of each round's ratio: the two sides of a test
    ran about a second apart, so the ratio cancels most of the machine's drift,
    and the median ignores a round disturbed by other work."""
    med = statistics.median
    prefill_ratio = med(r.prefill_ratio for r in rounds)
    decode_ratio = med(r.decode_ratio for r in rounds)
    ok = prefill_ratio >= TARGET and decode_ratio >= TARGET and load < 1.0
    print(f"model {path.name}, {threads} threads, {os.cpu_count()} CPUs, {len(rounds)} "
          f"rounds (medians; ratio = median of the rounds' ratios)")
    print(f"{'':28}{'loadout':>10}{'llama-bench':>13}{'ratio':>8}")
    print(f"{'prefill t/s (' + str(rounds[0].n_prompt) + ' tokens)':28}"
          f"{med(r.prefill for r in rounds):>10.1f}{med(r.pp512 for r in rounds):>13.1f}"
          f"{prefill_ratio:>8.3f}   (pp512)")
    print(f"{'decode t/s (128 tokens)':28}{med(r.decode for r in rounds):>10.1f}"
          f"{med(r.tg128 for r in rounds):>13.1f}{decode_ratio:>8.3f}   (tg128)")
    print(f"{'decode time outside llama.cpp':28}{med(r.overhead for r in rounds):>10.1%}"
          "   (in the engine's own timing: sampling, detokenizing, streaming)")
    print(f"{'TTFT s (512-token prompt)':28}{med(r.ttft for r in rounds):>10.3f}")
    print(f"{'model load s':28}{load:>10.3f}   (with the warm-up decode)")
    print(f"rounds' ratios: prefill {' '.join(f'{r.prefill_ratio:.3f}' for r in rounds)}; "
          f"decode {' '.join(f'{r.decode_ratio:.3f}' for r in rounds)}")
    print(f"targets (>= {TARGET} x llama-bench, load < 1 s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
