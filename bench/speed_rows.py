"""The published rows of ``bench/data/published_speeds.csv`` in planner terms.

For each row: the rig it ran on (GPUs, RAM bandwidth, the threads llama.cpp computed
with), the model's published shape and quantization (file size matched when the row
states it), and how the row placed it (pinned offload, KV type, context, speculation and
its reported acceptance). A row that does not state its placement (an auto-fit) is placed
by the planner. Read by ``bench/speed_calibration.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.inventory import Backend, Vendor
from planner.request import SpecMode, SpecRequest
from tests.planner import shapes as S


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
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


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
    common: dict[str, Any] = dict(file_gb=file_gb, context=context, kv=kv, depth=400)
    return {f"{base_id}-base": Row(S.QWEN35_27B, quant, (gpu,),
                                   spec=SpecRequest(SpecMode.OFF), **common),
            f"{base_id}-mtp": Row(S.QWEN35_27B, quant, (gpu,), spec=_mtp(n, a), **common)}


ROWS: dict[str, Row] = {
    "pr13435-7800x3d-5gpu-dsv3-iq3xxs": Row(
        S.DEEPSEEK_V3, "IQ3_XXS",
        (G("RTX 5090", 32, 1792), G("RTX 4090", 24, 1008), G("RTX 4090", 24, 1008),
         G("RTX 3090", 24, 936), G("RTX A6000", 48, 768)),
        ram_gb=192, ram_bw=96, cores=8, context=65536, depth=21321,
        note="placed by the planner: experts of the blocks that do not fit stay in RAM"),
    "i19480-hx370-qwen3-coder-next": Row(
        S.QWEN3_NEXT_80B, "Q4_K_M", ram_gb=96, ram_bw=89.6, cores=12, file_gb=51),
    "m2u-gptoss-120b": Row(S.GPT_OSS_120B, "MXFP4_MOE", (M2U,), ram_gb=192, ram_bw=800,
                           cores=24, file_gb=63.37, depth=16),
    "xd-2x3090-l3-70b-q4km": Row(S.LLAMA3_70B, "Q4_K_M",
                                 (G("RTX 3090", 24, 936), G("RTX 3090", 24, 936)),
                                 file_gb=39.59, split=(1, 1)),
    "xd-h100pcie-l2-70b-q4_0": Row(S.LLAMA2_70B, "Q4_0", (G("H100 PCIe", 80, 2000),),
                                   file_gb=36.37),
    "i19480-hx370-qwen25c-32b": Row(S.QWEN25_32B, "Q4_K_M", ram_gb=96, ram_bw=89.6,
                                    cores=12, file_gb=19),
    "xd-m3max-cpu-l2-70b-q4_0": Row(S.LLAMA2_70B, "Q4_0", ram_gb=48, ram_bw=400, cores=16,
                                    file_gb=36.51),
    "xd-m2u-l3-70b-q4km": Row(S.LLAMA3_70B, "Q4_K_M", (M2U,), ram_gb=192, ram_bw=800,
                              cores=24, file_gb=39.59, depth=256),
    "xd-4090-l3-8b-f16": Row(S.LLAMA3_8B, "F16", (G("RTX 4090", 24, 1008),), file_gb=14.96,
                             depth=256),
    "pr21024-3090-vk-l3-8b-q4_0": Row(S.LLAMA3_8B, "Q4_0", (G("RTX 3090", 24, 936, VK),),
                                      file_gb=4.65),
    "strata-3090-flashnext-iq3s": Row(
        S.QWEN35_122B_A10B, "IQ3_S", (G("RTX 3090", 24, 936),), ram_gb=125, ram_bw=51.2,
        cores=12, file_gb=83.6, context=262144, depth=4096, spec=_mtp(4, 0.87),
        note="Strata's own engine with a GPU expert cache; planned as llama.cpp would run it"),
    "xd-h100pcie-l2-7b-q4_0": Row(S.LLAMA2_7B, "Q4_0", (G("H100 PCIe", 80, 2000),),
                                  file_gb=3.82),
    "xd-4090-l3-8b-q4km": Row(S.LLAMA3_8B, "Q4_K_M", (G("RTX 4090", 24, 1008),), file_gb=4.58,
                              depth=256),
    "i4716-7950x-ddr5-mixtral-q8": Row(S.MIXTRAL_8X7B, "Q8_0", ram_gb=128, ram_bw=57.6,
                                       cores=16),
    "r-9b14-cpu-qwen3-30b-q4km": Row(S.QWEN3_30B_A3B, "Q4_K_M", ram_gb=384, ram_bw=460.8,
                                     cores=44, file_gb=18.55,
                                     flash=True, note="44 threads, fa 1, as the row ran"),
    "spark-gptoss-120b": Row(S.GPT_OSS_120B, "MXFP4_MOE",
                             (G("DGX Spark GB10", 110, 273, unified=True),), ram_gb=128,
                             ram_bw=273, cores=20, file_gb=63.37, depth=16),
    "pr22673-2060-qwen36-35b-mtp": Row(
        S.QWEN35_35B_A3B, "Q4_K_M", (G("RTX 2060", 6, 336),), ram_gb=32, ram_bw=42.7,
        cores=6, file_gb=22.2, context=65536, kv="q8_0", spec=_mtp(3, 0.618),
        note="placed by the planner, as --fit did"),
    "qwen38-4090-base": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 4090", 24, 1008, used_gb=0.9),),
                            file_gb=17.11, context=200000, kv="q4_0", depth=400,
                            spec=SpecRequest(SpecMode.OFF)),
    "qwen38-4090-mtp": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 4090", 24, 1008, used_gb=0.9),),
                           file_gb=17.11, context=200000, kv="q4_0", depth=400,
                           spec=_mtp(2, 0.56)),
    "i10455-m4pro-qwen25c-32b-spec": Row(
        S.QWEN25_32B, "Q4_K_M", (G("Apple M4 Pro", 48, 273, METAL, unified=True),),
        ram_gb=64, ram_bw=273, cores=12, file_gb=20.4, depth=256,
        spec=SpecRequest(SpecMode.DRAFT, 16, 0.34), draft=(S.QWEN25_3B, "Q4_0"),
        note="Q4_K_L ~ Q4_K_M with Q8_0 embeddings (20.4 GB)"),
    "pr21024-3090-vk-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                      (G("RTX 3090", 24, 936, VK),), file_gb=12.1),
    "qwen38-3080-llamabench": Row(S.QWEN35_27B, "IQ2_XXS", (G("RTX 3080 10GB", 10, 760),),
                                  file_gb=9.01, kv="f16", ngl=99),
    "qwen38-3080-mtp": Row(S.QWEN35_27B, "IQ2_XXS", (G("RTX 3080 10GB", 10, 760),),
                           file_gb=9.01, context=16384, kv="q8_0", depth=400, ngl=99,
                           spec=_mtp(2, 0.74)),
    "qwen38-3090-base": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 3090", 24, 936),), file_gb=17.11,
                            context=131072, kv="q4_0", depth=400,
                            spec=SpecRequest(SpecMode.OFF)),
    "qwen38-3090-mtp": Row(S.QWEN35_27B, "Q4_K_M", (G("RTX 3090", 24, 936),), file_gb=17.11,
                           context=131072, kv="q4_0", depth=400, spec=_mtp(2, 0.78)),
    "xd-a6000-l2-70b-q4_0": Row(S.LLAMA2_70B, "Q4_0", (G("RTX A6000", 48, 768),),
                                file_gb=36.37),
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
                                           file_gb=4.92),
    "i26663-9070xt-vk-qwen3-8b-q4km": Row(S.QWEN3_8B, "Q4_K_M",
                                          (G("RX 9070 XT", 16, 644.6, VK, vendor=AMD),),
                                          file_gb=5.03),
    "i26663-9070xt-hip-qwen3-8b-q4km": Row(S.QWEN3_8B, "Q4_K_M",
                                           (G("RX 9070 XT", 16, 644.6, ROCM, vendor=AMD),),
                                           file_gb=5.03),
    "pr15355-9070xt-vk-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                        (G("RX 9070 XT", 16, 644.6, VK, vendor=AMD),),
                                        file_gb=12.1),
    "lms574-9070xt-rocm-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                         (G("RX 9070 XT", 16, 644.6, ROCM, vendor=AMD),),
                                         file_gb=12.1, context=8096, flash=True),
    "lms574-9070xt-vk-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE",
                                       (G("RX 9070 XT", 16, 644.6, VK, vendor=AMD),),
                                       file_gb=12.1, context=8096, flash=True),
    "llmfit808-7900xt-vk-qwen3-30b-a3b": Row(S.QWEN3_30B_A3B, "Q4_K_M",
                                             (G("RX 7900 XT", 20, 800, VK, vendor=AMD),),
                                             file_gb=18.55),
    "llmfit808-7900xt-vk-qwen25c-32b": Row(S.QWEN25_32B, "Q4_K_M",
                                           (G("RX 7900 XT", 20, 800, VK, vendor=AMD),),
                                           file_gb=19.85),
    "llmfit755-2080-qwen3-30b-ncmoe36": Row(S.QWEN3_30B_A3B, "Q4_K_M", (G("RTX 2080", 8, 448),),
                                            ram_gb=62, ram_bw=94, cores=10, file_gb=18.55,
                                            n_cpu_moe=36),
    "reddit-5090m-qwen36-35b-mtp": Row(S.QWEN35_35B_A3B, "Q3_K_M",
                                       (G("RTX 5090 Laptop", 24, 896),), file_gb=17.2,
                                       context=32768, kv="q4_0", spec=_mtp(3, 0.866)),
}



# Rows of the split regimes (layers or experts in RAM). The i9-10900X host (quad-channel
# DDR4, 10 cores) is the one of llmfit755 above; llmfit's figure is output tokens over
# the whole request, a little under the server's own decode figure (PR #755: 33.7 vs 36.7).
RTX2080 = G("RTX 2080", 8, 448)
I9_10900X: dict[str, Any] = dict(ram_gb=62, ram_bw=94, cores=10)
# The i9-13900HK: llama.cpp's default threads on a hybrid Intel CPU are its performance
# cores (6); its RAM is not stated (dual-channel DDR5-5200 assumed). Placement: the
# bench's auto-fit to 12 GB, not stated per model, so the planner places these rows.
RTX5070 = G("RTX 5070", 12, 672)
I9_13900HK: dict[str, Any] = dict(ram_gb=31, ram_bw=83.2, cores=6)
RX7900XT_ROCM = G("RX 7900 XT", 20, 800, ROCM, vendor=AMD)


def _q38_offload(gpu: G, base_id: str, ngl: int, a: float, host: dict[str, Any]
                 ) -> dict[str, Row]:
    """A partial-offload A/B pair of the Qwen3.8-27B MTP table (IQ4_XS, 64K, q4_0 KV)."""
    common: dict[str, Any] = dict(file_gb=15.71, context=65536, kv="q4_0", depth=400,
                                  ngl=ngl, flash=True, **host)
    return {f"{base_id}-base": Row(S.QWEN35_27B, "IQ4_XS", (gpu,),
                                   spec=SpecRequest(SpecMode.OFF), **common),
            f"{base_id}-mtp": Row(S.QWEN35_27B, "IQ4_XS", (gpu,), spec=_mtp(2, a),
                                  **common)}


SPLIT_ROWS: dict[str, Row] = {
    "llmfit774-2080-qwen3-14b-ngl32": Row(S.QWEN3_14B, "Q4_K_M", (RTX2080,), file_gb=9.0,
                                          ngl=32, **I9_10900X),
    "llmfit774-2080-gemma3-12b-ngl44": Row(S.GEMMA3_12B, "Q4_K_M", (RTX2080,), file_gb=7.3,
                                           ngl=44, **I9_10900X),
    "llmfit775-2080-mistral-small-24b-ngl16": Row(S.MISTRAL_SMALL_24B, "Q4_K_M", (RTX2080,),
                                                  file_gb=14.33, ngl=16, **I9_10900X),
    "llmfit775-2080-gptoss-20b-ncmoe12": Row(S.GPT_OSS_20B, "MXFP4_MOE", (RTX2080,),
                                             file_gb=12.1, n_cpu_moe=12, **I9_10900X),
    "llmfit778-2080-qwen25-14b-ngl42": Row(S.QWEN25_14B, "Q4_K_M", (RTX2080,), file_gb=8.99,
                                           ngl=42, **I9_10900X),
    "llmfit787-5070-qwen3-30b-a3b": Row(S.QWEN3_30B_A3B, "Q4_K_M", (RTX5070,), file_gb=18.55,
                                        **I9_13900HK),
    "llmfit787-5070-mistral-small-24b": Row(S.MISTRAL_SMALL_24B, "Q4_K_M", (RTX5070,),
                                            file_gb=14.33, **I9_13900HK),
    "llmfit787-5070-gemma3-27b": Row(S.GEMMA3_27B, "Q4_K_M", (RTX5070,), file_gb=16.55,
                                     **I9_13900HK),
    "llmfit787-5070-qwen25c-32b": Row(S.QWEN25_32B, "Q4_K_M", (RTX5070,), file_gb=19.85,
                                      **I9_13900HK),
    "llmfit787-5070-qwen3-32b": Row(S.QWEN3_32B, "Q4_K_M", (RTX5070,), file_gb=19.76,
                                    **I9_13900HK),
    **_q38_offload(G("RTX 5060 Laptop", 8, 384), "q38-5060m", 25, 0.90,
                   dict(ram_gb=31.3, ram_bw=89.6, cores=8)),
    **_q38_offload(G("RTX PRO 3000 Blackwell Laptop", 12, 672), "q38-pro3000m", 38, 0.85,
                   dict(ram_gb=64, ram_bw=89.6, cores=24)),
    "qwen38-3080-ngl62-display": Row(S.QWEN35_27B, "IQ2_XXS",
                                     (G("RTX 3080 10GB", 10, 760, used_gb=1.8),),
                                     ram_gb=32, ram_bw=96, cores=12, file_gb=9.01,
                                     context=16384, kv="q8_0", depth=400, ngl=62),
    "reddit-6900xt-gptoss-120b-ncmoe28": Row(S.GPT_OSS_120B, "MXFP4_MOE",
                                             (G("RX 6900 XT", 16, 512, ROCM, vendor=AMD),),
                                             ram_gb=64, ram_bw=89.6, cores=12, file_gb=63.37,
                                             n_cpu_moe=28),
    "d15396-7900xt-rocm-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE", (RX7900XT_ROCM,),
                                         ram_gb=32, ram_bw=51.2, cores=12, file_gb=12.1,
                                         context=131072, flash=True),
    "d15396-7900xt-rocm-gptoss-20b-cmoe": Row(S.GPT_OSS_20B, "MXFP4_MOE", (RX7900XT_ROCM,),
                                              ram_gb=32, ram_bw=51.2, cores=12,
                                              file_gb=12.1, context=131072, flash=True,
                                              n_cpu_moe=24),
    "m2u-gptoss-20b": Row(S.GPT_OSS_20B, "MXFP4_MOE", (M2U,), ram_gb=192, ram_bw=800,
                          cores=24, file_gb=12.1, depth=16),
    "m2u-qwen3-coder-30b-q8": Row(S.QWEN3_30B_A3B, "Q8_0", (M2U,), ram_gb=192, ram_bw=800,
                                  cores=24, file_gb=32.48, depth=16),
}
ROWS.update(SPLIT_ROWS)

# Prefill with experts in RAM, by prompt length (not in the CSV: the same page's decode,
# 1.4-1.8 t/s, is far below what the machine's RAM allows and is not explained):
# https://www.hardware-corner.net/gpt-oss-offloading-moe-layers/ (RTX 3090, EPYC 7343,
# 64 GB DDR4-3200, llama-server -ngl 99 --n-cpu-moe 27): (prompt tokens, prefill t/s).
HWC_3090_GPTOSS = Row(S.GPT_OSS_120B, "MXFP4_MOE", (G("RTX 3090", 24, 936),), ram_gb=64,
                      ram_bw=102.4, cores=16, file_gb=63.37, n_cpu_moe=27)
HWC_PREFILL = ((85, 48.49), (500, 173.60), (1400, 229.07), (5500, 246.18))


def row_groups(row: Row) -> tuple[str, ...]:
    """The row's vendor group when it runs on AMD or Apple GPUs (informative)."""
    if any(g.vendor == Vendor.AMD for g in row.gpus):
        return (AMD_GPU,)
    if any(g.backend == METAL for g in row.gpus):
        return (APPLE_GPU,)
    return ()
