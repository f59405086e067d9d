"""Speculative decoding on the engine here, predicted vs measured, per mode.

For n-gram (the demo copying code), a draft model (the demo drafting for itself: every
draft right) and MTP (a synthetic glm4moe whose NextN head echoes: every draft right), it
runs ``loadout bench`` with ``--spec off`` and with ``--spec MODE:N`` (one thread, the
same greedy prompt, nothing cached) and prints, beside the measured decode and tokens per
step, two predictions from the planner for this machine with one thread:

- as planned: the task's default acceptance (what a user is shown before running): its
  gain over plain decode and its tokens per step;
- the step's cost in plain tokens (verifying ``k`` drafted tokens and drafting them),
  predicted for the plan's ``k``, beside the measured one (tokens per step over the
  measured gain): the cost model alone, whatever the acceptance.

Run: ``.venv/bin/python bench/spec_prediction.py [--max-tokens N]`` (a few minutes; CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.speculative import PROMPTS  # noqa: E402


def bench(model: str, spec: str, prompt: Path, args: argparse.Namespace,
          env: dict[str, str], draft: str | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "loadout", "bench", model, "--json", "--raw", "--ignore-eos",
           "--threads", "1", "--max-tokens", str(args.max_tokens), "--prompt-file",
           str(prompt), "--spec", spec, "--repeat", str(args.repeat)]
    if draft:
        cmd += ["--draft-model", draft]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def planned(model: str, spec: str, acceptance: float | None, depth: int,
            draft: str | None = None) -> tuple[float, float, float, float]:
    """(decode t/s, tokens per step, plain decode t/s, step cost in plain tokens) the
    planner predicts with one thread, at ``acceptance`` (None: the task's default)."""
    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from engine.models import resolve_local_model
    from planner.plan import plan
    from planner.request import Request, SpecRequest

    inv = detect(measure=False)
    inv = replace(inv, host=replace(inv.host, cores=1))
    pinned = replace(SpecRequest.parse(spec), acceptance=acceptance)
    draft_profile = load_profile(str(resolve_local_model(draft))) if draft else None
    p = plan(inv, load_profile(str(resolve_local_model(model))),
             Request(context=2048, depth=depth, advise=False, spec=pinned,
                     draft_profile=draft_profile, draft_path=draft))
    pr = p.predicted
    return pr.decode_tps, pr.spec.tokens_per_step, 1.0 / pr.token_s, pr.spec.step_cost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    from tests.helpers.gguf_nextn import write_glm4moe_echo

    with tempfile.TemporaryDirectory(prefix="loadout-spec-") as tmp:
        folder = Path(tmp)
        env = {**os.environ, "LOADOUT_HOME": str(folder / "home"), "PYTHONPATH": str(ROOT),
               "LOADOUT_RUN_RECORDS": "off"}   # raw predictions: nothing learnt between runs
        edit = folder / "edit.txt"
        edit.write_text(PROMPTS["edit"], encoding="utf-8")
        echo = str(write_glm4moe_echo(folder / "glm4moe-echo.gguf"))
        cases = (("n-gram, demo, code edit", "demo", "ngram:4", None, edit),
                 ("draft model, demo by itself", "demo", "draft:4", "demo", edit),
                 ("MTP, echoing NextN head", echo, "mtp:3", None, edit))
        print(f"{'':<30}{'measured':^48}| {'predicted':^30}")
        print(f"{'case':<30}{'plain':>8}{'spec':>8}{'gain':>7}{'tok/step':>9}{'accept':>7}"
              f"{'step':>7} | {'gain':>7}{'tok/step':>9}{'step (k)':>12}")
        for label, model, spec, draft, prompt in cases:
            plain = bench(model, "off", prompt, args, env)
            on = bench(model, spec, prompt, args, env, draft)
            s = on["speculation"]
            depth = on["prompt_tokens"] + on["generated_tokens"] // 2
            acc = s.get("acceptance")
            d0, t0, p0, step0 = planned(model, spec, None, depth, draft)
            gain = on["decode_tps"] / plain["decode_tps"]
            tps = s.get("tokens_per_step") or 1.0
            print(f"{label:<30}{plain['decode_tps']:>8.1f}{on['decode_tps']:>8.1f}"
                  f"{gain:>7.2f}{tps:>9.2f}{acc or 0:>7.2f}{tps / gain:>7.2f}"
                  f" | {d0 / p0:>7.2f}{t0:>9.2f}{step0:>8.2f} ({on['launch']['draft_tokens']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
