"""``loadout chat MODEL``: a terminal chat, streaming, with the speed line after each answer."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any


def add_launch_arguments(p: argparse.ArgumentParser, ctx_default: int = 4096) -> None:
    """MODEL and the llama.cpp-named overrides shared by ``chat`` and ``bench``."""
    p.add_argument("model", nargs="?", default="demo",
                   help="a .gguf path, 'demo' (default) or hf:OWNER/REPO/FILE.gguf")
    p.add_argument("--ctx", type=int, default=ctx_default, help="context (tokens)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads (default: the physical cores)")
    p.add_argument("--ngl", type=int, default=None, help="layers on the GPU (llama.cpp -ngl)")
    p.add_argument("--n-cpu-moe", type=int, default=None,
                   help="expert tensors of the first N layers stay in RAM")
    p.add_argument("--tensor-split", default=None, metavar="A,B,..",
                   help="share of the layers per GPU")
    p.add_argument("--kv-type", default=None, help="KV cache type: f16, q8_0 or q4_0")
    p.add_argument("--workers", default=None, metavar="HOST:PORT,...",
                   help="RPC workers ('loadout worker') whose devices the plan may use")
    p.add_argument("--spec", default=None, metavar="MODE[:N]",
                   help="speculation: off|ngram|draft|mtp|dflash, optionally :draft length")
    p.add_argument("--draft-model", default=None, help="the draft model (or DFlash "
                   "drafter) .gguf for --spec draft / dflash")
    p.add_argument("--no-plan", action="store_true",
                   help="skip the planner and load with the default launch parameters")
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the warm-up decode after the load (the first request then "
                        "pays for reading the weights)")


def spec_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The planner's pins for ``--spec`` and ``--draft-model`` (empty when not given).

    Raises:
        ValueError: ``--spec`` is not ``MODE[:N]`` with a known mode.
    """
    from planner.request import SpecRequest

    out: dict[str, Any] = {}
    if getattr(args, "spec", None):
        out["spec"] = SpecRequest.parse(args.spec)
    if getattr(args, "draft_model", None):
        from engine.gguf_file import load_profile
        from engine.models import resolve_local_model

        path = str(resolve_local_model(args.draft_model))
        out["draft_profile"], out["draft_path"] = load_profile(path), path
    return out


def planned_launch(args: argparse.Namespace, prompt_tokens: int = 512,
                   attempt: int = 0, depth: int = 0,
                   failed_gpu_plans: tuple[Any, ...] = ()) -> Any:
    """Resolve MODEL and plan it (or the default launch); returns a ``PlannedLaunch``.

    ``attempt`` > 0 re-plans with a larger memory reserve (after an out-of-memory load);
    ``failed_gpu_plans``: plans that ran out of memory on a GPU, each shrinking it.
    """
    from engine.launch import PlannedLaunch, plan_launch, unplanned_spec
    from engine.models import resolve_local_model
    from loadout.commands.plan import worker_list

    path = str(resolve_local_model(args.model))
    overrides: dict[str, Any] = {
        "n_gpu_layers": args.ngl, "n_cpu_moe": args.n_cpu_moe, "kv_type": args.kv_type,
        "tensor_split": tuple(float(x) for x in args.tensor_split.split(","))
        if args.tensor_split else None, **spec_overrides(args)}
    if args.no_plan:
        spec = unplanned_spec(path, args.ctx, 1, args.threads,
                              {k: v for k, v in overrides.items() if v is not None})
        launch = PlannedLaunch(spec, None, note="not planned: --no-plan")
    else:
        launch = plan_launch(path, context=args.ctx, parallel=1, prompt_tokens=prompt_tokens,
                             n_threads=args.threads, overrides=overrides, attempt=attempt,
                             depth=depth, workers=worker_list(getattr(args, "workers", None)),
                             failed_gpu_plans=failed_gpu_plans)
    if getattr(args, "no_warmup", False):
        launch = replace(launch, spec=launch.spec.with_changes(warm_up=False))
    return launch


def plan_and_load(args: argparse.Namespace, prompt_tokens: int = 512,
                  attempts: int = 3, depth: int = 0) -> tuple[Any, Any]:
    """Plan, load, and on an out-of-memory load re-plan (bounded): with less on the GPU
    that ran out, or with a larger host reserve when host memory did.

    Returns the ``(PlannedLaunch, Engine)`` that loaded.
    """
    from engine.launch import ReplanLadder, load_with_replan

    launches: list[Any] = []
    ladder = ReplanLadder()

    def make_spec(attempt: int) -> Any:
        launch = planned_launch(args, prompt_tokens, ladder.host_attempt, depth,
                                failed_gpu_plans=tuple(ladder.failed_gpu_plans))
        if launch.note and not launches:
            print(launch.note, file=sys.stderr)
        launches.append(launch)
        ladder.last_plan = launch.plan
        return launch.spec

    def failed(exc: Exception) -> None:
        print(f"{ladder.failed(exc)} (attempt {len(launches) + 1})", file=sys.stderr,
              flush=True)

    engine = load_with_replan(make_spec, lambda spec: load_engine(spec),
                              max_attempts=1 if args.no_plan else attempts,
                              on_failure=failed)
    return launches[-1], engine


def load_engine(spec: Any) -> Any:
    """Load the engine for a LaunchSpec, with a load-progress line on stderr."""
    from pathlib import Path

    from engine.runtime import Engine

    name = Path(spec.model_path).name
    shown = [-1]

    def progress(fraction: float) -> bool:
        percent = int(fraction * 100)
        if percent // 10 != shown[0] // 10 and sys.stderr.isatty():
            print(f"\rloading {name} ... {percent:3d}%", end="", file=sys.stderr, flush=True)
        shown[0] = percent
        return True

    engine = Engine(spec, progress=progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(f"loaded {name} in {engine.load_seconds:.2f} s "
          f"({engine.n_ctx_per_seq} tokens of context)", file=sys.stderr, flush=True)
    return engine


def register(sub: Any) -> None:
    p = sub.add_parser("chat", help="terminal chat with a model, streaming, with speeds")
    add_launch_arguments(p)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--system", default=None, help="system prompt")
    p.add_argument("--loop-guard", choices=("stop", "retry", "off"), default="retry",
                   help="what to do when the answer degenerates into a loop")
    p.add_argument("-p", "--prompt", default=None,
                   help="ask this one question, print the answer and exit")


def run(args: argparse.Namespace) -> int:
    from engine.requests import GenerationRequest, SamplingParams

    _launch, engine = plan_and_load(args)
    params = SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens,
                            loop_guard=args.loop_guard)
    messages: list[dict[str, str]] = []
    if args.system:
        messages.append({"role": "system", "content": args.system})
    questions = [args.prompt] if args.prompt else None
    if questions is None:
        print("Type a message and press Enter; an empty line or Ctrl-D quits.", file=sys.stderr)
    try:
        while True:
            text = _next_question(questions)
            if text is None:
                return 0
            messages.append({"role": "user", "content": text})
            handle = engine.submit(GenerationRequest(messages=tuple(messages), params=params))
            answer = []
            try:
                for chunk in handle:
                    sys.stdout.write(chunk.text)
                    sys.stdout.flush()
                    answer.append(chunk.text)
            except KeyboardInterrupt:
                handle.cancel()
            final = handle.result()
            sys.stdout.write("\n")
            messages.append({"role": "assistant", "content": "".join(answer)})
            _report(final)
    finally:
        engine.close()


def _next_question(questions: list[str] | None) -> str | None:
    if questions is not None:
        return questions.pop(0) if questions else None
    try:
        text = input("you> ")
    except EOFError:
        print(file=sys.stderr)
        return None
    return text if text.strip() else None


def _report(final: Any) -> None:
    notes = []
    if final.loop_guard == "stopped":
        notes.append("stopped: the answer was looping")
    elif final.loop_guard == "retried":
        notes.append("the answer started looping; continued with stronger penalties")
    if final.finish_reason == "length":
        notes.append("cut at --max-tokens")
    if final.error:
        notes.append(f"error: {final.error}")
    line = final.metrics.speed_line()
    print(line + ("" if not notes else " | " + "; ".join(notes)), file=sys.stderr, flush=True)
