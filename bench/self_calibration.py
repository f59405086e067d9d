"""Learning this machine: how close the prediction gets after a few measured runs.

With an empty record of runs (a temporary ``LOADOUT_HOME``), it measures a model with
``loadout bench`` three times (each run is recorded by the engine), then measures it a
fourth time and a similar model (a synthetic llama of another size, the demo's Q4_1,
written here and never run before) once, and compares each of those two measurements
with the prediction the planner made for it from the recorded runs (raw prediction shown
beside it). Goal: decode and prefill within 5% after three runs, for the model and for
the similar one. Exit code 1 if missed. A model of another quantization (Q8_0) is
measured last and shown, not scored: the CPU's per-type matmul rate is not modelled, so
the demo's runs do not carry its prefill over.

Run: ``.venv/bin/python bench/self_calibration.py`` (a few minutes; CPU).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL = 0.05


def similar_model(folder: Path, weight_type: str = "Q4_1") -> Path:
    """A llama of another size than SmolLM2-135M (20 blocks 640 wide, 32k vocabulary),
    random weights of ``weight_type``."""
    from tests.helpers.gguf_factory import Shape, write_llama

    shape = Shape(n_layers=20, n_embd=640, n_head=10, n_head_kv=5, head_dim=64, n_ff=1792,
                  n_vocab=32000, weight_type=weight_type)
    return write_llama(folder / f"similar-llama-{weight_type.lower()}.gguf", shape)


def bench(model: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """One ``loadout bench --json`` run (a fresh process, as a user runs it)."""
    cmd = [sys.executable, "-m", "loadout", "bench", model, "--json", "--raw", "--ignore-eos",
           "--max-tokens", str(args.max_tokens), "--repeat", str(args.repeat)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def line(label: str, doc: dict[str, Any]) -> tuple[float, float]:
    """Print measured vs predicted (and raw); return the decode and prefill errors."""
    pred = doc["predicted"]
    raw = pred.get("raw") or pred
    cal = pred.get("calibration") or {}
    errs = []
    parts = []
    for key in ("decode_tps", "prefill_tps"):
        err = pred[key] / doc[key] - 1
        errs.append(err)
        parts.append(f"{key[:-4]} measured {doc[key]:7.1f} predicted {pred[key]:7.1f} "
                     f"({err * 100:+5.1f}%) raw {raw[key]:7.1f} "
                     f"({(raw[key] / doc[key] - 1) * 100:+5.1f}%)")
    print(f"{label:<28} runs {cal.get('runs', 0):>2} {cal.get('scope', 'none'):<8} "
          + " | ".join(parts))
    return errs[0], errs[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs before the check")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=2, help="requests per run (median)")
    parser.add_argument("--threads", type=int, default=1,
                        help="engine threads (1: on a busy machine two wait on each other)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loadout-selfcal-") as tmp:
        env = {**os.environ, "LOADOUT_HOME": str(Path(tmp) / "home"), "PYTHONPATH": str(ROOT)}
        similar = str(similar_model(Path(tmp)))
        other = str(similar_model(Path(tmp), "Q8_0"))
        demo_runs = []
        for i in range(args.runs):
            demo_runs.append(bench("demo", args, env))
            line(f"demo run {i + 1}", demo_runs[-1])
        demo_runs.append(bench("demo", args, env))
        checks = {"demo, next run": line("demo, next run", demo_runs[-1]),
                  "similar model, first run": line("similar model, first run",
                                                   bench(similar, args, env))}
        line("Q8_0 model (not scored)", bench(other, args, env))
    for key in ("decode_tps", "prefill_tps"):  # how much the same run moves here
        values = sorted(d[key] for d in demo_runs)
        mid = values[len(values) // 2]
        print(f"noise: the demo's {len(values)} runs measured {key[:-4]} {values[0]:.1f} to "
              f"{values[-1]:.1f} t/s ({(values[0] / mid - 1) * 100:+.0f}% / "
              f"{(values[-1] / mid - 1) * 100:+.0f}% around their median)")
    ok = True
    for label, (decode, prefill) in checks.items():
        good = abs(decode) <= GOAL and abs(prefill) <= GOAL
        ok = ok and good
        print(f"{label:<28} decode {decode * 100:+5.1f}%  prefill {prefill * 100:+5.1f}%  "
              f"{'within' if good else 'NOT within'} {GOAL * 100:.0f}%")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
