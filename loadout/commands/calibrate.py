"""``loadout calibrate [MODEL]``: measure this machine for about a minute.

Measures the machine's figures not measured yet (as hardware detection does), loads MODEL
(the demo model by default) as ``loadout bench`` does, measures prefill and
decode on a few greedy requests until the time is up (each recorded by the engine in
this machine's run records), then plans the model again and prints the correction the
planner now applies here ("calibrated on N runs on this machine") beside the raw
prediction. The same :func:`calibrate` serves the app's "Measure this machine".

``--core-only`` measures what one CPU core makes of Q4_K weights instead (about a second)
and prints it: hardware detection runs it in a child process and keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loadout.commands.chat import add_launch_arguments, plan_and_load

SCHEMA = "loadout.calibration/1"
MIN_RUNS = 3


@dataclass(frozen=True)
class Calibration:
    """What a calibration measured and what the planner now predicts."""

    model: str
    measured: tuple[dict[str, Any], ...]
    predicted: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "model": self.model, "runs": list(self.measured),
                "predicted": self.predicted}


def register(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="measure this machine for about a minute so the "
                                         "planner's predictions learn it")
    add_launch_arguments(p, ctx_default=4096)
    p.add_argument("--seconds", type=float, default=60.0,
                   help="measuring time (at least three runs are made)")
    p.add_argument("--max-tokens", type=int, default=96, help="tokens per measured run")
    p.add_argument("--json", action="store_true", help="print one loadout.calibration/1 "
                                                       "document")
    p.add_argument("--core-only", action="store_true",
                   help="only measure what one CPU core makes of Q4_K weights (about a "
                        "second) and print it; nothing is saved (hardware detection runs "
                        "this in a child process and keeps the figures)")


def calibrate(args: argparse.Namespace,
              progress: Callable[[int, dict[str, Any]], None] | None = None) -> Calibration:
    """Measure ``args.model`` for ``args.seconds`` (at least :data:`MIN_RUNS` runs), then
    re-plan it; ``progress(i, metrics)`` is called after each run."""
    from loadout.commands.bench import (
        DEFAULT_PROMPT,
        measured_request,
        warm_up,
    )

    measure_machine()
    prompt_tokens = max(1, len(DEFAULT_PROMPT) // 4)
    _launch, engine = plan_and_load(args, prompt_tokens=prompt_tokens,
                                   depth=prompt_tokens + args.max_tokens // 2)
    measured: list[dict[str, Any]] = []
    try:
        warm_up(engine, DEFAULT_PROMPT)
        bench_args = argparse.Namespace(max_tokens=args.max_tokens, ignore_eos=True, raw=True)
        request = measured_request(bench_args, DEFAULT_PROMPT)
        deadline = time.monotonic() + max(0.0, args.seconds)
        while len(measured) < MIN_RUNS or time.monotonic() < deadline:
            final = engine.submit(request).result()
            if final.error:
                raise RuntimeError(final.error)
            measured.append(final.metrics.to_json())
            if progress:
                progress(len(measured), measured[-1])
    finally:
        engine.close()
    again = plan_and_load_prediction(args, prompt_tokens)
    return Calibration(model=str(args.model), measured=tuple(measured), predicted=again)


def measure_machine() -> None:
    """Measure the machine's RAM bandwidth and one CPU core's rates again (asked for:
    "Measure this machine"; the best figure is kept while the machine is busy), a few
    seconds: the runs are then recorded against the plans every later detection makes,
    which read these figures (a plan priced with measured cores does not learn from runs
    priced without)."""
    from engine.hardware import detect

    detect(model_dirs=[], refine=True)


def core_only(as_json: bool) -> int:
    """``--core-only``: one core's Q4_K rates, measured in this process and printed."""
    from engine.hardware import core_rate

    try:
        rate = core_rate.measure()
    except (RuntimeError, OSError) as exc:
        print(f"loadout calibrate: error: the CPU core probe failed: {exc}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(rate.to_json()))
    else:
        print(f"one CPU core: {rate.prefill_gflops:.1f} GFLOP/s of Q4_K in prefill, "
              f"{rate.decode_gbps:.2f} GB/s in decode ({rate.rounds} rounds, "
              f"{rate.seconds:.2f} s)")
    return 0


def plan_and_load_prediction(args: argparse.Namespace, prompt_tokens: int) -> dict[str, Any]:
    """The plan's prediction for ``args.model`` now (with the runs just recorded)."""
    from loadout.commands.chat import planned_launch

    launch = planned_launch(args, prompt_tokens=prompt_tokens,
                            depth=prompt_tokens + args.max_tokens // 2)
    return dict(launch.predicted or {})


def run(args: argparse.Namespace) -> int:
    from loadout.commands.chat import spec_overrides

    if args.core_only:
        return core_only(args.json)
    if args.no_plan:
        print("loadout calibrate: error: --no-plan: a run is learnt from against its plan's "
              "prediction", file=sys.stderr)
        return 2
    try:
        spec_overrides(args)
    except (ValueError, OSError) as exc:
        print(f"loadout calibrate: error: {exc}", file=sys.stderr)
        return 2

    def show(i: int, m: dict[str, Any]) -> None:
        print(f"run {i}: prefill {m.get('prefill_tps') or 0:.1f} t/s, decode "
              f"{m.get('decode_tps') or 0:.1f} t/s", file=sys.stderr, flush=True)

    result = calibrate(args, show)
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    pred = result.predicted
    cal = pred.get("calibration") or {}
    raw = pred.get("raw") or pred
    print(f"measured {len(result.measured)} runs of {result.model}")
    print(f"predicted now: decode {pred.get('decode_tps', 0):.1f} t/s, prefill "
          f"{pred.get('prefill_tps', 0):.1f} t/s  (calibrated on {cal.get('runs', 0)} runs on "
          f"this machine; raw: decode {raw.get('decode_tps', 0):.1f}, prefill "
          f"{raw.get('prefill_tps', 0):.1f})")
    return 0
