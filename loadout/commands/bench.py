"""``loadout bench MODEL``: measured prefill / decode / TTFT next to the Plan's prediction.

Greedy, so runs can be compared. One warm-up request first, as ``llama-bench`` warms up
with the test it then measures: its prompt is as long as the measured one (up to one
micro-batch), so the measured prefill does not pay the first touch of llama.cpp's buffers,
and it shares no prefix with it, so nothing measured comes from the cache. ``--repeat N``
measures the request N times, each processing the whole prompt, and reports the median
of each figure (every run's figure under ``samples``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadout.commands.chat import add_launch_arguments, plan_and_load

SCHEMA = "loadout.bench/1"
SAMPLED = ("decode_tps", "prefill_tps", "ttft_s", "e2e_tps", "decode_overhead")
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
    p.add_argument("--repeat", type=int, default=1,
                   help="measure the request this many times (each processes the whole "
                        "prompt) and report the median of each figure")
    p.add_argument("--json", action="store_true", help="print one loadout.bench/1 document")


def run(args: argparse.Namespace) -> int:
    from loadout.commands.chat import spec_overrides

    try:
        spec_overrides(args)  # a bad --spec is refused before anything loads
    except (ValueError, OSError) as exc:
        print(f"loadout bench: error: {exc}", file=sys.stderr)
        return 2
    prompt = bench_prompt(args)
    prompt_tokens = max(1, len(prompt) // 4)
    # predicted where it is measured: decode t/s averages over a cache growing from the
    # prompt to prompt + max_tokens
    launch, engine = plan_and_load(args, prompt_tokens=prompt_tokens,
                                   depth=prompt_tokens + max(1, args.max_tokens) // 2)
    finals = []
    try:
        predicted = repriced(args, launch, engine, prompt, prompt_tokens)
        warm_up(engine, prompt)
        request = measured_request(args, prompt)
        for _ in range(max(1, args.repeat)):
            finals.append(engine.submit(request).result())
            if finals[-1].error:
                break
        load_s = engine.load_seconds
    finally:
        engine.close()
    if finals[-1].error:
        print(f"loadout bench: error: {finals[-1].error}", file=sys.stderr)
        return 1
    doc = bench_document(finals, predicted, load_s, launch.spec.to_json())
    if args.json:
        print(json.dumps(doc))
    else:
        print(render(doc))
    return 0


def repriced(args: argparse.Namespace, launch: Any, engine: Any, prompt: str,
             estimate: int) -> dict[str, Any] | None:
    """The plan's prediction at the prompt's real length in this model's tokens.

    The plan is made before the model loads, from an estimate of the prompt's length (a
    token per four characters); tokenizers differ by several times on the same text (the
    prose prompt is 343 tokens for SmolLM2, 1465 for a byte-level vocabulary), and decode
    slows with the depth of the cache, so the measured figures are compared with the
    prediction at the depth they were measured at.
    """
    if launch.plan is None:
        return None
    text = prompt if args.raw else engine.render_chat([{"role": "user", "content": prompt}])
    tokens = len(engine.tokenize(text, add_special=args.raw))
    if tokens == estimate:
        return launch.predicted  # type: ignore[no-any-return]
    from loadout.commands.chat import planned_launch

    again = planned_launch(args, prompt_tokens=tokens,
                           depth=tokens + max(1, args.max_tokens) // 2)
    return again.predicted  # type: ignore[no-any-return]


def bench_prompt(args: argparse.Namespace) -> str:
    """The text ``--prompt-file`` names, or the built-in prose prompt."""
    if args.prompt_file:
        return str(args.prompt_file.read_text(encoding="utf-8"))
    return DEFAULT_PROMPT


def measured_request(args: argparse.Namespace, prompt: str) -> Any:
    """The request ``loadout bench`` measures: greedy, and the whole prompt processed every
    time, as llama-bench clears its memory between repetitions."""
    from engine.requests import GenerationRequest, SamplingParams

    greedy = SamplingParams(temperature=0.0, max_tokens=max(1, args.max_tokens),
                            loop_guard="off", ignore_eos=args.ignore_eos, cache_prompt=False)
    if args.raw:
        return GenerationRequest(prompt=prompt, params=greedy)
    return GenerationRequest(messages=({"role": "user", "content": prompt},), params=greedy)


def warm_up(engine: Any, prompt: str) -> None:
    """One short request whose prompt is as long as ``prompt``: the first touch of the
    buffers a batch of that size uses is not measured."""
    from engine.requests import GenerationRequest, SamplingParams

    warm = SamplingParams(temperature=0.0, max_tokens=4, loop_guard="off")
    engine.submit(GenerationRequest(prompt=warm_up_prompt(engine, prompt), params=warm)
                  ).result()


def warm_up_prompt(engine: Any, prompt: str) -> str:
    """A raw prompt as long as ``prompt`` (at most one micro-batch) that shares no prefix
    with it, raw or rendered as a chat."""
    room = min(engine.spec.n_ubatch, engine.n_ctx_per_seq - 16)
    tokens = engine.tokenize(prompt, add_special=False)[:max(0, room)]
    return "Warm up. " + str(engine.detokenize(tokens))


def bench_document(finals: Sequence[Any], predicted: dict[str, Any] | None, load_s: float,
                   spec: dict[str, Any]) -> dict[str, Any]:
    """The ``loadout.bench/1`` document of the measured requests: each speed figure is the
    median over them (``samples`` lists every one)."""
    metrics = [f.metrics for f in finals]
    samples = {key: [getattr(m, key) for m in metrics] for key in SAMPLED}
    figures = {key: _median(values) for key, values in samples.items()}
    last = finals[-1]
    return {
        "schema": SCHEMA, **figures,
        "prompt_tokens": last.metrics.prompt_tokens, "cached_tokens": last.metrics.cached_tokens,
        "generated_tokens": last.metrics.generated_tokens, "repeats": len(finals),
        "samples": samples, "predicted": predicted, "text": last.text,
        "finish_reason": last.finish_reason, "load_s": load_s, "launch": spec,
        "speculation": {"mode": last.metrics.speculation or spec.get("spec_mode", "off"),
                        "acceptance": last.metrics.acceptance,
                        "tokens_per_step": last.metrics.tokens_per_step,
                        "drafted_tokens": last.metrics.drafted_tokens,
                        "accepted_tokens": last.metrics.accepted_tokens},
    }


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) == len(values) and known else None


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
    spec = doc.get("speculation") or {}
    if spec.get("mode") not in (None, "off"):
        lines.append(f"{'tokens/step':14}{cell(spec.get('tokens_per_step'), '.2f'):>10}"
                     f"{cell(pred.get('tokens_per_step'), '.2f'):>11}  ({spec['mode']}, "
                     f"acceptance {cell(spec.get('acceptance'), '.2f')})")
    cal = pred.get("calibration") or {}
    if cal.get("runs"):
        raw = pred.get("raw") or {}
        lines.append(f"predicted: calibrated on {cal['runs']} runs on this machine "
                     f"(raw: decode {cell(raw.get('decode_tps'), '.1f')}, prefill "
                     f"{cell(raw.get('prefill_tps'), '.1f')})")
    lines.append(f"{'end-to-end t/s':14}{cell(doc['e2e_tps'], '.1f'):>10}")
    if doc.get("decode_overhead") is not None:
        lines.append(f"engine overhead: {doc['decode_overhead']:.1%} of the decode time "
                     "outside llama.cpp")
    runs = f"; median of {doc['repeats']} runs" if doc.get("repeats", 1) > 1 else ""
    lines.append(f"{doc['prompt_tokens']} prompt tokens ({doc['cached_tokens']} cached), "
                 f"{doc['generated_tokens']} generated; model loaded in {doc['load_s']:.2f} s"
                 f"{runs}")
    return "\n".join(lines)
