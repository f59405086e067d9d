"""Predicted vs published decode speed, for every row of ``bench/data/published_speeds.csv``.

For each row: the rig it ran on (GPUs, RAM bandwidth, threads), the profile of a model of
that published shape and quantization (file size matched when the row states it), and a
Request placed as the row placed it (pinned offload, KV type, context, speculation and
its reported acceptance). The planner's one set of constants predicts decode t/s; the
table prints predicted vs measured, then the median absolute error overall and per group.

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
TARGET_MEDIAN = 0.20
TARGET_GROUP = 0.35


@dataclass(frozen=True)
class G:
    """A GPU of a row: table name, VRAM GB, bandwidth; backend and extras."""

    name: str
    vram_gb: float
    bw: float
    backend: Backend = Backend.CUDA
    unified: bool = False
    used_gb: float = 0.0          # memory taken by something else (mmproj, desktop)


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
METAL = Backend.METAL
VK = Backend.VULKAN
M2U = G("Apple M2 Ultra", 144, 800, METAL, unified=True)


def _mtp(n: int, a: float) -> SpecRequest:
    return SpecRequest(SpecMode.MTP, n, a)


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
}


def rig(row: Row) -> Inventory:
    """The inventory a row ran on (nominal figures; the row's bandwidths)."""
    gpus = []
    for i, g in enumerate(row.gpus):
        spec = lookup(g.name)
        total = int(g.vram_gb * GIB)
        gpus.append(Gpu(
            index=i, name=g.name, vendor=Vendor.APPLE if g.backend == METAL else Vendor.NVIDIA,
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


def main() -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gguf", action="store_true",
                        help="also plan header-only GGUFs of the shapes the test factory "
                             "writes (read back by the GGUF reader), as a cross-check")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="loadout-cal-"))
    with open(CSV, encoding="utf-8") as f:
        published = {r["id"]: r for r in csv.DictReader(f)}
    errors: dict[str, float] = {}
    print(f"{'row':<36}{'model':<20}{'quant':<10}{'measured':>9}{'predicted':>10}{'error':>8}"
          f"  placement")
    for rid, pub in published.items():
        row = ROWS[rid]
        profile = S.build(row.shape, row.quant, row.file_gb)
        p = plan(rig(row), profile, request(row))
        measured = float(pub["tg_tps"])
        predicted = p.predicted.decode_tps
        err = (predicted - measured) / measured
        errors[rid] = err
        where = ",".join(r.value for r in p.reasons[1:]) or "-"
        print(f"{rid:<36}{row.shape.name[:19]:<20}{row.quant:<10}{measured:>9.2f}"
              f"{predicted:>10.2f}{err * 100:>7.0f}%  {where}"
              + (f" [{p.speculative.mode.value}:{p.speculative.draft_tokens}]"
                 if p.speculative.draft_tokens else ""))
        if args.gguf:
            read = gguf_profile(row, folder)
            if read is not None:
                q = plan(rig(row), read, request(row))
                print(f"{'  (GGUF header, ' + str(len(read.tensors)) + ' tensors)':<66}"
                      f"{q.predicted.decode_tps:>10.2f}  file {read.file_bytes / 1e9:.2f} GB")
    med = statistics.median(abs(e) for e in errors.values())
    print(f"\nmedian absolute error: {med * 100:.1f}% over {len(errors)} rows "
          f"(target <= {TARGET_MEDIAN * 100:.0f}%)")
    worst = 0.0
    for group in (DENSE, MOE, OFFLOAD, PARTIAL, CPU, SPEC):
        errs = [abs(errors[r]) for r in errors if group in ROWS[r].groups]
        if not errs:
            print(f"  {group:<16} no rows")
            continue
        g_med = statistics.median(errs)
        worst = max(worst, g_med)
        print(f"  {group:<16} median {g_med * 100:5.1f}%  max {max(errs) * 100:5.1f}%  "
              f"({len(errs)} rows)")
    depth_table()
    ok = med <= TARGET_MEDIAN and worst <= TARGET_GROUP
    print("PASS" if ok else "FAIL", f"(worst group median {worst * 100:.1f}%, "
          f"target <= {TARGET_GROUP * 100:.0f}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
