"""N-gram speculative decoding against plain decoding, in the engine, on one model.

Two prompts, each run greedily with ``spec_mode="off"`` and ``"ngram"``:

- edit: "repeat this code with one change" (the answer copies most of the prompt);
- creative: a short story (little to copy: the per-request switch should turn drafting
  off, keeping decode >= 0.95 x plain).

Sides alternate for ``--rounds`` rounds and the best decode t/s of each is kept (the
machine is shared; the best run is the least disturbed). Printed per prompt: decode t/s of
both, their ratio, acceptance, tokens per step, what the switch did, and whether the two
answers are the same tokens.

    python bench/speculative.py [--model demo] [--threads N] [--rounds 3] [--draft 8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CODE = """def total_price(items, tax_rate, discount):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    if discount:
        subtotal -= subtotal * discount
    tax = subtotal * tax_rate
    return round(subtotal + tax, 2)
"""
PROMPTS = {
    # a raw completion: the model goes on writing the edited copy
    "edit": ("# shop/prices.py\n" + CODE + "\n\n# shop/prices_eu.py: the same function, "
             "with tax_rate renamed to vat\ndef total_price(items, vat, discount):\n"),
    "creative": "Write a short, original story about a lighthouse keeper who finds a "
                "strange map. Use vivid new images in every sentence.",
}


def run(engine: Any, text: str, mode: str, draft: int, max_tokens: int) -> Any:
    from engine.requests import GenerationRequest, SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, spec_mode=mode,
                            draft_tokens=draft, loop_guard="off")
    if text.startswith("#"):
        return engine.submit(GenerationRequest(prompt=text, params=params)).result(600)
    msg = {"role": "user", "content": text}
    return engine.submit(GenerationRequest(messages=(msg,), params=params)).result(600)


def main() -> int:
    """Run the comparison and print one block per prompt."""
    from engine.launch import LaunchSpec
    from engine.models import resolve_local_model
    from engine.runtime import Engine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="demo")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--draft", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=160)
    args = ap.parse_args()
    path = resolve_local_model(args.model)
    spec = LaunchSpec(str(path), n_ctx=2048, n_threads=args.threads)
    print(f"model {path.name}, {spec.threads} threads, draft {args.draft}, "
          f"{args.rounds} rounds (best decode t/s of each side)")
    with Engine(spec) as engine:
        for name, text in PROMPTS.items():
            best: dict[str, Any] = {}
            for _ in range(args.rounds):
                for mode in ("off", "ngram"):
                    final = run(engine, text, mode, args.draft, args.max_tokens)
                    tps = final.metrics.decode_tps or 0.0
                    if mode not in best or tps > (best[mode].metrics.decode_tps or 0.0):
                        best[mode] = final
            off, on = best["off"].metrics, best["ngram"].metrics
            ratio = (on.decode_tps or 0.0) / (off.decode_tps or 1.0)
            same = best["off"].token_ids == best["ngram"].token_ids
            acc = "n/a" if on.acceptance is None else f"{on.acceptance:.0%}"
            per_step = "n/a" if on.tokens_per_step is None else f"{on.tokens_per_step:.2f}"
            print(f"[{name}] decode plain {off.decode_tps or 0:.1f} t/s | ngram "
                  f"{on.decode_tps or 0:.1f} t/s | ratio {ratio:.2f}x | acceptance {acc} "
                  f"({on.accepted_tokens}/{on.drafted_tokens}) | tokens/step {per_step} | "
                  f"speculation: {on.speculation} | {on.generated_tokens} tokens | "
                  f"same answer: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
