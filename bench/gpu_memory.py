"""GPU memory and placement, executed: the plan's per-device bytes and layer placement
against what llama.cpp really allocates on a GPU backend.

Run from the repository root (``bench/memory_accuracy.py --gpu`` runs the same)::

    .venv/bin/python bench/gpu_memory.py                 # every case, the error table
    .venv/bin/python bench/gpu_memory.py --json --case demo/full

It needs a GPU engine build (``python3 dev.py setup --engine vulkan``); on a machine
without a GPU, Mesa's lavapipe is a software Vulkan device that llama.cpp treats as a GPU
(``GGML_VK_VISIBLE_DEVICES=0`` names it, as ggml skips CPU-type Vulkan devices). The
engine build is chosen with ``LOADOUT_ENGINE`` (default ``vulkan``) before ``llama_cpp``
is imported, so this runs in its own process.

For the demo model and synthetic GGUFs (dense llama, qwen3moe MoE, gemma3 sliding-window,
qwen35 hybrid recurrent), each case plans the model on this machine's real inventory
(optionally with the GPU's free memory capped, as a rig would say), loads it with the
plan's engine parameters (tensor overrides included) and reads llama.cpp's log: the
buffer sizes per buffer (``Vulkan0`` model/KV/compute: the device; ``CPU_Mapped``,
``Vulkan_Host``, ``CPU``: host memory), which block each layer was assigned to, which
tensors were overridden to the CPU and where each layer's KV cache lives. The plan's
per-device bytes (weights, KV, compute, output; the fixed per-GPU runtime overhead is not
a buffer and is left out) are compared with those totals. Goal as on the CPU: every
device's total within 3%, never under by more than 2%.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MIB = 1024 * 1024
ROUNDING = 0.0051 * MIB  # llama.cpp prints MiB with two decimals
GOAL_TOTAL, GOAL_UNDER = 3.0, 2.0
PARTS = ("model", "kv", "compute", "output")
_BUFFER = re.compile(r"(\S+)\s+(model|KV|RS|compute|output) buffer size\s*=\s*([\d.]+) MiB")
_PART = {"model": "model", "KV": "kv", "RS": "kv", "compute": "compute", "output": "output"}
_LAYER = re.compile(r"layer\s+(\d+) assigned to device (\S+?),")
_OVERRIDE = re.compile(r"tensor (blk\.(\d+)\.\S+) \(.*\) buffer type overridden to (\S+)")
_KV_DEV = re.compile(r"llama_(?:kv_cache|memory_recurrent)[:,] layer\s+(\d+): dev = (\S+)")


@dataclass(frozen=True)
class Case:
    """One load: a model, planner pins and optionally a capped GPU."""

    name: str
    model: str
    pins: dict[str, Any] = field(default_factory=dict)
    gpu_free_bytes: int | None = None   # what the rig says the GPU has free
    context: int = 4096


@dataclass(frozen=True)
class Row:
    """One device's predicted and measured bytes in one case."""

    case: str
    device: str
    part: str
    predicted: int
    measured: int

    @property
    def error_pct(self) -> float:
        """Signed error in percent (positive: over-predicted), printing rounding allowed."""
        diff = self.predicted - self.measured
        slack = ROUNDING * (4 if self.part == "total" else 1)
        if abs(diff) <= slack:
            return 0.0
        diff -= slack if diff > 0 else -slack
        return 100.0 * diff / max(self.measured, 1)


@dataclass
class Measured:
    """What llama.cpp did: bytes per buffer and device, and where each part went."""

    buffers: dict[str, dict[str, int]] = field(default_factory=dict)  # buffer -> part -> B
    layers: dict[int, str] = field(default_factory=dict)              # block -> device
    overridden: dict[str, str] = field(default_factory=dict)          # tensor -> buffer
    kv_layers: dict[int, str] = field(default_factory=dict)           # block -> device


def parse_log(lines: Sequence[str]) -> Measured:
    """Buffer sizes and placement decisions from llama.cpp's log lines."""
    out = Measured()
    for line in lines:
        if m := _BUFFER.search(line):
            parts = out.buffers.setdefault(m.group(1), {})
            part = _PART[m.group(2)]
            parts[part] = parts.get(part, 0) + round(float(m.group(3)) * MIB)
        elif m := _LAYER.search(line):
            out.layers[int(m.group(1))] = m.group(2)
        elif m := _OVERRIDE.search(line):
            out.overridden[m.group(1)] = m.group(3)
        elif m := _KV_DEV.search(line):
            out.kv_layers[int(m.group(1))] = m.group(2)
    return out


def plan_device(buffer: str, names: dict[str, str]) -> str:
    """The plan's device id of a llama.cpp buffer name (``Vulkan0`` -> ``gpu0``; host
    buffers ``CPU``, ``CPU_Mapped``, ``Vulkan_Host``, ``CUDA_Host`` -> ``host``)."""
    if buffer.upper().startswith("CPU") or buffer.endswith("_Host"):
        return "host"
    for engine_name, device in sorted(names.items(), key=lambda kv: -len(kv[0])):
        if buffer.startswith(engine_name):
            return device
    return buffer


def per_device(measured: Measured, names: dict[str, str]) -> dict[str, dict[str, int]]:
    """Measured bytes by plan device and part."""
    out: dict[str, dict[str, int]] = {}
    for buffer, parts in measured.buffers.items():
        dev = out.setdefault(plan_device(buffer, names), {})
        for part, nbytes in parts.items():
            dev[part] = dev.get(part, 0) + nbytes
    return out


def _on_device(name: str, measured: Measured, names: dict[str, str], n_blocks: int) -> bool:
    """Whether llama.cpp put the file tensor ``name`` in a device buffer (its block's
    device, or the output layer's for ``output*``; an override wins)."""
    if name in measured.overridden:
        return plan_device(measured.overridden[name], names) != "host"
    if m := re.match(r"blk\.(\d+)\.", name):
        layer = int(m.group(1))
    elif name.startswith("output"):
        layer = n_blocks
    else:
        return False  # token embeddings and the rest: the input layer, always the CPU
    device = measured.layers.get(layer)
    return device is not None and plan_device(device, names) != "host"


def mapped_not_held(path: Path, measured: Measured, names: dict[str, str]) -> int:
    """Bytes of device tensors inside the host's mapped span of the file.

    With mmap, llama.cpp's host model buffer (``CPU_Mapped``) is the file's span from the
    first host tensor to the end of the last one, so it covers any device tensor stored
    between them (GGUF files sort tensors by name: ``blk.1*`` lies between ``blk.0`` and
    ``blk.2``). Those pages are mapped but are not memory the load needs: they are read
    once while the device's copy is uploaded, stay clean file pages (Loadout maps without
    mlock), and the kernel drops them under pressure without failing anything. What RAM
    must hold is the host tensors, which is what the plan prices.
    """
    from gguf import GGUFReader

    blocks = [k for k in measured.layers]
    n_blocks = max(blocks) if blocks else 0
    tensors = [(int(t.data_offset), int(t.n_bytes), _on_device(t.name, measured, names,
                                                                n_blocks))
               for t in GGUFReader(path).tensors]
    host = [(o, n) for o, n, dev in tensors if not dev]
    if not host or len(host) == len(tensors):
        return 0
    first, last = min(o for o, _ in host), max(o + n for o, n in host)
    return sum(n for o, n, dev in tensors if dev and o >= first and o + n <= last)


def engine_names(inventory: Any, plan_engine: dict[str, Any]) -> dict[str, str]:
    """llama.cpp's device names of the plan's devices (``Vulkan0`` -> ``gpu0``), as the
    dry run maps them."""
    from engine.dry_run import engine_names as dry_run_names

    return dry_run_names(inventory, plan_engine)


def predicted_bytes(plan: Any) -> dict[str, dict[str, int]]:
    """The plan's bytes per device and part; a GPU's fixed runtime overhead (not a
    buffer llama.cpp reports) left out."""
    from planner.memory import GPU_OVERHEAD_BYTES

    out: dict[str, dict[str, int]] = {}
    for d in plan.devices:
        if d.kind == "disk":
            continue
        other = d.other_bytes
        if d.kind == "gpu" and d.used_bytes:
            other = max(0, other - GPU_OVERHEAD_BYTES)
        out[d.id] = {"model": d.weights_bytes, "kv": d.kv_bytes, "compute": d.compute_bytes,
                     "output": other}
    return out


def rows_of(case: str, predicted: dict[str, dict[str, int]],
            measured: dict[str, dict[str, int]]) -> list[Row]:
    """Predicted vs measured per device (every part and the total)."""
    rows: list[Row] = []
    for dev in sorted(set(predicted) | set(measured), key=lambda d: (d == "host", d)):
        p, m = predicted.get(dev, {}), measured.get(dev, {})
        if not any(p.values()) and not any(m.values()):
            continue  # a device the plan leaves off and llama.cpp does not touch
        for part in (*PARTS, "total"):
            pv = sum(p.values()) if part == "total" else p.get(part, 0)
            mv = sum(m.values()) if part == "total" else m.get(part, 0)
            rows.append(Row(case, dev, part, pv, mv))
    return rows


def misses(rows: Sequence[Row]) -> list[str]:
    """The totals that miss the goal (empty when all are met)."""
    return [f"{r.case} {r.device} total {r.error_pct:+.2f}%" for r in rows
            if r.part == "total" and (abs(r.error_pct) > GOAL_TOTAL or r.error_pct < -GOAL_UNDER)]


def placement_problems(plan: Any, measured: Measured, names: dict[str, str]) -> list[str]:
    """Where llama.cpp put a layer, its experts or its KV elsewhere than the plan says."""
    problems: list[str] = []
    planned: dict[int, str] = {}
    experts: dict[int, str] = {}
    for d in plan.devices:
        for first, last in d.layers:
            planned.update(dict.fromkeys(range(first, last), d.id))
        for first, last in d.expert_layers:
            experts.update(dict.fromkeys(range(first, last), d.id))
    for layer, device in sorted(measured.layers.items()):
        got = plan_device(device, names)
        if layer in planned and planned[layer] != got:
            problems.append(f"layer {layer}: planned on {planned[layer]}, llama.cpp put it "
                            f"on {device}")
    for layer, device in sorted(measured.kv_layers.items()):
        got = plan_device(device, names)
        if layer in planned and plan.engine.offload_kqv and planned[layer] != got:
            problems.append(f"KV of layer {layer}: planned on {planned[layer]}, llama.cpp put "
                            f"it on {device}")
    on_host = {int(m.group(1)) for t, buf in measured.overridden.items()
               if (m := re.match(r"blk\.(\d+)\.ffn_\w*exps", t)) and plan_device(buf, names)
               == "host"}
    for layer, device in sorted(experts.items()):
        if device == "host" and planned.get(layer) != "host" and layer not in on_host:
            problems.append(f"experts of layer {layer}: planned in RAM, not overridden")
        if device != "host" and layer in on_host:
            problems.append(f"experts of layer {layer}: planned on {device}, kept in RAM")
    return problems


# -- running a case (in a process whose llama_cpp is the GPU build) ----------------------

def activate_gpu_engine(backend: str = "vulkan") -> None:
    """Choose the GPU engine build for this process (before ``llama_cpp`` is imported)."""
    from engine import engine_select

    os.environ.setdefault(engine_select.ENGINE_ENV, backend)
    os.environ.setdefault("GGML_VK_VISIBLE_DEVICES", "0")
    engine_select.activate_requested()


def inventory_for(case: Case) -> Any:
    """This machine's inventory, the GPU's free memory capped when the case says so."""
    from engine.hardware import detect

    inventory = detect(measure=False)
    if case.gpu_free_bytes is not None and inventory.gpus:
        gpus = tuple(replace(g, free_bytes=min(g.free_bytes, case.gpu_free_bytes))
                     if i == 0 else g for i, g in enumerate(inventory.gpus))
        inventory = replace(inventory, gpus=gpus)
    return inventory


def plan_case(case: Case, path: Path, inventory: Any) -> Any:
    """The plan of ``case`` on ``inventory``."""
    from engine.gguf_file import load_profile
    from planner.plan import plan
    from planner.request import Request

    request = Request(context=case.context, parallel=1, advise=False, prompt_tokens=64,
                      **case.pins)
    return plan(inventory, load_profile(path), request)


@contextmanager
def _native_capture(level: int) -> Iterator[list[str]]:
    from engine.logs import NATIVE_LOGGER, route_native_log

    route_native_log()
    logger = logging.getLogger(NATIVE_LOGGER)
    lines: list[str] = []

    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = _Handler(logging.DEBUG)
    old = logger.level
    logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def load_and_measure(spec: Any) -> list[str]:
    """Load ``spec`` and create its context (llama.cpp's log at DEBUG for the placement
    lines), free both, and return the lines that matter here."""
    from engine.native.context import NativeContext
    from engine.native.model import NativeModel

    with _native_capture(logging.DEBUG) as model_lines:
        model = NativeModel(spec)
    try:
        with _native_capture(logging.DEBUG) as ctx_lines:
            ctx = NativeContext(model, spec)
        ctx.free()
    finally:
        model.free()
    keep = [ln for ln in ctx_lines if "buffer size" in ln or ": layer" in ln]
    return model_lines + keep


def run_case(case: Case, path: Path) -> dict[str, Any]:
    """Plan, load and compare one case; a JSON-ready result."""
    from engine.launch import LaunchSpec

    inventory = inventory_for(case)
    the_plan = plan_case(case, path, inventory)
    spec = LaunchSpec.from_plan_engine(str(path), the_plan.engine).with_changes(
        warm_up=False, n_threads=2, n_threads_batch=2)
    started = time.perf_counter()
    lines = load_and_measure(spec)
    names = engine_names(inventory, the_plan.engine.to_json())
    measured = parse_log(lines)
    got = per_device(measured, names)
    span = got.get("host", {}).get("model", 0)
    not_held = mapped_not_held(path, measured, names) if the_plan.engine.to_json().get(
        "use_mmap", True) and not the_plan.engine.to_json().get("use_mlock") else 0
    if not_held:
        got["host"]["model"] = span - not_held
    rows = rows_of(case.name, predicted_bytes(the_plan), got)
    return {"case": case.name, "load_s": round(time.perf_counter() - started, 2),
            "engine": {k: the_plan.engine.to_json().get(k) for k in
                       ("n_gpu_layers", "tensor_overrides", "tensor_split", "devices",
                        "n_ubatch", "flash_attn")},
            "devices": [{"id": d.id, "layers": [list(r) for r in d.layers],
                         "expert_layers": [list(r) for r in d.expert_layers],
                         "capacity_bytes": d.capacity_bytes} for d in the_plan.devices],
            "spills": [s.to_json() for s in the_plan.spills],
            "rows": [asdict(r) | {"error_pct": round(r.error_pct, 3)} for r in rows],
            "placement_problems": placement_problems(the_plan, measured, names),
            "host_mapped_span": span, "host_mapped_not_held": not_held,
            "buffers": measured.buffers, "layers": measured.layers,
            "kv_layers": measured.kv_layers}


# -- the models and cases ------------------------------------------------------------------

def models(folder: Path) -> dict[str, Path]:
    """The demo and header-only synthetic models (sparse files: data reads as zeros)."""
    from engine.demo import demo_model_path
    from tests.helpers.gguf_factory import (
        Shape,
        qwen35_kv,
        write_gemma3,
        write_llama,
        write_qwen3moe,
        write_qwen35,
    )

    common = dict(n_embd=512, n_head=8, n_head_kv=4, head_dim=64, n_ff=1536, n_vocab=32768)
    hybrid = Shape(n_layers=8, **common)
    hybrid.extra_kv.update(qwen35_kv(hybrid, d_state=64, n_k_heads=4, n_v_heads=8))
    try:  # the demo model's package (~100 MB) may be missing on a machine set up offline
        demo = {"demo": Path(demo_model_path())}
    except Exception as exc:
        print(f"the demo model is left out: {exc}", file=sys.stderr)
        demo = {}
    return {
        **demo,
        "dense": write_llama(folder / "llama.gguf", Shape(n_layers=8, **common),
                             header_only=True),
        "moe": write_qwen3moe(folder / "moe.gguf", Shape(
            n_layers=6, n_expert=16, n_expert_used=4, n_ff_exp=256, **common),
            header_only=True),
        "swa": write_gemma3(folder / "gemma3.gguf", Shape(
            n_layers=12, extra_kv={"gemma3.attention.sliding_window": 512}, **common),
            header_only=True),
        "hybrid": write_qwen35(folder / "qwen35.gguf", hybrid, header_only=True),
    }


N_LAYERS = {"demo": 30, "dense": 8, "moe": 6, "swa": 12, "hybrid": 8}


def cases() -> list[Case]:
    """Full offload, half offloaded, and a MoE's experts kept in RAM, for every model."""
    out: list[Case] = []
    for model, n in N_LAYERS.items():
        out.append(Case(f"{model}/full", model))
        out.append(Case(f"{model}/half", model, {"n_gpu_layers": n // 2}))
    out.append(Case("moe/experts-in-ram", "moe", {"n_cpu_moe": N_LAYERS["moe"]}))
    return out


def print_table(results: Sequence[dict[str, Any]]) -> None:
    """The device and host error table, then the worst cases."""
    print(f"{'case':<22} {'device':<6} {'part':<8} {'predicted MiB':>14} "
          f"{'measured MiB':>13} {'error %':>8}")
    rows = [Row(**{k: r[k] for k in ("case", "device", "part", "predicted", "measured")})
            for res in results for r in res["rows"]]
    for r in rows:
        print(f"{r.case:<22} {r.device:<6} {r.part:<8} {r.predicted / MIB:>14.2f} "
              f"{r.measured / MIB:>13.2f} {r.error_pct:>+8.2f}")
    spans = [res for res in results if res.get("host_mapped_not_held")]
    print("compared: the plan's bytes per device (weights, KV, compute, output; a GPU's fixed "
          "runtime overhead left out) against llama.cpp's buffers per device; the host's "
          "model buffer as the RAM it must hold: with mmap llama.cpp reports the file's "
          "mapped span, from the first host tensor to the end of the last, and the device "
          "tensors lying inside it are mapped, not held (clean file pages, read once for "
          "the upload, dropped by the kernel under pressure), so they are taken out")
    for res in spans:
        print(f"  {res['case']}: host mapped span {res['host_mapped_span'] / MIB:.2f} MiB, "
              f"of it device tensors {res['host_mapped_not_held'] / MIB:.2f} MiB")
    for kind in ("gpu", "host"):
        totals = [r for r in rows if r.part == "total" and (r.device == "host") == (kind == "host")]
        if totals:
            worst = max(totals, key=lambda r: abs(r.error_pct))
            under = min(totals, key=lambda r: r.error_pct)
            print(f"worst {kind} total {worst.error_pct:+6.2f}% ({worst.case}); most under "
                  f"{under.error_pct:+6.2f}% ({under.case})")


def main(argv: list[str] | None = None) -> int:
    """Run the cases; print the table (or JSON). Exit 1 when a goal or placement fails,
    2 when no GPU engine build or GPU device is there."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="run only these cases (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--gpu-free-mib", type=int, help="cap the GPU's free memory (a rig)")
    args = parser.parse_args(argv)
    from engine.errors import EngineBuildError

    try:
        activate_gpu_engine()
    except EngineBuildError as exc:
        print(f"no GPU engine build: {exc}", file=sys.stderr)
        return 2
    from engine.ggml_devices import engine_devices

    if not [d for d in engine_devices() if d.kind in ("gpu", "igpu")]:
        print("no GPU device in this engine build (GGML_VK_VISIBLE_DEVICES?)", file=sys.stderr)
        return 2
    wanted = cases()
    if args.case:
        wanted = [c for c in wanted if c.name in args.case]
    if args.gpu_free_mib:
        wanted = [replace(c, gpu_free_bytes=args.gpu_free_mib * MIB) for c in wanted]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loadout-gpu-mem-") as tmp:
        paths = models(Path(tmp))
        results = [run_case(c, paths[c.model]) for c in wanted if c.model in paths]
    wall = time.perf_counter() - started
    rows = [Row(**{k: r[k] for k in ("case", "device", "part", "predicted", "measured")})
            for res in results for r in res["rows"]]
    failed = misses(rows) + [f"{res['case']}: {p}" for res in results
                             for p in res["placement_problems"]]
    if args.json:
        print(json.dumps({"results": results, "misses": failed, "wall_s": round(wall, 1)}))
        return 1 if failed else 0
    print_table(results)
    print(f"{len(results)} loads in {wall:.1f} s: "
          + ("all goals met, placement as planned" if not failed
             else f"{len(failed)} miss(es)"))
    for miss in failed:
        print("  MISSED", miss)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
