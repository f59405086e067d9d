"""Prefill on the CPU, predicted vs measured, for small models with small and large
vocabularies (the output layer's share of the work is what differs).

llama.cpp computes the output layer for the last token of a prompt only, so a model whose
output projection is most of its weights (a 262k vocabulary on a 640-wide model)
prefills far faster than its per-token decode work suggests. For the demo model and a
synthetic gemma3-shaped model with a 262,144-token vocabulary (random Q8_0 weights,
written here), it plans each on this machine with one thread, measures prefill on the
engine with one thread (median of N prompts, nothing cached) and prints both, with what
the prediction would be if the output layer ran for every prompt token.

Run: ``.venv/bin/python bench/prefill_vocab.py [--repeat N]`` (a minute or two; CPU).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROMPT = ("The keeper climbed the tower at dusk, trimmed the wick and wound the clockwork "
          "that turned the great lens. ") * 12


def large_vocab_model(folder: Path) -> Path:
    """A gemma3-shaped model with gemma 3 270M's widths and vocabulary (tied output)."""
    from tests.helpers.gguf_factory import Shape, write_gemma3

    shape = Shape(n_layers=6, n_embd=640, n_head=4, n_head_kv=1, head_dim=256, n_ff=2048,
                  n_vocab=262144, weight_type="Q8_0",
                  extra_kv={"gemma3.attention.sliding_window": 512})
    return write_gemma3(folder / "gemma3-262k-q8_0.gguf", shape)


def predicted(path: Path, prompt_tokens: int) -> tuple[float, float]:
    """(predicted prefill t/s with one thread, the same with the output layer priced per
    prompt token)."""
    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from planner.plan import plan
    from planner.request import Request

    inv = detect(measure=False)
    inv = replace(inv, host=replace(inv.host, cores=1))
    profile = load_profile(path)
    p = plan(inv, profile, Request(context=2048, prompt_tokens=prompt_tokens, advise=False))
    tps = p.predicted.prefill_tps
    out_bytes = profile.output_bytes + (profile.token_embd_bytes if profile.tied_output else 0)
    share = out_bytes / max(1, profile.weights_bytes - profile.token_embd_bytes
                            + (profile.token_embd_bytes if profile.tied_output else 0))
    return tps, tps * (1.0 - share)


def measured(path: Path, repeat: int) -> tuple[float, int]:
    """(median measured prefill t/s with one thread, prompt tokens)."""
    from engine.launch import LaunchSpec
    from engine.requests import GenerationRequest, SamplingParams
    from engine.runtime import Engine

    params = SamplingParams(temperature=0.0, max_tokens=1, cache_prompt=False,
                            loop_guard="off")
    runs, n = [], 0
    with Engine(LaunchSpec(str(path), n_ctx=2048, n_threads=1)) as engine:
        engine.submit(GenerationRequest(prompt="Warm up. " + PROMPT[:200],
                                        params=params)).result()
        for i in range(repeat):
            final = engine.submit(GenerationRequest(prompt=f"{i}. " + PROMPT,
                                                    params=params)).result()
            runs.append(final.metrics.prefill_tps or 0.0)
            n = final.metrics.prompt_tokens
    return statistics.median(runs), n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from engine.demo import demo_model_path

    with tempfile.TemporaryDirectory(prefix="loadout-prefill-") as tmp:
        models = {"SmolLM2-135M (49k vocab)": Path(demo_model_path()),
                  "gemma3-shaped (262k vocab)": large_vocab_model(Path(tmp))}
        print(f"{'model':<28}{'prompt':>7}{'measured':>10}{'predicted':>11}{'error':>8}"
              f"{'if output per token':>21}")
        for name, path in models.items():
            tps, prompt = measured(path, args.repeat)
            pred, per_token = predicted(path, prompt)
            print(f"{name:<28}{prompt:>7}{tps:>10.1f}{pred:>11.1f}"
                  f"{(pred / tps - 1) * 100:>7.0f}%{per_token:>13.1f} "
                  f"({(per_token / tps - 1) * 100:+.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
