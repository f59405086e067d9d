"""How much speed the engine loses against llama.cpp's own ``llama-bench``.

Runs, on the same model, threads and llama.cpp build flags:

- ``llama-bench -p 512 -n 128`` (built from the engine's sdist by ``bench/llama_tools.py``);
- ``loadout bench MODEL --json`` with a 512-token raw prompt (prefill, TTFT, load time);
- ``loadout bench MODEL --json`` with a short prompt and 128 generated tokens (decode, so
  that its KV depth matches tg128's).

Each side runs ``--rounds`` times, alternating, and the best figure of each side is kept
(on a shared machine the best run is the one least disturbed by other work). Targets:
decode >= 0.95 x tg128, prefill >= 0.95 x pp512, demo model load < 1 s.

    python bench/engine_overhead.py [--model demo] [--threads N] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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


def llama_bench(binary: Path, path: Path, threads: int) -> dict[str, float]:
    """pp512 and tg128 of one measured run each (after llama-bench's own warm-up), in
    tokens/s: one sample per round, as the Loadout side takes, so that the best of the
    rounds compares like with like (the best of 3 x 3 samples against the best of 3
    would favour llama-bench on a noisy machine)."""
    cmd = [str(binary), "-m", str(path), "-t", str(threads), "-p", str(PROMPT_TOKENS),
           "-n", str(GEN_TOKENS), "-ngl", "0", "-fa", "auto", "-r", "1", "-o", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = {}
    for test in json.loads(out):
        best = max(test.get("samples_ts") or [test["avg_ts"]])
        if test["n_prompt"] == PROMPT_TOKENS and test["n_gen"] == 0:
            result["pp512"] = best
        elif test["n_gen"] == GEN_TOKENS and test["n_prompt"] == 0:
            result["tg128"] = best
    return result


def loadout_bench(model: str, threads: int, prompt_file: Path, max_tokens: int
                  ) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "loadout", "bench", model, "--json", "--raw", "--no-plan",
           "--threads", str(threads), "--prompt-file", str(prompt_file),
           "--max-tokens", str(max_tokens), "--ignore-eos"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    doc: dict[str, Any] = json.loads(out)
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from engine.launch import default_threads

    threads = args.threads or default_threads()
    path = model_path(args.model)
    binary = build(("llama-bench",))["llama-bench"]
    with tempfile.TemporaryDirectory() as tmp:
        long_prompt = Path(tmp) / "prompt-512.txt"
        long_prompt.write_text(prompt_of(path, PROMPT_TOKENS), encoding="utf-8")
        short_prompt = Path(tmp) / "prompt-short.txt"
        short_prompt.write_text("Once upon a time", encoding="utf-8")
        ref: dict[str, float] = {"pp512": 0.0, "tg128": 0.0}
        ours: dict[str, float] = {"prefill": 0.0, "decode": 0.0, "load": float("inf"),
                                  "ttft": float("inf")}
        n_prompt = 0
        for r in range(args.rounds):
            this_round = llama_bench(binary, path, threads)
            for key, value in this_round.items():
                ref[key] = max(ref[key], value)
            pre = loadout_bench(args.model, threads, long_prompt, 1)
            dec = loadout_bench(args.model, threads, short_prompt, GEN_TOKENS)
            n_prompt = pre["prompt_tokens"]
            ours["prefill"] = max(ours["prefill"], pre["prefill_tps"] or 0.0)
            ours["ttft"] = min(ours["ttft"], pre["ttft_s"])
            ours["decode"] = max(ours["decode"], dec["decode_tps"] or 0.0)
            ours["load"] = min(ours["load"], pre["load_s"], dec["load_s"])
            print(f"round {r + 1}: llama-bench pp512 {this_round.get('pp512', 0):.1f} tg128 "
                  f"{this_round.get('tg128', 0):.1f} | loadout prefill "
                  f"{pre['prefill_tps']:.1f} decode {dec['decode_tps']:.1f}",
                  file=sys.stderr, flush=True)
    prefill_ratio = ours["prefill"] / ref["pp512"] if ref["pp512"] else 0.0
    decode_ratio = ours["decode"] / ref["tg128"] if ref["tg128"] else 0.0
    ok = prefill_ratio >= TARGET and decode_ratio >= TARGET and ours["load"] < 1.0
    print(f"model {path.name}, {threads} threads, {os.cpu_count()} CPUs, best of "
          f"{args.rounds} rounds")
    print(f"{'':28}{'loadout':>10}{'llama-bench':>13}{'ratio':>8}")
    print(f"{'prefill t/s (' + str(n_prompt) + ' tokens)':28}{ours['prefill']:>10.1f}"
          f"{ref['pp512']:>13.1f}{prefill_ratio:>8.3f}   (pp512)")
    print(f"{'decode t/s (128 tokens)':28}{ours['decode']:>10.1f}{ref['tg128']:>13.1f}"
          f"{decode_ratio:>8.3f}   (tg128)")
    print(f"{'TTFT s (512-token prompt)':28}{ours['ttft']:>10.3f}")
    print(f"{'model load s':28}{ours['load']:>10.3f}")
    print(f"targets (>= {TARGET} x llama-bench, load < 1 s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
