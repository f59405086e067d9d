"""What a decoded token costs on the CPU engine, one model dimension at a time.

Synthetic llamas (random Q4_1 weights) that differ from a base model (20 blocks 640 wide,
32k vocabulary) in one dimension
each: more blocks, a larger vocabulary (output layer), narrower blocks; a model of the
demo's shape and types; the demo itself; and the base model decoding at a deeper cache.
All stay loaded in this process (one engine thread each) and every round decodes once
with each, in turn, from a prompt of about the same number of tokens (the prompt is cut
by tokens, so models with other tokenizers decode at the same depth). A round sees nearly
the same load on this shared machine, so the ratio of a model's time per token to the
base model's in the same round keeps little of the machine's noise; the median over the
rounds is the figure.

For each model it prints the measured time-per-token ratio, in wall seconds and in the
engine thread's CPU seconds (with one engine thread, its own work without the waits for a
core that the machine's other load adds), beside the one the planner predicts (its raw
prediction, re-priced at the depth measured), and the error against the CPU ratio. A
dimension the planner does not price shows up as a ratio it misses.

Run: ``.venv/bin/python bench/cpu_shape_cost.py`` (about three minutes; CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROSE = ("The history of the lighthouse begins with fires lit on hilltops to guide ships "
         "home. Over centuries these fires became towers of stone, and the towers gained "
         "lenses, clockwork, and finally electric lamps. ") * 40


def shapes() -> dict[str, dict[str, Any]]:
    """The synthetic models: the base, and one dimension changed at a time."""
    base = {"n_layers": 20, "n_embd": 640, "n_head": 10, "n_head_kv": 5, "head_dim": 64,
            "n_ff": 1792, "n_vocab": 32000, "weight_type": "Q4_1"}
    narrow = {"n_embd": 576, "n_head": 9, "n_head_kv": 3, "n_ff": 1536}
    return {"base": base,
            "30 blocks": {**base, "n_layers": 30},
            "49k vocab": {**base, "n_vocab": 49152},
            "576 wide": {**base, **narrow},
            "demo-shaped": {**base, **narrow, "n_layers": 30, "n_vocab": 49152}}


def write_models(folder: Path) -> dict[str, Path]:
    """Write the synthetic models (the demo-shaped one with the demo's tied Q8_0
    embedding); the demo's own file last."""
    from engine.demo import demo_model_path
    from tests.helpers.gguf_factory import Shape, _common_kv, llama_tensors, write_gguf

    out = {}
    for name, kw in shapes().items():
        s = Shape(**kw)
        specs = llama_tensors(s)
        if name == "demo-shaped":
            specs = [(n, shape, "Q8_0" if n == "token_embd.weight" else wt)
                     for n, shape, wt in specs if n != "output.weight"]
        path = folder / (name.replace(" ", "-") + ".gguf")
        out[name] = write_gguf(path, "llama", specs, _common_kv("llama", s), s.n_vocab)
    out["demo"] = Path(demo_model_path())
    return out


def load(path: Path, threads: int, depth: int) -> tuple[Any, dict[str, Any]]:
    """The engine of ``path`` as ``loadout bench`` loads it, and its plan's run features."""
    from engine.planned_launch import plan_launch
    from engine.runtime import Engine

    launch = plan_launch(str(path), context=4096, prompt_tokens=depth, n_threads=threads,
                         depth=depth)
    features: dict[str, Any] = json.loads(launch.spec.run_features)
    return Engine(launch.spec), features


def prompt_of(engine: Any, tokens: int) -> str:
    """A raw prompt of about ``tokens`` tokens of this model's tokenizer."""
    ids = engine.tokenize(PROSE, add_special=False)[:tokens]
    return str(engine.detokenize(ids))


def mark_cpu_time() -> None:
    """Have every request handle note the CPU seconds of the thread that delivers each
    chunk, with the tokens delivered so far. The engine thread delivers them and, with one
    engine thread, llama.cpp computes in it: its CPU clock counts the engine's own work,
    not the waits for a core that the machine's load adds. Measurement only: the handle
    behaves as before."""
    from engine.requests import RequestHandle

    keep = RequestHandle._store  # every delivery (push, push_all) keeps its chunk here
    if getattr(keep, "marks_cpu", False):
        return

    def store(self: Any, chunk: Any) -> Any:
        marks = self.__dict__.setdefault("cpu_marks", [])
        tokens = (marks[-1][0] if marks else 0) + len(chunk.token_ids)
        marks.append((tokens, time.thread_time()))
        return keep(self, chunk)

    store.marks_cpu = True  # type: ignore[attr-defined]
    RequestHandle._store = store  # type: ignore[method-assign]


def cpu_per_token(handle: Any) -> float:
    """The engine thread's CPU seconds per decoded token of a finished request, from its
    first delivered token to its last (:func:`mark_cpu_time` must be on)."""
    marks = [m for m in handle.__dict__.get("cpu_marks", []) if m[0] > 0]
    if len(marks) < 2 or marks[-1][0] <= marks[0][0]:
        raise RuntimeError("too few tokens to time")
    return (marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0])


def decode(engine: Any, prompt: str, max_tokens: int) -> tuple[float, float, int]:
    """Wall and CPU seconds per decoded token (see :func:`mark_cpu_time`), and the depth
    it decoded at."""
    from engine.requests import GenerationRequest, SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, loop_guard="off",
                            ignore_eos=True, cache_prompt=False)
    handle = engine.submit(GenerationRequest(prompt=prompt, params=params))
    final = handle.result()
    if final.error:
        raise RuntimeError(final.error)
    m = final.metrics
    return 1.0 / m.decode_tps, cpu_per_token(handle), m.prompt_tokens + m.generated_tokens // 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    parser.add_argument("--deep", type=int, default=600,
                        help="prompt tokens of the base model's deep case")
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args(argv)
    os.environ.setdefault("LOADOUT_RUN_RECORDS", "off")
    mark_cpu_time()

    with tempfile.TemporaryDirectory(prefix="loadout-shape-") as tmp:
        os.environ["LOADOUT_HOME"] = str(Path(tmp) / "home")
        paths = write_models(Path(tmp))
        engines = {name: load(path, args.threads, args.prompt) for name, path in paths.items()}
        cases = [(name, name, args.prompt) for name in paths]
        cases.insert(1, (f"base at {args.deep}", "base", args.deep))
        prompts = {case: prompt_of(engines[model][0], n) for case, model, n in cases}
        for engine, _ in engines.values():  # the first touch of each buffer, not measured
            decode(engine, prompts[cases[0][0]][:40], 4)
        runs: dict[str, list[tuple[float, float, int]]] = {c: [] for c, _, _ in cases}
        try:
            for r in range(args.rounds):
                for case, model, _ in cases:
                    runs[case].append(decode(engines[model][0], prompts[case],
                                             args.max_tokens))
                print(f"round {r + 1} (t/s wall / CPU): " + ", ".join(
                    f"{c} {1 / v[-1][0]:.1f} / {1 / v[-1][1]:.1f}" for c, v in runs.items()),
                    flush=True)
        finally:
            for engine, _ in engines.values():
                engine.close()
    report(runs, cases, {name: f for name, (_, f) in engines.items()}, args)
    return 0


def report(runs: dict[str, list[tuple[float, float, int]]], cases: list[tuple[str, str, int]],
           features: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    """The table: per case, measured and predicted time per token over the base's."""
    from planner.machine_fit import predicted_decode_at

    base = runs["base"]
    base_pred = 1.0 / predicted_decode_at(features["base"], statistics.median(
        d for _, _, d in base))
    print(f"time per token over the base model's (median over {args.rounds} interleaved "
          f"rounds; {args.threads} thread(s), {args.max_tokens} tokens); wall: as timed, "
          f"CPU: the engine's own CPU seconds:")
    print(f"  {'model':<14} {'depth':>5} {'CPU t/s':>7} {'wall':>6} {'range':>11} "
          f"{'CPU':>6} {'range':>11} {'predicted':>9} {'vs CPU':>7}")
    for case, model, _ in cases:
        wall = [v[0] / b[0] for v, b in zip(runs[case], base, strict=True)]
        cpu = [v[1] / b[1] for v, b in zip(runs[case], base, strict=True)]
        depth = int(statistics.median(d for _, _, d in runs[case]))
        pred = 1.0 / predicted_decode_at(features[model], depth) / base_pred
        tps = 1.0 / statistics.median(v[1] for v in runs[case])
        print(f"  {case:<14} {depth:>5} {tps:7.1f} {statistics.median(wall):6.3f} "
              f"{min(wall):4.2f}..{max(wall):5.2f} {statistics.median(cpu):6.3f} "
              f"{min(cpu):4.2f}..{max(cpu):5.2f} {pred:9.3f} "
              f"{(pred / statistics.median(cpu) - 1) * 100:+6.1f}%")


if __name__ == "__main__":
    sys.exit(main())
