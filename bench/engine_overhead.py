"""How much speed the engine loses against llama.cpp's own ``llama-bench``.

Runs, on the same model, threads and llama.cpp build flags:

- ``llama-bench -p 512 -n 0`` and ``-p 0 -n 128`` (built from the engine's sdist by
  ``bench/llama_tools.py``);
- ``loadout bench MODEL --json`` with a 512-token raw prompt (prefill, TTFT, load time);
- ``loadout bench MODEL --json`` with a short prompt and 128 generated tokens (decode, so
  that its KV depth matches tg128's).

Each round measures both sides of each test, one right after the other (``--repeat``
measured runs a side, their median), the side that goes first alternating from round to
round; the verdict is the median of the rounds' ratios. This machine's speed drifts by
tens of percent within minutes: a ratio of two runs seconds apart cancels most of it, and
the median ignores a disturbed round. Each side warms up with the shape it then measures
(llama-bench its own warm-up run, ``loadout bench`` a warm-up request as long as its
prompt), and each of its runs processes the whole prompt. Targets: decode >= 0.95 x
tg128, prefill >= 0.95 x pp512, demo model load < 1 s.

    python bench/engine_overhead.py [--model demo] [--threads N] [--rounds 12] [--repeat 3]
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


def llama_bench(binary: Path, path: Path, threads: int, test: str, repeat: int) -> float:
    """``pp512`` or ``tg128`` in tokens/s: the median of ``repeat`` measured runs (after
    llama-bench's own warm-up run of the same test)."""
    n_prompt, n_gen = (PROMPT_TOKENS, 0) if test == "pp512" else (0, GEN_TOKENS)
    cmd = [str(binary), "-m", str(path), "-t", str(threads), "-p", str(n_prompt),
           "-n", str(n_gen), "-ngl", "0", "-fa", "auto", "-r", str(repeat), "-o", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    (result,) = json.loads(out)
    return float(statistics.median(result.get("samples_ts") or [result["avg_ts"]]))


def loadout_bench(model: str, threads: int, prompt_file: Path, max_tokens: int,
                  repeat: int) -> dict[str, Any]:
    """``loadout bench``'s document: the median of ``repeat`` measured requests (after its
    own warm-up request)."""
    cmd = [sys.executable, "-m", "loadout", "bench", model, "--json", "--raw", "--no-plan",
           "--threads", str(threads), "--prompt-file", str(prompt_file),
           "--max-tokens", str(max_tokens), "--ignore-eos", "--repeat", str(repeat)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    doc: dict[str, Any] = json.loads(out)
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3,
                        help="measured runs of each test per side and round (median)")
    args = parser.parse_args()

    from engine.launch import default_threads

    threads = args.threads or default_threads()
    path = model_path(args.model)
    binary = build(("llama-bench",))["llama-bench"]
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        long_prompt = Path(tmp) / "prompt-512.txt"
        long_prompt.write_text(prompt_of(path, PROMPT_TOKENS), encoding="utf-8")
        short_prompt = Path(tmp) / "prompt-short.txt"
        short_prompt.write_text("Once upon a time", encoding="utf-8")
        for r in range(args.rounds):
            # each test pairs one llama-bench run with the matching ``loadout bench`` run,
            # seconds apart; the side that goes first alternates from round to round, so
            # that a drift of the machine's speed favours neither
            first = "llama-bench" if r % 2 == 0 else "loadout"
            n = args.repeat
            pp512, pre = paired(first, partial(llama_bench, binary, path, threads, "pp512", n),
                                partial(loadout_bench, args.model, threads, long_prompt, 1, n))
            tg128, dec = paired(first, partial(llama_bench, binary, path, threads, "tg128", n),
                                partial(loadout_bench, args.model, threads, short_prompt,
                                        GEN_TOKENS, n))
            rounds.append(Round(pp512=pp512, tg128=tg128, prefill=pre["prefill_tps"] or 0.0,
                                decode=dec["decode_tps"] or 0.0,
                                overhead=dec.get("decode_overhead") or 0.0,
                                load=min(pre["load_s"], dec["load_s"]), ttft=pre["ttft_s"],
                                n_prompt=pre["prompt_tokens"], first=first))
            last = rounds[-1]
            print(f"round {r + 1} ({first} first): llama-bench pp512 {last.pp512:.1f} "
                  f"tg128 {last.tg128:.1f} | loadout prefill {last.prefill:.1f} decode "
                  f"{last.decode:.1f} | ratios {last.prefill_ratio:.3f} "
                  f"{last.decode_ratio:.3f}", file=sys.stderr, flush=True)
    return report(rounds, path, threads, args.repeat)


def paired(first: str, reference: Callable[[], float],
           ours: Callable[[], dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    """Run both sides of one test, ``first`` first."""
    if first == "llama-bench":
        ref = reference()
        return ref, ours()
    doc = ours()
    return reference(), doc


@dataclass(frozen=True)
class Round:
    """One round: each side measured once, one right after the other."""

    pp512: float
    tg128: float
    prefill: float
    decode: float
    overhead: float  # share of Loadout's decode time spent outside llama_decode
    load: float
    ttft: float
    n_prompt: int
    first: str

    @property
    def prefill_ratio(self) -> float:
        return self.prefill / self.pp512 if self.pp512 else 0.0

    @property
    def decode_ratio(self) -> float:
        return self.decode / self.tg128 if self.tg128 else 0.0


def report(rounds: list[Round], path: Path, threads: int, repeat: int) -> int:
    """Print the medians and the median of the paired ratios; 0 when the targets are met.

    The verdict is the median over rounds of each round's ratio: the two sides of a round
    ran within seconds of each other, so the ratio cancels most of the machine's drift,
    and the median ignores a round disturbed by other work."""
    med = statistics.median
    prefill_ratio = med(r.prefill_ratio for r in rounds)
    decode_ratio = med(r.decode_ratio for r in rounds)
    load = min(r.load for r in rounds)
    ok = prefill_ratio >= TARGET and decode_ratio >= TARGET and load < 1.0
    print(f"model {path.name}, {threads} threads, {os.cpu_count()} CPUs, {len(rounds)} "
          f"rounds of {repeat} runs a side (medians; ratio = median of the rounds' ratios)")
    print(f"{'':28}{'loadout':>10}{'llama-bench':>13}{'ratio':>8}")
    print(f"{'prefill t/s (' + str(rounds[0].n_prompt) + ' tokens)':28}"
          f"{med(r.prefill for r in rounds):>10.1f}{med(r.pp512 for r in rounds):>13.1f}"
          f"{prefill_ratio:>8.3f}   (pp512)")
    print(f"{'decode t/s (128 tokens)':28}{med(r.decode for r in rounds):>10.1f}"
          f"{med(r.tg128 for r in rounds):>13.1f}{decode_ratio:>8.3f}   (tg128)")
    print(f"{'decode time outside llama.cpp':28}{med(r.overhead for r in rounds):>10.1%}"
          "   (in the engine's own timing: sampling, detokenizing, streaming)")
    print(f"{'TTFT s (512-token prompt)':28}{med(r.ttft for r in rounds):>10.3f}")
    print(f"{'model load s':28}{load:>10.3f}   (fastest)")
    print(f"rounds' ratios: prefill {' '.join(f'{r.prefill_ratio:.3f}' for r in rounds)}; "
          f"decode {' '.join(f'{r.decode_ratio:.3f}' for r in rounds)}")
    print(f"targets (>= {TARGET} x llama-bench, load < 1 s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
