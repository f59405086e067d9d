"""``loadout plan MODEL``: where every byte goes on this machine (or a rig), and how fast.

Readable text by default (roles, a per-device memory map, spills, speeds, reasons,
warnings and advice); ``--json`` prints exactly one ``loadout.plan/1`` document.
Several MODEL files (quantizations of one model) make the planner choose among them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.inventory import Inventory
    from planner.plan_types import Plan
    from planner.profile import ModelProfile
    from planner.projector import ProjectorProfile
    from planner.request import Request

log = logging.getLogger(__name__)

TASKS = ("chat", "code", "agent", "math", "creative")


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="plan a model on this machine (or a rig file) and "
                                    "predict its speed")
    p.add_argument("model", nargs="+",
                   help="a .gguf path, 'demo' or hf:OWNER/REPO/FILE.gguf; several files "
                        "(quantizations of one model) to let the planner choose")
    p.add_argument("--rig", default=None, help="plan for the hardware in this JSON rig file")
    p.add_argument("--ctx", type=int, default=None, help="context per sequence (tokens)")
    p.add_argument("--parallel", type=int, default=1, help="sequences served at once")
    p.add_argument("--task", choices=TASKS, default="chat")
    p.add_argument("--priority", choices=("speed", "context", "quality"), default="speed")
    p.add_argument("--depth", type=int, default=0,
                   help="tokens already in the context when decoding")
    p.add_argument("--prompt-tokens", type=int, default=1024,
                   help="prompt length the TTFT is predicted for")
    p.add_argument("--ngl", type=int, default=None, help="llama.cpp -ngl (pinned)")
    p.add_argument("--n-cpu-moe", type=int, default=None,
                   help="routed experts of the first N layers stay in RAM (pinned)")
    p.add_argument("--tensor-split", default=None, help="A,B,... share per GPU (pinned)")
    p.add_argument("--kv-type", choices=("f16", "q8_0", "q4_0"), default=None)
    p.add_argument("--flash-attn", choices=("on", "off"), default=None,
                   help="pin flash attention (default: the planner's choice)")
    p.add_argument("--spec", default=None, help="off|ngram|draft|mtp[:N] (pinned)")
    p.add_argument("--draft-model", default=None, help="a draft model .gguf")
    p.add_argument("--roles", default=None, help="main,helper,off,... one per GPU")
    p.add_argument("--gpu-order", default=None,
                   help="GPU indices by preference, e.g. 1,0: the first is the Main")
    p.add_argument("--workers", default=None, metavar="HOST:PORT,...",
                   help="RPC workers ('loadout worker') whose devices the plan may use")
    p.add_argument("--link-gbps", type=float, default=None,
                   help="network bandwidth to the workers in GB/s (default: measured)")
    p.add_argument("--rope-scaling", action="store_true",
                   help="allow a context beyond the training context")
    p.add_argument("--mmproj", default=None, metavar="FILE",
                   help="the model's vision projector (default: the one beside the model)")
    p.add_argument("--no-mmproj", action="store_true", help="plan without a projector")
    p.add_argument("--no-mmproj-offload", action="store_true",
                   help="keep the projector in RAM")
    p.add_argument("--no-advice", action="store_true", help="skip the what-if advice")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _profile(spec: str) -> ModelProfile:
    if spec.startswith("hf:"):
        from engine.hub.remote import load_remote_profile

        return load_remote_profile(spec)
    from engine.gguf_file import load_profile
    from engine.models import resolve_local_model
    from planner.errors import GGUFError, UnsupportedModelError

    try:
        return load_profile(resolve_local_model(spec))
    except (GGUFError, UnsupportedModelError) as exc:  # say which file, when several
        if spec in str(exc):
            raise
        raise type(exc)(f"{spec}: {exc}") from exc


def _inventory(rig: str | None, workers: str | None = None,
               link_gbps: float | None = None) -> Inventory:
    from engine.rig_file import inventory_for

    inventory = inventory_for(rig)
    endpoints = worker_list(workers)
    if endpoints:
        from engine.hardware.workers import add_workers

        inventory = add_workers(inventory, endpoints, link_gbps=link_gbps)
        for note in inventory.notes:
            if note.startswith("worker_unreachable:"):
                log.warning("worker left out of the plan: %s", note.split(":", 1)[1])
    return inventory


def worker_list(text: str | None) -> list[str]:
    """``HOST:PORT,HOST:PORT`` as a list (empty entries dropped)."""
    return [w.strip() for w in (text or "").split(",") if w.strip()]


def build_request(args: argparse.Namespace) -> Request:
    """The planner Request for these arguments (draft model profile loaded)."""
    from planner.request import Priority, Request, Role, SpecRequest, TaskKind

    split = None
    if args.tensor_split:
        split = tuple(float(x) for x in args.tensor_split.split(","))
    roles = None
    if args.roles:
        roles = tuple(Role(r.strip().lower()) for r in args.roles.split(","))
    draft = _profile(args.draft_model) if args.draft_model else None
    return Request(
        context=args.ctx, parallel=args.parallel, task=TaskKind(args.task),
        priority=Priority(args.priority), depth=args.depth, prompt_tokens=args.prompt_tokens,
        n_gpu_layers=args.ngl, n_cpu_moe=args.n_cpu_moe, tensor_split=split,
        kv_type=args.kv_type,
        flash_attn=None if args.flash_attn is None else args.flash_attn == "on",
        spec=SpecRequest.parse(args.spec) if args.spec else None,
        draft_profile=draft, draft_path=args.draft_model, roles=roles,
        gpu_order=tuple(int(x) for x in args.gpu_order.split(",")) if args.gpu_order
        else None, rope_scaling=args.rope_scaling, advise=not args.no_advice)


def _projector(args: argparse.Namespace) -> ProjectorProfile | None:
    """The projector profile to plan with: --mmproj, else the one paired with the (first,
    local) model; None with --no-mmproj or when there is none."""
    if getattr(args, "no_mmproj", False):
        return None
    from pathlib import Path

    from engine.gguf_file import load_projector
    from engine.models import paired_projector, resolve_local_model

    path = getattr(args, "mmproj", None)
    if path is None:
        model = args.model[0]
        if model.startswith("hf:") or model == "demo":
            return None
        path = paired_projector(resolve_local_model(model))
    return load_projector(Path(path)) if path is not None else None


def run(args: argparse.Namespace) -> int:
    from planner.plan import plan
    from planner.quant import choose

    # The model files and the request first: a file that is not a model, or a bad
    # option, is refused at once, before detection looks at (or measures) the machine.
    profiles = [_profile(m) for m in args.model]
    projector = _projector(args)
    try:
        request = build_request(args)
        if not args.rig:  # this machine: its measured runs correct the prediction
            from dataclasses import replace

            from engine import run_records

            request = replace(request, machine_runs=run_records.samples())
    except ValueError as exc:
        print(f"loadout plan: error: {exc}", file=sys.stderr)
        return 2
    inventory = _inventory(args.rig, getattr(args, "workers", None),
                           getattr(args, "link_gbps", None))
    if projector is not None:
        from planner.plan import plan_with_projector

        offload = not getattr(args, "no_mmproj_offload", False)
        plans = [plan_with_projector(inventory, p, request, projector, offload)
                 for p in profiles]
    else:
        plans = [plan(inventory, p, request) for p in profiles]
    chosen = 0
    if len(plans) > 1:
        from planner.speed import CONSTANTS

        pick = choose([(p, pl.fits, pl.streams_from_disk, pl.predicted.decode_tps)
                       for p, pl in zip(profiles, plans, strict=True)],
                      CONSTANTS.usable_decode_tps)
        chosen = pick.index
    result = plans[chosen]
    if args.json:
        doc = result.to_json()
        doc["model_path"] = args.model[chosen]
        if len(plans) > 1:
            doc["quant_choice"] = {"chosen": args.model[chosen], "candidates": [
                {"model": m, "quant": pl.quant, "fits": pl.fits,
                 "decode_tps": round(pl.predicted.decode_tps, 2)}
                for m, pl in zip(args.model, plans, strict=True)]}
        print(json.dumps(doc, indent=2))
    else:
        print(render(result, args.model[chosen]))
    return 0


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.2f} GiB"


def _ranges(rs: tuple[tuple[int, int], ...]) -> str:
    return ",".join(f"{a}-{b - 1}" if b - a > 1 else str(a) for a, b in rs) or "-"


# What a spill moved, in words (its reason is among the plan's sentences).
_SPILLED = {"experts_to_ram": "routed experts of layers", "layers_to_ram": "layers",
            "weights_on_disk": "weights"}


def render(plan: Plan, model: str) -> str:
    """The readable plan: roles, memory map, spills, speeds, then the reasons, warnings,
    decisions and advice as the sentences the app's Plan page shows (its language)."""
    from loadout import words

    with words.user_language():
        return _render(plan, model)


def _render(plan: Plan, model: str) -> str:
    from app.formatting import fmt_seconds, fmt_tokens, fmt_tps
    from app.texts import fit_reason, role_text
    from loadout import words

    p = plan
    lines = [f"Plan for {model} ({p.quant}): "
             + ("fits" if p.fits else f"DOES NOT FIT. {fit_reason(p)}")]
    for r in p.roles:
        reason = words.role_line(r.reason.value if r.reason else None)
        lines.append(f"  GPU {r.gpu} {r.name}: {role_text(r.role.value)}"
                     + (f". {reason}" if reason else ""))
    lines.append("Memory map:")
    lines.append(f"  {'device':<8}{'weights':>12}{'KV':>12}{'compute':>12}{'other':>12}"
                 f"{'reserve':>12}{'capacity':>12}  layers / experts")
    for d in p.devices:
        lines.append(f"  {d.id:<8}{_gib(d.weights_bytes):>12}{_gib(d.kv_bytes):>12}"
                     f"{_gib(d.compute_bytes):>12}{_gib(d.other_bytes):>12}"
                     f"{_gib(d.reserve_bytes):>12}{_gib(d.capacity_bytes):>12}  "
                     f"{_ranges(d.layers)} / {_ranges(d.expert_layers)}")
    if p.projector is not None:
        v = p.projector
        lines.append(f"  vision projector on {v.device}: {v.weights_bytes / 2**20:.1f} MiB "
                     f"weights + {v.compute_bytes / 2**20:.1f} MiB compute; one image = "
                     f"{v.image_tokens} tokens, encoded in {fmt_seconds(v.encode_s)}")
    for s in p.spills:
        what = _SPILLED.get(s.kind.value, "weights")
        where = f" {_ranges(s.layers)}" if s.layers else ""
        lines.append(f"  spilled: {what}{where}, {_gib(s.bytes)} on {s.to} (costs "
                     f"{fmt_seconds(s.cost_ms / 1000)} per token)")
    spec = p.speculative
    lines.append(f"Context {fmt_tokens(p.context)} tokens x {p.parallel} slot(s), KV cache "
                 f"{p.kv_type}, "
                 f"flash attention {'on' if p.flash_attn else 'off'}, speculation "
                 f"{spec.mode.value}" + (f" (draft {spec.draft_tokens}, "
                                         f"{spec.tokens_per_step:.2f} tokens/step)"
                                         if spec.draft_tokens else ""))
    pr = p.predicted
    if p.speed_nominal:
        soft = ", ".join(f"GPU {dict(w.numbers).get('gpu')}" for w in p.warnings
                         if w.code.value == "software_device_speed")
        lines.append(f"Predicted: not predicted ({soft} computes on the CPU, a software "
                     f"device); nominal figures: decode {fmt_tps(pr.decode_tps)} t/s, "
                     f"prefill {fmt_tps(pr.prefill_tps)} t/s, TTFT {fmt_seconds(pr.ttft_s)}")
    else:
        lines.append(f"Predicted: decode {fmt_tps(pr.decode_tps)} t/s, prefill "
                     f"{fmt_tps(pr.prefill_tps)} t/s, TTFT {fmt_seconds(pr.ttft_s)} for "
                     f"{pr.prompt_tokens} prompt tokens (depth {pr.depth})")
    if p.projector is not None:
        from planner.projector import image_ttft_s

        with_image = image_ttft_s(pr.ttft_s, pr.prefill_tps, p.projector)
        lines.append(f"  with one image: TTFT {fmt_seconds(with_image)}")
    if p.calibration is not None and p.calibration.runs and p.raw_predicted is not None:
        raw = p.raw_predicted
        lines.append(f"  calibrated on {p.calibration.runs} runs on this machine "
                     f"({p.calibration.scope}); raw prediction: decode "
                     f"{fmt_tps(raw.decode_tps)} t/s, prefill {fmt_tps(raw.prefill_tps)} t/s")
    if p.bottleneck:
        lines.append(words.bottleneck_line(p.bottleneck))
    said = words.messages(p)
    if said:
        lines.append("Why:")
        lines.extend(f"  {m}" for m in said)
    shown = words.shown_advice(p)
    if shown:
        lines.append("Advice:")
        lines.extend(f"  - {words.advice_line(a)}" for a in shown)
    e = p.engine.to_json()  # as the plan document says it
    lines.append(f"Engine: n_gpu_layers={e['n_gpu_layers']} tensor_split={e['tensor_split']} "
                 f"main_gpu={e['main_gpu']} n_ctx={e['n_ctx']} type_k/v={p.kv_type} "
                 f"overrides={len(e['tensor_overrides'])}")
    if e.get("rpc_workers"):
        lines.append(f"  devices={e['devices']} rpc_workers={e['rpc_workers']}")
    return "\n".join(lines)
