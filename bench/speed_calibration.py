"""Predicted vs published decode speed, for every row of ``bench/data/published_speeds.csv``.

Each row (``bench/speed_rows.py``: the rig it ran on, the model's shape and quantization,
the placement as the row placed it) is planned and its decode predicted. The free
constants are fitted (``bench/speed_fit.py``), and every row is also predicted by
constants fitted without any row of its *source* (the CSV's ``source_key``: one machine
of one publisher), so that a machine never teaches the model its own rows: that
held-out error is the one to quote, overall and per regime (what the plan does: full-GPU
dense, MoE resident, MoE with experts in RAM, dense partial offload, CPU-only,
speculative). Rows marked ``holdout`` in the CSV's ``use`` column are never fitted on;
``other-engine`` rows are shown, not scored.

Run: ``.venv/bin/python bench/speed_calibration.py`` (a few seconds, no network).
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.speed_rows import (  # noqa: E402
    AMD_GPU,
    APPLE_GPU,
    HWC_3090_GPTOSS,
    HWC_PREFILL,
    METAL,
    ROWS,
    Row,
    row_groups,
)
from planner.codes import Code  # noqa: E402
from planner.gpus import lookup  # noqa: E402
from planner.inventory import Disk, DiskKind, Gpu, Host, Inventory, Vendor  # noqa: E402
from planner.plan import plan  # noqa: E402
from planner.plan_types import Plan  # noqa: E402
from planner.request import Request, SpecMode, SpecRequest, TaskKind  # noqa: E402
from tests.planner import shapes as S  # noqa: E402

CSV = ROOT / "bench" / "data" / "published_speeds.csv"
GIB = 1 << 30
GB = 10**9
TARGET_MEDIAN = 0.15
TARGET_GROUP = 0.20
DENSE, MOE, MOE_RAM, PARTIAL, CPU, SPEC = (
    "full-GPU dense", "MoE resident", "MoE experts in RAM", "dense partial offload",
    "CPU-only", "speculative")
REGIMES = (DENSE, MOE, MOE_RAM, PARTIAL, CPU, SPEC)


def regime(p: Plan, row: Row) -> str:
    """The regime of a row's plan, from what the plan does (not a label on the row)."""
    if p.speculative.mode != SpecMode.OFF and p.speculative.draft_tokens:
        return SPEC
    if Code.CPU_ONLY in p.reasons:
        return CPU
    if Code.EXPERTS_TO_RAM in p.reasons:
        return MOE_RAM
    if Code.LAYERS_TO_RAM in p.reasons:
        return PARTIAL
    return MOE if row.shape.n_expert else DENSE


def rig(row: Row) -> Inventory:
    """The inventory a row ran on (nominal figures; the row's bandwidths)."""
    gpus = []
    for i, g in enumerate(row.gpus):
        spec = lookup(g.name)
        total = int(g.vram_gb * GIB)
        vendor = g.vendor or (Vendor.APPLE if g.backend == METAL else Vendor.NVIDIA)
        gpus.append(Gpu(
            index=i, name=g.name, vendor=vendor,
            backend=g.backend, total_bytes=total, free_bytes=total - int(g.used_gb * GIB),
            bandwidth_gbps=g.bw, pcie_gbps=spec.pcie_gbps if spec and spec.pcie_gbps else 16.0,
            tflops_fp16=spec.tflops_fp16 if spec else 100.0, unified_memory=g.unified))
    ram = int(row.ram_gb * GIB)
    host = Host(cpu="row host", cores=row.cores, threads=row.cores * 2, ram_total_bytes=ram,
                ram_available_bytes=ram - 2 * GIB, bandwidth_gbps=row.ram_bw)
    return Inventory(gpus=tuple(gpus), host=host,
                     disks=(Disk("/models", DiskKind.NVME, 3.5),))


def request(row: Row) -> Request:
    """The Request that places the model as the row did."""
    draft = S.build(row.draft[0], row.draft[1]) if row.draft else None
    return Request(context=row.context, depth=row.depth, task=TaskKind.CHAT,
                   n_gpu_layers=row.ngl, n_cpu_moe=row.n_cpu_moe, tensor_split=row.split,
                   kv_type=row.kv, flash_attn=row.flash,
                   spec=row.spec or SpecRequest(SpecMode.OFF),
                   draft_profile=draft, advise=False, host_reserve_bytes=2 * GB)


GGUF_TYPES = {"Q4_K_M": "Q4_K", "Q4_0": "Q4_0", "F16": "F16", "Q8_0": "Q8_0"}


def gguf_profile(row: Row, folder: Path) -> Any:
    """The profile read back from a header-only GGUF of the row's shape (dense llama-style
    and qwen3moe shapes, single-type files), or None for other shapes."""
    from engine.gguf_file import load_profile
    from tests.helpers.gguf_factory import Shape, write_llama, write_qwen3moe

    s, wt = row.shape, GGUF_TYPES.get(row.quant)
    if wt is None or s.arch not in ("llama", "qwen2", "qwen3moe") or (s.n_expert and \
            s.arch != "qwen3moe"):
        return None
    shape = Shape(n_layers=s.n_layers, n_embd=s.n_embd, n_head=s.n_head,
                  n_head_kv=s.n_head_kv, head_dim=s.head_dim, n_ff=s.n_ff or 256,
                  n_vocab=s.n_vocab, n_ctx_train=s.n_ctx_train, n_expert=s.n_expert,
                  n_expert_used=s.n_expert_used, n_ff_exp=s.n_ff_exp, weight_type=wt)
    path = folder / f"{s.name}-{wt}.gguf"
    if not path.exists():
        writer = write_qwen3moe if s.n_expert else write_llama
        writer(path, shape, header_only=True)
    return load_profile(path)


# Decode at depth, from the rows' notes column: (row, depth, measured decode t/s).
DEPTH_POINTS = (("r-9b14-cpu-qwen3-30b-q4km", 6000, 14.97),
                ("m2u-gptoss-120b", 32768, 65.52),
                ("spark-gptoss-120b", 32768, 41.35),
                ("xd-4090-l3-8b-q4km", 4096, 110.66),
                ("pr22673-2060-qwen36-35b-mtp", 16384, 33.1))


def depth_table() -> None:
    """Predicted vs measured decode deep into the context (not part of the targets)."""
    print("\ndecode at depth (from the notes column; informative):")
    for rid, depth, measured in DEPTH_POINTS:
        row = ROWS[rid]
        row = Row(**{**row.__dict__, "depth": depth, "context": max(row.context, depth + 1024)})
        p = plan(rig(row), S.build(row.shape, row.quant, row.file_gb), request(row))
        tps = p.predicted.decode_tps
        print(f"  {rid:<36} depth {depth:>6}: measured {measured:7.2f}  predicted {tps:7.2f}"
              f"  ({(tps / measured - 1) * 100:+.0f}%)")


def prefill_table() -> None:
    """Predicted vs measured prefill of a row with experts in RAM, by prompt length: a
    batch of 32 tokens or more copies the host's experts to the GPU once (informative).
    The run used llama-server's micro-batch of 512 (Loadout plans 2048 for it)."""
    print("\nprefill with 27 blocks' experts in RAM, by prompt (hardware-corner.net, "
          "RTX 3090; informative):")
    row = HWC_3090_GPTOSS
    for prompt, measured in HWC_PREFILL:
        req = replace(request(row), prompt_tokens=prompt, n_ubatch=512)  # as the run did
        p = plan(rig(row), S.build(row.shape, row.quant, row.file_gb), req)
        tps = p.predicted.prefill_tps
        print(f"  prompt {prompt:>5}: measured {measured:7.2f}  predicted {tps:7.2f}"
              f"  ({(tps / measured - 1) * 100:+.0f}%)")


def _median_line(label: str, errs: list[float]) -> str:
    if not errs:
        return f"  {label:<22} no rows"
    return (f"  {label:<22} median {statistics.median(errs) * 100:5.1f}%  "
            f"max {max(errs) * 100:5.1f}%  ({len(errs)} rows)")


def main() -> int:
    import argparse
    import tempfile

    import numpy as np

    from bench import speed_fit as F
    from planner.speed import CONSTANTS

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gguf", action="store_true",
                        help="also plan header-only GGUFs of the shapes the test factory "
                             "writes (read back by the GGUF reader), as a cross-check")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="loadout-cal-"))
    with open(CSV, encoding="utf-8") as f:
        published = {r["id"]: r for r in csv.DictReader(f)}
    ids = list(published)
    planned, terms, specs = {}, [], []
    for rid in ids:
        row = ROWS[rid]
        inv = rig(row)
        p = plan(inv, S.build(row.shape, row.quant, row.file_gb), request(row))
        planned[rid] = p
        terms.append(F.row_terms(inv, p.predicted))
        specs.append(F.spec_terms(inv, p.predicted, CONSTANTS))
    measured = np.array([float(published[r]["tg_tps"]) for r in ids])
    sp = np.array(specs)
    all_rows = F.FitRows(np.array(terms), sp[:, 0], sp[:, 1], sp[:, 2], measured)
    use = [published[r].get("use", "fit") for r in ids]
    sources = [published[r]["source_key"] for r in ids]
    regimes = [regime(planned[r], ROWS[r]) for r in ids]
    held = np.array([u == "holdout" for u in use])
    other = np.array([u == "other-engine" for u in use])
    fit_mask = ~held & ~other
    scored = ~other
    theta = F.fit(all_rows.take(fit_mask), CONSTANTS)
    in_sample = all_rows.predict(theta)
    loso = F.leave_source_out(all_rows, sources, fit_mask, CONSTANTS)
    shipped = all_rows.predict(np.zeros(len(F.KNOBS)))

    print(f"{'row':<36}{'regime':<23}{'measured':>9}{'planner':>9}{'fit':>8}{'held':>8}"
          f"{'err':>6}  placement")
    for i, rid in enumerate(ids):
        p, row = planned[rid], ROWS[rid]
        where = ",".join(r.value for r in p.reasons[1:]) or "-"
        spec = (f" [{p.speculative.mode.value}:{p.speculative.draft_tokens}]"
                if p.speculative.draft_tokens else "")
        held_out = f"{loso[i]:.2f}" if scored[i] else use[i][:7]
        err = (loso[i] if scored[i] else in_sample[i]) / measured[i] - 1
        print(f"{rid[:35]:<36}{regimes[i]:<23}{measured[i]:>9.2f}"
              f"{p.predicted.decode_tps:>9.2f}{in_sample[i]:>8.2f}{held_out:>8}"
              f"{err * 100:>5.0f}%  {where}{spec}")
        assert abs(shipped[i] / p.predicted.decode_tps - 1) < 1e-6
        if args.gguf:
            read = gguf_profile(row, folder)
            if read is not None:
                q = plan(rig(row), read, request(row))
                print(f"{'  (GGUF header, ' + str(len(read.tensors)) + ' tensors)':<59}"
                      f"{q.predicted.decode_tps:>9.2f}  file {read.file_bytes / 1e9:.2f} GB")

    def errs(pred: np.ndarray, mask: np.ndarray) -> list[float]:
        return [abs(pred[i] / measured[i] - 1) for i in range(len(ids)) if mask[i]]

    print(f"\n{int(scored.sum())} rows from {len(set(np.array(sources)[scored]))} sources "
          f"scored; fitted on the {int(fit_mask.sum())} not held out; {int(other.sum())} of "
          f"another engine shown, not scored (the model prices llama.cpp)")
    print("constants (fitted on every fit row; scale of the shipped value):")
    for j, knob in enumerate(F.KNOBS):
        scale = float(np.exp(theta[j]))
        vals = ", ".join(f"{n} {getattr(CONSTANTS, n) * scale:.3g}" for n in knob.constants)
        print(f"  {knob.name:<10} x{scale:5.2f}  -> {vals}")
    held_all = errs(loso, scored)
    med = statistics.median(held_all)
    print(f"\nleave-one-source-out median absolute error: {med * 100:.1f}% over "
          f"{len(held_all)} rows (target <= {TARGET_MEDIAN * 100:.0f}%); in-sample "
          f"{statistics.median(errs(in_sample, scored)) * 100:.1f}%; shipped constants "
          f"{statistics.median(errs(shipped, scored)) * 100:.1f}%")
    worst = 0.0
    for g in REGIMES:
        mask = scored & np.array([r == g for r in regimes])
        e = errs(loso, mask)
        line = _median_line(g, e)
        if e:
            line += f"  in-sample {statistics.median(errs(in_sample, mask)) * 100:5.1f}%"
            worst = max(worst, statistics.median(e))
        print(line)
    print("by vendor (informative):")
    for g in (AMD_GPU, APPLE_GPU):
        print(_median_line(g, errs(loso, scored & np.array(
            [g in row_groups(ROWS[r]) for r in ids]))))
    print(_median_line("rows marked holdout", errs(loso, held)))
    depth_table()
    prefill_table()
    ok = med <= TARGET_MEDIAN and worst <= TARGET_GROUP
    print("PASS" if ok else "FAIL", f"(leave-one-source-out: median {med * 100:.1f}%, "
          f"target <= {TARGET_MEDIAN * 100:.0f}%; worst regime median {worst * 100:.1f}%, "
          f"target <= {TARGET_GROUP * 100:.0f}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
