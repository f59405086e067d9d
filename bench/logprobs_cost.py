"""What log-probabilities, prompt scoring and logit bias cost, and that plain requests pay
nothing for them.

On one engine (the demo model by default, loaded in-process with ``n_seq_max`` 1), each
round runs, in an order that rotates from round to round:

- decode: a short prompt and ``--tokens`` greedy tokens (``ignore_eos``), plain, with
  ``logprobs`` 0 (each token's own), with 20 most likely tokens, and with a ``logit_bias``
  of one token: decode t/s, the share of the decode time spent outside ``llama_decode``,
  and that time per token (sampling, log-probabilities, Python: the figure the machine's
  load disturbs least);
- prefill: a prompt of ``--prompt-tokens`` tokens, processed whole, answered with one
  token, plain and scored (``echo`` with ``logprobs``: the logits of every position,
  5 most likely tokens each): prefill t/s.

The verdict is the median over the rounds of each mode (this machine's speed drifts; the
rotation spreads the drift over every mode). ``--plain-only`` runs just the plain modes,
with only what a plain request has always had, so the same script measures code from
before these features (``--code DIR``: import ``engine`` from DIR first).

    python bench/logprobs_cost.py [--model demo] [--threads N] [--rounds 7]
                                  [--tokens 128] [--prompt-tokens 256] [--plain-only]
                                  [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _modes(plain_only: bool) -> dict[str, dict[str, Any]]:
    """Each mode's extra sampling fields (decode modes) or prompt scoring (prefill)."""
    modes: dict[str, dict[str, Any]] = {"decode_plain": {}, "prefill_plain": {}}
    if not plain_only:
        modes.update({"decode_logprobs_0": {"logprobs": 0},
                      "decode_top_20": {"logprobs": 20},
                      "decode_logit_bias": {"logit_bias": ((13, -100.0),)},
                      "prefill_scored": {"logprobs": 5, "prompt_logprobs": True,
                                         "max_tokens": 0}})
    return modes


def _request(mode: str, extra: dict[str, Any], long_prompt: str, tokens: int) -> Any:
    from engine.requests import GenerationRequest, SamplingParams

    values: dict[str, Any] = {"temperature": 0.0, "loop_guard": "off", "cache_prompt": False}
    if mode.startswith("decode"):
        values.update(max_tokens=tokens, ignore_eos=True)
        prompt = "Once upon a time"
    else:
        values.update(max_tokens=1)
        prompt = long_prompt
    values.update(extra)
    return GenerationRequest(prompt=prompt, params=SamplingParams(**values))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--plain-only", action="store_true")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="the source tree whose engine is measured")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))

    import engine
    from engine.launch import LaunchSpec, default_threads
    from engine.models import resolve_local_model
    from engine.runtime import Engine

    threads = args.threads or default_threads()
    path = resolve_local_model(args.model)
    samples: dict[str, dict[str, list[float]]] = {}
    modes = _modes(args.plain_only)
    with Engine(LaunchSpec(str(path), n_threads=threads, n_ctx=2048, n_seq_max=1)) as eng:
        words = eng.detokenize(eng.tokenize("The quick brown fox jumps over the lazy dog. "
                                            * args.prompt_tokens, add_special=False)
                               [:args.prompt_tokens])
        names = list(modes)
        eng.submit(_request("prefill_plain", {}, words, args.tokens)).result()  # warm
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for mode in order:
                m = eng.submit(_request(mode, modes[mode], words, args.tokens)).result().metrics
                got = samples.setdefault(mode, {})
                if mode.startswith("decode"):
                    got.setdefault("decode_tps", []).append(m.decode_tps or 0.0)
                    got.setdefault("decode_overhead", []).append(m.decode_overhead or 0.0)
                    # per token, the time outside llama_decode: sampling, logprobs, Python
                    got.setdefault("outside_ms_per_token", []).append(
                        1000 * (m.decode_overhead or 0.0) / (m.decode_tps or float("inf")))
                else:
                    got.setdefault("prefill_tps", []).append(m.prefill_tps or 0.0)
            print(f"round {r + 1}: " + ", ".join(
                f"{mode} {next(iter(samples[mode].values()))[-1]:.1f}" for mode in names),
                file=sys.stderr, flush=True)
    result: dict[str, Any] = {
        "schema": "loadout.bench.logprobs/1", "engine": str(Path(engine.__file__).parent),
        "model": path.name, "threads": threads, "rounds": args.rounds,
        "tokens": args.tokens, "prompt_tokens": args.prompt_tokens,
        "medians": {mode: {k: round(statistics.median(v), 4) for k, v in got.items()}
                    for mode, got in samples.items()}}
    med = result["medians"]
    plain_decode, plain_prefill = med["decode_plain"]["decode_tps"], \
        med["prefill_plain"]["prefill_tps"]
    result["ratios_to_plain"] = {
        mode: round((figures.get("decode_tps") or figures.get("prefill_tps") or 0.0)
                    / (plain_decode if mode.startswith("decode") else plain_prefill), 3)
        for mode, figures in med.items() if not mode.endswith("plain")}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
