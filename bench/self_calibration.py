"""Learning this machine: how close the prediction gets after a few measured runs.

With an empty record of runs (a temporary ``LOADOUT_HOME``), it detects the machine as the
app does at its first start (``loadout detect``: RAM bandwidth and one core's Q4_K rates,
measured and kept in the profile), then measures a model (the demo)
with ``loadout bench`` three times (each run is recorded by the engine). Then, with
recording off (so every later run is predicted from those same three runs), it measures
that model and a similar model (a llama of another depth and width cut from the demo's
own trained tensors, see :mod:`bench.real_weights`, written here and never run before)
in interleaved pairs, the order alternating from pair
to pair (A B, B A, ...), and compares each prediction with the median of its model's runs.

This machine is shared: the same run moves by tens of percent from minute to minute. Two
things keep the verdict honest under that noise:

- every median comes with its confidence interval from order statistics (the runs'
  ranks, at least 90%; no assumption on the noise's shape). A figure whose error is within
  5% passes; one whose error is not, but lies inside an interval wider than 5%, cannot be
  checked here ("noise"); anything else misses;
- the similar model is also scored by how the demo's runs carry over to it with the load
  cancelled: its predicted speed over the demo's, against the median over the pairs of its
  measured speed over the demo's (the checks run in this process, both models loaded, their
  requests a second or two apart), and the same for decode in the engine's CPU seconds per
  token (one engine thread: its work, without the waits for a core that the load adds).
  This is the part of the similar model's error that calibration owns; the rest is the
  load moving between the recorded runs and the checks, which the demo's own figure shows.

Goal: decode and prefill within 5% after three runs, for the model and for the similar
one. Exit code: 0 when every scored figure is within 5%, 1 when one misses, 3 when none
misses but some could only be checked against an interval wider than 5%.

A model of another quantization (the similar model's blocks requantized to Q8_0) is
measured last and shown, not scored.

Run: ``.venv/bin/python bench/self_calibration.py`` (about six minutes; CPU).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL = 0.05
COVERAGE = 0.90            # of a median's confidence interval
PROMPT = ("The history of the lighthouse begins with fires lit on hilltops to guide ships "
          "home. Over centuries these fires became towers of stone, and the towers gained "
          "lenses, clockwork, and finally electric lamps. Now write a long, detailed essay "
          "about lighthouses, their keepers and the sea.")


def similar_model(folder: Path, weight_type: str | None = None) -> Path:
    """A llama of another size than SmolLM2-135M (20 blocks 384 wide, 6 query heads, 1024
    feed-forward rows; the demo: 30 blocks 576 wide, 9 heads, 1536) cut from the demo's
    own trained tensors (:mod:`bench.real_weights`: a random-weight file costs a core
    less per weight than trained weights do, so it would not share what the demo's runs
    teach); ``weight_type`` requantizes its block matrices."""
    from bench.real_weights import cut_demo

    name = f"similar-llama-{(weight_type or 'q4_1').lower()}.gguf"
    return cut_demo(folder / name, 20, 384, 1024, weight_type)


def bench(model: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """One ``loadout bench --json`` run (a fresh process, as a user runs it)."""
    cmd = [sys.executable, "-m", "loadout", "bench", model, "--json", "--raw", "--ignore-eos",
           "--max-tokens", str(args.max_tokens), "--repeat", str(args.repeat),
           "--prompt-file", str(args.prompt_file)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def detected(env: dict[str, str]) -> dict[str, Any]:
    """``loadout detect --json`` in the profile of ``env`` (it measures and caches the
    machine's figures); its host."""
    cmd = [sys.executable, "-m", "loadout", "detect", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    host: dict[str, Any] = json.loads(out.stdout)["host"]
    return host


class Loaded:
    """A model loaded in this process as ``loadout bench`` loads it, with its plan's
    prediction at the prompt's real length in its own tokens (calibrated by the runs
    recorded so far)."""

    def __init__(self, model: str, args: argparse.Namespace) -> None:
        from engine.models import resolve_local_model
        from engine.planned_launch import plan_launch
        from engine.runtime import Engine

        path = str(resolve_local_model(model))
        launch = plan_launch(path, context=4096, n_threads=args.threads)
        self.engine = Engine(launch.spec)
        self.prompt = args.prompt_file.read_text(encoding="utf-8")
        n = len(self.engine.tokenize(self.prompt))
        again = plan_launch(path, context=4096, n_threads=args.threads, prompt_tokens=n,
                            depth=n + args.max_tokens // 2)
        self.predicted: dict[str, Any] = dict(again.predicted or {})
        self.request(4)  # the first touch of its buffers is not measured

    def request(self, max_tokens: int) -> dict[str, Any]:
        """One greedy request of the prompt, whole; its measured figures, and its decode
        in the engine thread's CPU seconds per token (``cpu_s``; see :func:`cpu_marks`)."""
        from bench.cpu_shape_cost import cpu_per_token
        from engine.requests import GenerationRequest, SamplingParams

        params = SamplingParams(temperature=0.0, max_tokens=max_tokens, loop_guard="off",
                                ignore_eos=True, cache_prompt=False)
        handle = self.engine.submit(GenerationRequest(prompt=self.prompt, params=params))
        final = handle.result()
        if final.error:
            raise RuntimeError(final.error)
        m = final.metrics
        return {"decode_tps": m.decode_tps, "prefill_tps": m.prefill_tps,
                "cpu_s": cpu_per_token(handle), "predicted": self.predicted}


def line(label: str, doc: dict[str, Any]) -> None:
    """Print one run: measured vs predicted (and raw)."""
    pred = doc["predicted"]
    raw = pred.get("raw") or pred
    cal = pred.get("calibration") or {}
    parts = []
    for key in ("decode_tps", "prefill_tps"):
        parts.append(f"{key[:-4]} measured {doc[key]:7.1f} predicted {pred[key]:7.1f} "
                     f"({(pred[key] / doc[key] - 1) * 100:+5.1f}%) raw {raw[key]:7.1f}")
    print(f"{label:<28} runs {cal.get('runs', 0):>2} {cal.get('scope', 'none'):<8} "
          + " | ".join(parts), flush=True)


def median_interval(values: Sequence[float]) -> tuple[float, float]:
    """A confidence interval of the median of ``values`` from order statistics: the
    widest pair of ranks ``(k, n - 1 - k)`` that still covers the median with at least
    :data:`COVERAGE` (the whole range when there are too few values)."""
    xs, n = sorted(values), len(values)
    k = 0
    while k + 1 < n - 2 - k:
        # the true median lies between the (k+2)-th and (n-k-1)-th smallest of n draws
        # when k+2 to n-k-2 of them fall below it (each does with probability 1/2)
        cover = sum(math.comb(n, i) for i in range(k + 2, n - k - 1)) / 2 ** n
        if cover < COVERAGE:
            break
        k += 1
    return xs[k], xs[n - 1 - k]


@dataclass(frozen=True)
class Check:
    """One figure: a prediction against the median of measured values."""

    model: str
    figure: str
    predicted: float
    measured: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.measured)

    @property
    def error(self) -> float:
        """Predicted / median measured - 1."""
        return self.predicted / self.median - 1

    @property
    def interval(self) -> tuple[float, float]:
        """The errors the median's confidence interval allows (low, high)."""
        lo, hi = median_interval(self.measured)
        return self.predicted / hi - 1, self.predicted / lo - 1

    def verdict(self) -> str:
        """``within`` the goal, ``noise`` (the goal lies inside an interval wider than
        it: it cannot be checked here), or ``missed``."""
        if abs(self.error) <= GOAL:
            return "within"
        lo, hi = self.interval
        if lo <= GOAL and hi >= -GOAL:
            return "noise"
        return "missed"

    def text(self) -> str:
        lo, hi = self.interval
        words = {"within": f"within {GOAL * 100:.0f}%",
                 "noise": f"not within {GOAL * 100:.0f}%, but {GOAL * 100:.0f}% lies inside "
                          f"the noise: cannot be checked here",
                 "missed": f"NOT within {GOAL * 100:.0f}%"}
        return (f"{self.model:<22} {self.figure:<8} predicted {self.predicted:7.2f}  "
                f"measured median {self.median:7.2f} over {len(self.measured)} "
                f"({min(self.measured):.2f}..{max(self.measured):.2f})  error "
                f"{self.error * 100:+5.1f}% (interval {lo * 100:+.1f}..{hi * 100:+.1f}%)  "
                f"{words[self.verdict()]}")


def checks_of(model: str, docs: list[dict[str, Any]]) -> list[Check]:
    """The decode and prefill checks of ``model``'s runs (all predicted alike)."""
    out = []
    for key in ("decode_tps", "prefill_tps"):
        predicted = {round(d["predicted"][key], 2) for d in docs}
        if len(predicted) != 1:  # the prediction must be the one made after the training
            raise RuntimeError(f"{model}: the prediction moved between check runs: {predicted}")
        out.append(Check(model, key[:-4], docs[0]["predicted"][key],
                         tuple(d[key] for d in docs)))
    return out


def carry_checks(demo: list[dict[str, Any]], sim: list[dict[str, Any]]) -> list[Check]:
    """The similar model's speed over the demo's, predicted against the pairs' measured
    ratios (the load cancelled): how the demo's runs carry over to another model."""
    out = []
    for key in ("decode_tps", "prefill_tps"):
        pairs = tuple(s[key] / d[key] for d, s in zip(demo, sim, strict=True))
        predicted = sim[0]["predicted"][key] / demo[0]["predicted"][key]
        out.append(Check("similar / demo (pairs)", key[:-4], predicted, pairs))
    # decode in the engine's CPU seconds: the ratio without the waits for a core
    pairs = tuple(d["cpu_s"] / s["cpu_s"] for d, s in zip(demo, sim, strict=True))
    predicted = sim[0]["predicted"]["decode_tps"] / demo[0]["predicted"]["decode_tps"]
    out.append(Check("similar / demo (CPU s)", "decode", predicted, pairs))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs before the check")
    parser.add_argument("--pairs", type=int, default=15,
                        help="interleaved pairs of measured runs after them")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2, help="requests per run (median)")
    parser.add_argument("--threads", type=int, default=1,
                        help="engine threads (1: on a busy machine two wait on each other)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loadout-selfcal-") as tmp:
        env = {**os.environ, "LOADOUT_HOME": str(Path(tmp) / "home"), "PYTHONPATH": str(ROOT)}
        # a short prompt: a long one spends the time on prefill
        args.prompt_file = Path(tmp) / "prompt.txt"
        args.prompt_file.write_text(PROMPT, encoding="utf-8")
        similar = str(similar_model(Path(tmp)))
        other = str(similar_model(Path(tmp), "Q8_0"))
        # the machine is detected first, as the app does at its first start: that
        # measures its figures (RAM bandwidth, one core's Q4_K rates) into the profile
        host = detected(env)
        print(f"detected: one core {host.get('core_prefill_gflops', 0):.1f} GFLOP/s prefill, "
              f"{host.get('core_decode_gbps', 0):.2f} GB/s decode of Q4_K; RAM "
              f"{host.get('bandwidth_gbps', 0):.1f} GB/s", flush=True)
        trained: list[dict[str, Any]] = []
        for i in range(args.runs):
            trained.append(bench("demo", args, env))
            line(f"demo run {i + 1} (recorded)", trained[-1])
        # From here on nothing is recorded: every run is predicted from the runs above.
        # The checks run in this process, each model loaded once, their requests
        # alternating (the order flipping every pair) a second or two apart.
        os.environ.update(LOADOUT_HOME=env["LOADOUT_HOME"], LOADOUT_RUN_RECORDS="off")
        from bench.cpu_shape_cost import mark_cpu_time

        mark_cpu_time()
        models = {"demo": Loaded("demo", args), "similar model": Loaded(similar, args),
                  "Q8_0 model": Loaded(other, args)}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in models}
        try:
            for i in range(args.pairs):
                names = list(models) if i % 2 == 0 else ["similar model", "demo", "Q8_0 model"]
                for name in names:
                    runs[name].append(models[name].request(args.max_tokens))
                    line(f"{name} check {i + 1}", runs[name][-1])
        finally:
            for loaded in models.values():
                loaded.engine.close()
        demo, sim = runs["demo"], runs["similar model"]
    checks = checks_of("demo", demo) + checks_of("similar model", sim) + carry_checks(demo, sim)
    q8 = checks_of("Q8_0 model", runs["Q8_0 model"])
    print(f"after {args.runs} recorded runs of the demo; each prediction against the median "
          f"of {args.pairs} interleaved runs ({COVERAGE * 100:.0f}% interval of the median):")
    for check in checks:
        print("  " + check.text())
    print("not scored (another quantization):")
    for check in q8:
        print("  " + check.text())
    print("load on the machine (not scored):")
    for key in ("decode_tps", "prefill_tps"):
        # the machine's load moves between the recorded runs and the checks
        then = statistics.median(d[key] for d in trained)
        now = statistics.median(d[key] for d in demo)
        print(f"  demo {key[:-4]:<8} recorded runs median {then:7.1f}, checks median "
              f"{now:7.1f} ({(now / then - 1) * 100:+.0f}%)")
    verdicts = {c.verdict() for c in checks}
    if "missed" in verdicts:
        print("FAIL")
        return 1
    if "noise" in verdicts:
        noisy = ", ".join(f"{c.model} {c.figure}" for c in checks if c.verdict() == "noise")
        print(f"NOT SHOWN: no figure misses, but for {noisy} the {GOAL * 100:.0f}% goal lies "
              f"inside the noise of this machine now, so it could not be checked")
        return 3
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
