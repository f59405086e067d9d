"""What the engine's dead-end check adds to a sampling step with a grammar.

``SamplerChain.sample`` with a grammar applies the chain to the candidates itself, checks
that the chosen token survived the grammar, then accepts it (``engine/native/sampler.py``);
llama.cpp's ``llama_sampler_sample`` does the same two steps in one call, minus the check,
and kills the process where the grammar allows nothing. This times both on the demo
model, one decoded prompt, the same chains (a fresh one per run, same seed, so both paths
sample the same tokens), alternating, and prints the median microseconds per token.
Without a grammar the engine still calls ``llama_sampler_sample`` (nothing changed there).

Run: ``.venv/bin/python bench/grammar_sample_check.py [--tokens N] [--runs N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRAMMARS = {
    "printable ASCII": "root ::= [ -~]*",
    "JSON object (json_object)": None,
}


def main() -> None:
    from engine.demo import demo_model_path
    from engine.launch import LaunchSpec
    from engine.native.batch import Batch
    from engine.native.context import NativeContext
    from engine.native.model import NativeModel, llama
    from engine.native.sampler import SamplerChain
    from engine.native.tokens import Vocab
    from engine.server import grammar as gbnf

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=20, help="tokens per run")
    parser.add_argument("--runs", type=int, default=7, help="runs per path (alternating)")
    args = parser.parse_args()
    lib = llama()
    spec = LaunchSpec(str(demo_model_path()), n_threads=1, n_ctx=256)
    model = NativeModel(spec)
    ctx = NativeContext(model, spec)
    batch = Batch(spec.n_batch, 1)
    prompt = Vocab(model.vocab).tokenize("Write a JSON object about a cat:")
    index = batch.add_run(prompt, 0, 0, logits_last=True)
    assert batch.decode(ctx.ptr) == 0

    def chain(grammar: str, temperature: float) -> SamplerChain:
        return SamplerChain(model.vocab, model.n_vocab, temperature=temperature, top_p=0.95,
                            top_k=40, min_p=0.05, repeat_penalty=1.0, presence_penalty=0.0,
                            frequency_penalty=0.0, seed=3, grammar=grammar)

    def run(grammar: str, temperature: float, checked: bool) -> tuple[float, list[int]]:
        c = chain(grammar, temperature)
        tokens = []
        t0 = time.perf_counter()
        for _ in range(args.tokens):
            if checked:
                tokens.append(c.sample(ctx.ptr, index))
            else:
                tokens.append(int(lib.llama_sampler_sample(c.ptr, ctx.ptr, index)))
        seconds = time.perf_counter() - t0
        c.free()
        return seconds / args.tokens, tokens

    print(f"microseconds per token, {model.n_vocab} candidates, {args.tokens} tokens a run, "
          f"median of {args.runs} runs")
    print(f"  {'grammar':28s} {'sampler':12s} {'llama.cpp':>10s} {'checked':>10s} "
          f"{'added':>8s}")
    for name, source in GRAMMARS.items():
        text = gbnf.json_object_gbnf() if source is None else source
        for temperature in (0.0, 0.8):
            raw: list[float] = []
            checked: list[float] = []
            for _ in range(args.runs):
                s_raw, t_raw = run(text, temperature, False)
                s_checked, t_checked = run(text, temperature, True)
                assert t_raw == t_checked, "the two paths sampled different tokens"
                raw.append(s_raw)
                checked.append(s_checked)
            a, b = statistics.median(raw) * 1e6, statistics.median(checked) * 1e6
            kind = "greedy" if temperature == 0 else f"temp {temperature}"
            print(f"  {name:28s} {kind:12s} {a:10.0f} {b:10.0f} {b - a:+8.0f}")
    # the part of the checked path that is Python's own: filling the candidates array
    # (llama.cpp fills its own in C inside llama_sampler_sample)
    import numpy as np

    from engine.native.logits import LogitsRows

    row = LogitsRows(model.n_vocab).row(ctx.ptr, index)
    data = np.zeros(model.n_vocab, dtype=[("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
    ids = np.arange(model.n_vocab, dtype=np.int32)
    fills = []
    for _ in range(200):
        t0 = time.perf_counter()
        data["id"] = ids
        data["logit"] = row
        fills.append(time.perf_counter() - t0)
    print(f"  filling the {model.n_vocab} candidates in numpy: "
          f"{statistics.median(fills) * 1e6:.0f} us (median of 200)")
    batch.free()
    ctx.free()
    model.free()


if __name__ == "__main__":
    main()
