"""Predicted vs published decode speed, for every row of ``bench/data/published_speeds.csv``.

For each row: the rig it ran on (GPUs, RAM bandwidth, threads), the profile of a model of
that published shape and quantization (file size matched when the row states it), and a
Request placed as the row placed it (pinned offload, KV type, context, speculation and
its reported acceptance). The planner predicts decode t/s; the free constants are fitted
(``bench/speed_fit.py``) and every row is also predicted by constants fitted without it
(leave-one-out): that is the error to quote. Rows marked ``holdout`` in the CSV's ``use``
column are never fitted on and are reported apart; ``other-engine`` rows are shown only.

Run: ``.venv/bin/python bench/speed_calibration.py`` (a few seconds, no network).
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.gpus import lookup  # noqa: E402
from planner.inventory import Backend, Disk, DiskKind, Gpu, Host, Inventory, Vendor  # noqa: E402
from planner.plan import plan  # noqa: E402
from planner.request import Request, SpecMode, SpecRequest, TaskKind  # noqa: E402
from tests.planner import shapes as S  # noqa: E402

CSV = ROOT / "bench" / "data" / "published_speeds.csv"
GIB = 1 << 30
GB = 10**9
TARGET_MEDIAN = 0.15
TARGET_GROUP = 0.25


@dataclass(frozen=True)
class G:
    """A GPU of a row: table name, VRAM GB, bandwidth; backend and extras."""

    name: str
    vram_gb: float
    bw: float
    backend: Backend = Backend.CUDA
    unified: bool = False
    used_gb: float = 0.0          # memory taken by something else (mmproj, desktop)
    vendor: Vendor | None = None  # None: Apple on Metal, else NVIDIA


@dataclass(frozen=True)
class Row:
    """How a published row was run, in planner terms."""

    shape: S.ModelShape
    quant: str
    gpus: tuple[G, ...] = ()
    ram_gb: float = 64
    ram_bw: float = 50.0
    cores: int = 16
    file_gb: float | None = None
    context: int = 4096
    depth: int = 64
    kv: str | None = None
    flash: bool | None = None   # flash attention as the row ran it (None: not stated)
    ngl: int | None = None
    n_cpu_moe: int | None = None
    split: tuple[float, ...] | None = None
    spec: SpecRequest | None = None
    draft: tuple[S.ModelShape, str] | None = None
    groups: tuple[str, ...] = ()
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


DENSE, MOE, OFFLOAD, PARTIAL, CPU, SPEC = ("full GPU dense", "MoE", "expert offload",
                                           "partial offload", "CPU-only", "speculative")
AMD_GPU, APPLE_GPU = "AMD GPU", "Apple GPU"
METAL = Backend.METAL
VK = Backend.VULKAN
M2U = G("Apple M2 Ultra", 144, 800, METAL, unified=True)


def _mtp(n: int, a: float | None) -> SpecRequest:
    return SpecRequest(SpecMode.MTP, n, a)


AMD = Vendor.AMD
ROCM = Backend.ROCM


def _q38(gpu: G, base_id: str, n: int = 2, a: float | None = None, quant: str = "Q4_K_M",
         file_gb: float = 17.11, context: int = 131072, kv: str = "q4_0") -> dict[str, Row]:
    """A community A/B pair of the Qwen3.8-27B MTP table: spec off, then MTP on."""
    common = dict(file_gb=file_gb, context=context, kv=kv, depth=400)
    return {f"{base_id}-base": Row(S.QWEN35_27B, quant, (gpu,), spec=SpecRequest(SpecMode.OFF),
                                   groups=(DENSE,), **common),  # type: ignore[arg-type]
            f"{base_id}-mtp": Row(S.QWEN35_27B, quant, (gpu,), spec=_mtp(n, a), groups=(SPEC,),
                                  **common)}  # type: ignore[arg-type]


ROWS: dict[str, Row] = {
    "pr13435-7800x3d-5gpu-dsv3-iq3xxs": Row(
        S.DEEPSEEK_V3, "IQ3_XXS",
        (G("RTX 5090", 32, 1792), G("RTX 4090", 24, 1008), G("RTX 4090", 24, 1008),
         G("RTX 3090", 24, 936), G("RTX A6000", 48, 768)),
        ram_gb=192, ram_bw=96, cores=8, context=65536, depth=21321,
        groups=(MOE, OFFLOAD, PARTIAL),
        note="placed by the planner: experts of the blocks that do not fit stay in RAM"),
    "i19480-hx370-qwen3-coder-next": Row(
        S.QWEN3_NEXT_80B, "Q4_K_M", ram_gb=96, ram_bw=89.6, cores=12, file_gb=51,
        groups=(MOE, CPU)),
    "m2u-gptoss-120b": Row(S.GPT_OSS_120B, "MXFP4_MOE", (M2U,), ram_gb=192, ram_bw=800,
                           cores=24, file_gb=63.37, depth=16, groups=(MOE,)),
    "xd-2x3090-l3-70b-q4km": Row(S.LLAMA3_70B, "Q4_K_M",
                                 (G("RTX 3090", 24, 936), G("RTX 3090", 24, 936)),
                                 file_gb=39.59, split=(1, 1), groups=(DENSE,)),
    "xd-h100pcie-l2-70b-q4_0": Row(S.LLAMA2_70B, "Q4_0", (G("H100 PCIe", 80, 2000),),
                                   file_gb=36.37, groups=(DENSE,)),
    "i19480-hx370-qwen25c-32b": Row(S.QWEN25_32B, "Q4_K_M", ram_gb=96, ram_bw=89.6,
                                    cores=12, file_gb=19, groups=(CPU,)),
    "xd-m3max-cpu-l2-70b-q4_0": Row(S.LLAMA2_70B, "Q4_0", ram_gb=48, ram_bw=400, cores=16,
                                    file_gb=36.51, groups=(CPU,)),
    "xd-m2u-l3-70b-q4km": Row(S.LLAMA3_70B, "Q4_K_M", (M2U,), ram_gb=192, ram_bw=800,
                              cores=24, file_gb=39.59, depth=256, groups=(DENSE,)),
    "xd-4090-l3-8b-f16": Row(S.LLAMA3_8B, "F16", (G("RTX 4090", 24, 1008),), file_gb=14.96,
                             depth=256, groups=(DENSE,)),
    "pr21024-3090-vk-l3-8b-q4_0": Row(S.LLAMA3_8B, "Q4_0", (G("RTX 3090", 24, 936, VK),),
                                      file_gb=4.65, groups=(DENSE,)),
    "strata-3090-flashnext-iq3s": Row(
        S.QWEN35_122B_A10B, "IQ3_S", (G("RTX 3090", 24, 936),), ram_gb=125, ram_bw=51.2,
        cores=12, file_gb=83.6, context=262144, depth=4096, spec=_mtp(4, 0.87),
        groups=(MOE, OFFLOAD, SPEC),
        note="Strata's own engine with a GPU expert cache; planned as llama.cpp would run it"),
    "xd-h100pcie-l2-7b-q4_0": Row(S.LLAMA2_7B, "Q4_0", (G("H100 PCIe", 80, 2000),),
                                  file_gb=3.82, groups=(DENSE,)),
    "xd-4090-l3-8b-q4km": Row(S.LLAMA3_8B, "Q4_K_M", (G("RTX 4090", 24, 1008),), file_gb=4.58,
                              depth=256, groups=(DENSE,)),
    "i4716-7950x-ddr5-mixtral-q8": Row(S.MIXTRAL_8X7B, "Q8_0", ram_gb=128, ram_bw=57.6,
                                       cores=16, groups=(MOE, CPU)),
    "r-9b14-cpu-qwen3-30b-q4km": Row(S.QWEN3_30B_A3B, "Q4_K_M", ram_gb=384, ram_bw=460.8,
                                     cores=44, file_gb=18.55, groups=(MOE, CPU),
                                     flash=True, note="44 threads, fa 1, as the row ran"),
    "spark-gptoss-120b": Row(S.GPT_OSS_120B, "MXFP4_MOE",
                             (G("DGX Spark GB10", 110, 273, unified=True),), ram_gb=128,
                             ram_bw=273, cores=20, file_gb=63.37, depth=16, groups=(MOE,)),
    "pr22673-2060-qwen36-35b-mtp": Row(
        S.QWEN35_35B_A3B, "Q4_K_M", (G("RTX 2060", 6, 336),), ram_gb=32, ram_bw=42.7,
        cores=6, file_gb=22.2, context=65536, kv="q8_0", spec=_mtp(3, 0.618),
        groups=(MOE, OFFLOAD, PARTIAL, SPEC), note="placed by the planner, as --fit did"),
    "qwen38-4090-base": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 4090", 24, 1008, used_gb=0.9),),
                            file_gb=17.11, context=200000, kv="q4_0", depth=400,
                            spec=SpecRequest(SpecMode.OFF), groups=(DENSE,)),
    "qwen38-4090-mtp": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 4090", 24, 1008, used_gb=0.9),),
                           file_gb=17.11, context=200000, kv="q4_0", depth=400,
                           spec=_mtp(2, 0.56), groups=(SPEC,)),
    "i10455-m4pro-qwen25c-32b-spec": Row(
        S.QWEN25_32B, "Q4_K_M", (G("Apple M4 Pro", 48, 273, METAL, unified=True),),
        ram_gb=64, ram_bw=273, cores=12, file_gb=20.4, depth=256,
        spec=SpecRequest(SpecMode.DRAFT, 16, 0.34), draft=(S.QWEN25_3B, "Q4_0"),
        groups=(SPEC,), note="Q4_K_L ~ Q4_K_M with Q8_0 embeddings (20.4 GB)"),
    "pr21024-3090-vk-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                      (G("RTX 3090", 24, 936, VK),), file_gb=12.1,
                                      groups=(MOE,)),
    "qwen38-3080-llamabench": Row(S.QWEN35_27B, "IQ2_XXS", (G("RTX 3080 10GB", 10, 760),),
                                  file_gb=9.01, groups=(DENSE,), kv="f16", ngl=99),
    "qwen38-3080-mtp": Row(S.QWEN35_27B, "IQ2_XXS", (G("RTX 3080 10GB", 10, 760),),
                           file_gb=9.01, context=16384, kv="q8_0", depth=400, ngl=99,
                           spec=_mtp(2, 0.74), groups=(SPEC,)),
    "qwen38-3090-base": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 3090", 24, 936),), file_gb=17.11,
                            context=131072, kv="q4_0", depth=400,
                            spec=SpecRequest(SpecMode.OFF), groups=(DENSE,)),
    "qwen38-3090-mtp": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 3090", 24, 936),), file_gb=17.11,
                           context=131072, kv="q4_0", depth=400, spec=_mtp(2, 0.78),
                           groups=(SPEC,)),
    "xd-a6000-l2-70b-q4_0": Row(S.LLAMA2_70B, "Q4_0", (G("RTX A6000", 48, 768),),
                                file_gb=36.37, groups=(DENSE,)),
    **_q38(G("RTX 5090 Laptop", 24, 896), "q38-5090m", a=0.79),
    **_q38(G("RTX 6000 Ada", 48, 960), "q38-a6000ada", quant="Q8_0", file_gb=33.0,
           context=262144, kv="q8_0"),
    **_q38(G("RX 7900 XTX", 24, 960, ROCM, vendor=AMD), "q38-7900xtx"),
    **_q38(G("Radeon AI PRO R9700", 32, 640, VK, vendor=AMD), "q38-r9700-vk", file_gb=17.6,
           context=262144),
    **_q38(G("RTX PRO 6000 Blackwell", 96, 1792), "q38-pro6000"),
    **_q38(G("RTX 5090", 32, 1792), "q38-5090-q4km"),
    **_q38(G("Tesla V100", 32, 900), "q38-v100", a=0.75),
    **_q38(G("RTX 3090", 24, 936), "q38-3090-b10450"),
    **_q38(G("Apple M4", 24, 120, METAL, unified=True), "q38-m4"),
    **_q38(G("Apple M3 Ultra", 96, 819, METAL, unified=True), "q38-m3u", quant="Q6_K",
           file_gb=22.4),
    "pr26284-7900xtx-rocm-l3-8b-q4km": Row(S.LLAMA3_8B, "Q4_K_M",
                                           (G("RX 7900 XTX", 24, 960, ROCM, vendor=AMD),),
                                           file_gb=4.92, groups=(DENSE,)),
    "i26663-9070xt-vk-qwen3-8b-q4km": Row(S.QWEN3_8B, "Q4_K_M",
                                          (G("RX 9070 XT", 16, 644.6, VK, vendor=AMD),),
                                          file_gb=5.03, groups=(DENSE,)),
    "i26663-9070xt-hip-qwen3-8b-q4km": Row(S.QWEN3_8B, "Q4_K_M",
                                           (G("RX 9070 XT", 16, 644.6, ROCM, vendor=AMD),),
                                           file_gb=5.03, groups=(DENSE,)),
    "pr15355-9070xt-vk-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                        (G("RX 9070 XT", 16, 644.6, VK, vendor=AMD),),
                                        file_gb=12.1, groups=(MOE,)),
    "lms574-9070xt-rocm-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                         (G("RX 9070 XT", 16, 644.6, ROCM, vendor=AMD),),
                                         file_gb=12.1, context=8096, flash=True,
                                         groups=(MOE,)),
    "lms574-9070xt-vk-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                       (G("RX 9070 XT", 16, 644.6, VK, vendor=AMD),),
                                       file_gb=12.1, context=8096, flash=True, groups=(MOE,)),
    "llmfit808-7900xt-vk-qwen3-30b-a3b": Row(S.QWEN3_30B_A3B, "Q4_K_M",
                                             (G("RX 7900 XT", 20, 800, VK, vendor=AMD),),
                                             file_gb=18.55, groups=(MOE,)),
    "llmfit808-7900xt-vk-qwen25c-32b": Row(S.QWEN25_32B, "Q4_K_M",
                                           (G("RX 7900 XT", 20, 800, VK, vendor=AMD),),
                                           file_gb=19.85, groups=(DENSE,)),
    "llmfit755-2080-qwen3-30b-ncmoe36": Row(S.QWEN3_30B_A3B, "Q4_K_M", (G("RTX 2080", 8, 448),),
                                            ram_gb=62, ram_bw=94, cores=10, file_gb=18.55,
                                            n_cpu_moe=36, groups=(MOE, OFFLOAD)),
    "reddit-5090m-qwen36-35b-mtp": Row(S.QWEN35_35B_A3B, "Q3_K_M",
                                       (G("RTX 5090 Laptop", 24, 896),), file_gb=17.2,
                                       context=32768, kv="q4_0", spec=_mtp(3, 0.866),
                                       groups=(MOE, SPEC)),
}


def row_groups(row: Row) -> tuple[str, ...]:
    """The row's groups, with the GPU vendor's when the row runs on AMD or Apple GPUs."""
    extra = ()
    if any(g.vendor == Vendor.AMD for g in row.gpus):
        extra = (AMD_GPU,)
    elif any(g.backend == METAL for g in row.gpus):
        extra = (APPLE_GPU,)
    return row.groups + extra


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


def _median_line(label: str, errs: list[float], target: float | None = None) -> str:
    if not errs:
        return f"  {label:<18} no rows"
    med = statistics.median(errs)
    return (f"  {label:<18} median {med * 100:5.1f}%  max {max(errs) * 100:5.1f}%  "
            f"({len(errs)} rows)")


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
        t = F.row_terms(inv, p.predicted)
        terms.append(t)
        specs.append(F.spec_terms(inv, p.predicted, CONSTANTS))
    measured = np.array([float(published[r]["tg_tps"]) for r in ids])
    sp = np.array(specs)
    all_rows = F.FitRows(np.array(terms), sp[:, 0], sp[:, 1], sp[:, 2], measured)
    use = [published[r].get("use", "fit") for r in ids]
    held = np.array([u == "holdout" for u in use])
    other = np.array([u == "other-engine" for u in use])
    fit_mask = ~held & ~other
    fit_rows = all_rows.take(fit_mask)
    theta = F.fit(fit_rows, CONSTANTS)
    in_sample = all_rows.predict(theta)
    loo = np.full(len(ids), np.nan)
    loo[fit_mask] = F.leave_one_out(fit_rows, CONSTANTS)
    shipped = all_rows.predict(np.zeros(len(F.KNOBS)))

    print(f"{'row':<36}{'model':<20}{'measured':>9}{'planner':>9}{'fit':>8}{'LOO':>8}"
          f"{'LOO err':>8}  placement")
    for i, rid in enumerate(ids):
        p, row = planned[rid], ROWS[rid]
        ref = loo[i] if fit_mask[i] else in_sample[i]
        where = ",".join(r.value for r in p.reasons[1:]) or "-"
        spec = (f" [{p.speculative.mode.value}:{p.speculative.draft_tokens}]"
                if p.speculative.draft_tokens else "")
        print(f"{rid[:35]:<36}{row.shape.name[:19]:<20}{measured[i]:>9.2f}"
              f"{p.predicted.decode_tps:>9.2f}{in_sample[i]:>8.2f}"
              f"{f'{loo[i]:.2f}' if fit_mask[i] else use[i][:7]:>8}"
              f"{(ref / measured[i] - 1) * 100:>7.0f}%  {where}{spec}")
        assert abs(shipped[i] / p.predicted.decode_tps - 1) < 1e-6
        if args.gguf:
            read = gguf_profile(row, folder)
            if read is not None:
                q = plan(rig(row), read, request(row))
                print(f"{'  (GGUF header, ' + str(len(read.tensors)) + ' tensors)':<56}"
                      f"{q.predicted.decode_tps:>9.2f}  file {read.file_bytes / 1e9:.2f} GB")

    def errs(pred: np.ndarray, mask: np.ndarray) -> list[float]:
        return [abs(pred[i] / measured[i] - 1) for i in range(len(ids)) if mask[i]]

    groups = (DENSE, MOE, OFFLOAD, PARTIAL, CPU, SPEC, AMD_GPU, APPLE_GPU)

    def in_group(g: str) -> np.ndarray:
        return np.array([g in row_groups(ROWS[r]) for r in ids])

    print(f"\nfitted on {int(fit_mask.sum())} rows; {int(held.sum())} rows held out; "
          f"{int(other.sum())} of another engine (shown, not scored: the model prices "
          f"llama.cpp)")
    print("constants (fitted scale of the shipped value):")
    for j, knob in enumerate(F.KNOBS):
        scale = float(np.exp(theta[j]))
        vals = ", ".join(f"{n} {getattr(CONSTANTS, n) * scale:.3g}" for n in knob.constants)
        print(f"  {knob.name:<10} x{scale:5.2f}  -> {vals}")
    loo_all = errs(loo, fit_mask)
    med_loo = statistics.median(loo_all)
    print(f"\nleave-one-out median absolute error: {med_loo * 100:.1f}% over "
          f"{len(loo_all)} rows (target <= {TARGET_MEDIAN * 100:.0f}%); in-sample "
          f"{statistics.median(errs(in_sample, fit_mask)) * 100:.1f}%; shipped constants "
          f"{statistics.median(errs(shipped, fit_mask)) * 100:.1f}%")
    worst = 0.0
    for g in groups:
        mask = fit_mask & in_group(g)
        e_loo = errs(loo, mask)
        line = _median_line(g, e_loo)
        if e_loo:
            line += f"  in-sample {statistics.median(errs(in_sample, mask)) * 100:5.1f}%"
        print(line)
        if len(e_loo) >= 3:
            worst = max(worst, statistics.median(e_loo))
    held_errs = errs(in_sample, held)
    print("\nheld out (never fitted on), predicted with the fit of the others:")
    print(_median_line("all held-out", held_errs))
    for i, rid in enumerate(ids):
        if held[i]:
            print(f"    {rid:<36} measured {measured[i]:7.2f}  predicted {in_sample[i]:7.2f}"
                  f"  ({(in_sample[i] / measured[i] - 1) * 100:+.0f}%)")
    depth_table()
    ok = med_loo <= TARGET_MEDIAN and worst <= TARGET_GROUP
    print("PASS" if ok else "FAIL", f"(leave-one-out: worst group median {worst * 100:.1f}% "
          f"among groups of >= 3 rows, target <= {TARGET_GROUP * 100:.0f}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
