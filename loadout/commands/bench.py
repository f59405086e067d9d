"""``loadout bench MODEL``: measured prefill / decode / TTFT next to the Plan's prediction.

Greedy, so runs can be compared; one warm-up request first (its prompt shares no prefix
with the measured one, so nothing measured comes from the cache).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from loadout.commands.chat import add_launch_arguments, plan_and_load

SCHEMA = "loadout.bench/1"
# A plain-prose prompt of a few hundred tokens: long enough for a stable prefill figure.
DEFAULT_PROMPT = (
    "The history of the lighthouse begins with fires lit on hilltops to guide ships home. "
    "Over centuries these fires became towers of stone, and the towers gained lenses, "
    "clockwork, and finally electric lamps. Keepers lived beside them with their families, "
    "trimming wicks, winding weights and writing the weather into logbooks every night. "
) * 5 + "Now write a long, detailed essay about lighthouses, their keepers and the sea."


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="measure prefill / decode / TTFT beside the prediction")
    add_launch_arguments(p, ctx_default=4096)
    p.add_argument("--prompt-file", type=Path, default=None,
                   help="the prompt to process (default: a built-in prose prompt)")
    p.add_argument("--max-tokens", type=int, default=128, help="tokens to generate")
    p.add_argument("--ignore-eos", action="store_true",
                   help="always generate --max-tokens tokens")
    p.add_argument("--raw", action="store_true",
                   help="send the prompt as raw text (default: as one user message, "
                        "rendered with the model's chat template)")
    p.add_argument("--json", action="store_true", help="print one loadout.bench/1 document")


def run(args: argparse.Namespace) -> int:
    from engine.requests import GenerationRequest, SamplingParams

    prompt = args.prompt_file.read_text(encoding="utf-8") if args.prompt_file \
        else DEFAULT_PROMPT
    prompt_tokens = max(1, len(prompt) // 4)
    # predicted where it is measured: decode t/s averages over a cache growing from the
    # prompt to prompt + max_tokens
    launch, engine = plan_and_load(args, prompt_tokens=prompt_tokens,
                                   depth=prompt_tokens + max(1, args.max_tokens) // 2)
    try:
        greedy = SamplingParams(temperature=0.0, max_tokens=max(1, args.max_tokens),
                                loop_guard="off", ignore_eos=args.ignore_eos)
        engine.submit(GenerationRequest(prompt="Warm up.", params=SamplingParams(
            temperature=0.0, max_tokens=4, loop_guard="off"))).result()
        request = GenerationRequest(prompt=prompt, params=greedy) if args.raw else \
            GenerationRequest(messages=({"role": "user", "content": prompt},), params=greedy)
        final = engine.submit(request).result()
        load_s = engine.load_seconds
    finally:
        engine.close()
    if final.error:
        print(f"loadout bench: error: {final.error}", file=sys.stderr)
        return 1
    doc = bench_document(final, launch.predicted, load_s, launch.spec.to_json())
    if args.json:
        print(json.dumps(doc))
    else:
        print(render(doc))
    return 0


def bench_document(final: Any, predicted: dict[str, Any] | None, load_s: float,
                   spec: dict[str, Any]) -> dict[str, Any]:
    """The ``loadout.bench/1`` JSON document of one measured request."""
    m = final.metrics
    return {
        "schema": SCHEMA,
        "decode_tps": m.decode_tps, "prefill_tps": m.prefill_tps, "ttft_s": m.ttft_s,
        "e2e_tps": m.e2e_tps, "prompt_tokens": m.prompt_tokens,
        "cached_tokens": m.cached_tokens, "generated_tokens": m.generated_tokens,
        "predicted": predicted, "text": final.text, "finish_reason": final.finish_reason,
        "load_s": load_s, "launch": spec,
    }


def render(doc: dict[str, Any]) -> str:
    """A small table: measured beside predicted."""
    pred = doc.get("predicted") or {}

    def cell(value: Any, fmt: str) -> str:
        return format(value, fmt) if isinstance(value, (int, float)) else "n/a"

    rows = [("decode t/s", "decode_tps", ".1f"), ("prefill t/s", "prefill_tps", ".1f"),
            ("TTFT s", "ttft_s", ".3f")]
    lines = [f"{'':14}{'measured':>10}{'predicted':>11}"]
    for label, key, fmt in rows:
        lines.append(f"{label:14}{cell(doc[key], fmt):>10}{cell(pred.get(key), fmt):>11}")
    lines.append(f"{'end-to-end t/s':14}{cell(doc['e2e_tps'], '.1f'):>10}")
    lines.append(f"{doc['prompt_tokens']} prompt tokens ({doc['cached_tokens']} cached), "
                 f"{doc['generated_tokens']} generated; model loaded in {doc['load_s']:.2f} s")
    return "\n".join(lines)
