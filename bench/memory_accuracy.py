"""Memory model vs llama.cpp: predicted buffer sizes against the ones llama.cpp reports.

Run from the repository root::

    .venv/bin/python bench/memory_accuracy.py            # full grid
    .venv/bin/python bench/memory_accuracy.py --quick    # a few configurations
    .venv/bin/python bench/memory_accuracy.py --gpu      # per device, on a GPU build

For the demo model and synthetic models of six families (dense llama, qwen3moe MoE,
gemma3 sliding-window, qwen35 hybrid recurrent, and at their published widths a gpt-oss
with attention sinks, biases and sliding-window blocks and a qwen3moe of the 30B-A3B's
width, 128 experts, 152k vocabulary), at two contexts, three KV types and
1 and 4 parallel sequences, it loads the model in this process with llama.cpp (CPU),
reads the buffer sizes from llama.cpp's own log (model, KV + RS, compute, output) and
compares them with ``planner.memory.estimate``. The hybrid model (one NextN block) is also
loaded with its MTP draft context (``+mtp`` rows: both contexts summed). llama.cpp prints
MiB with two decimals, so each part's error allows that rounding (0.005 MiB). Vision
projectors (LLaVA's and Gemma 3's, from ``bench/vision.py``) are compared too: weights
and compute buffer. So is the engine's embedding context (``+embed`` rows: the engine's
own ``EmbeddingContext`` over a chat model, as ``serve --embeddings`` makes it, and over
synthetic BERT embedding models) against ``planner.embedding_memory``. Goal: total
within 3%, never under-predicting the total by more than 2%, each part within 5%.
Exit code 1 if missed.

The weights are F16 (synthetic) and Q4_1 (demo), types the CPU backend does not repack.
For Q4_0/Q4_K/IQ4_NL/... matrices it repacks into a ``CPU_REPACK`` buffer while the
``CPU_Mapped`` span still covers their file bytes, so llama.cpp's summed report counts
those bytes twice; the memory model predicts the RAM really used (once). GPU buffers
cannot be measured on a CPU-only machine; they are modelled from the source.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.gguf_file import load_profile  # noqa: E402
from planner.ggml_types import KvType  # noqa: E402
from planner.memory import MemoryConfig, Placement, estimate  # noqa: E402

MIB = 1024 * 1024
ROUNDING = 0.0051 * MIB  # llama.cpp prints MiB with two decimals
PARTS = ("model", "kv", "compute", "output")
GOAL_TOTAL, GOAL_UNDER, GOAL_PART = 3.0, 2.0, 5.0
_LINE = re.compile(r"(\S+)\s+(model|KV|RS|compute|output) buffer size\s*=\s*([\d.]+) MiB")
_PART = {"model": "model", "KV": "kv", "RS": "kv", "compute": "compute", "output": "output"}
KV_TYPES = (("f16", False), ("q8_0", True), ("q4_0", True))  # quantized V needs flash attn


@dataclass(frozen=True)
class Row:
    """One comparison: a model, a configuration and one part."""

    model: str
    n_ctx: int
    kv: str
    n_seq: int
    part: str
    predicted: int
    measured: int

    @property
    def error_pct(self) -> float:
        """Signed error in percent (positive: over-predicted), rounding tolerated."""
        diff = self.predicted - self.measured
        slack = ROUNDING * (4 if self.part == "total" else 1)
        if abs(diff) <= slack:
            return 0.0
        diff -= slack if diff > 0 else -slack
        return 100.0 * diff / max(self.measured, 1)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def take(self) -> dict[str, int]:
        parts: dict[str, float] = {}
        for line in self.lines:
            m = _LINE.search(line)
            if m:
                key = _PART[m.group(2)]
                parts[key] = parts.get(key, 0.0) + float(m.group(3))
        self.lines.clear()
        return {k: round(v * MIB) for k, v in parts.items()}


@contextmanager
def _native_log() -> Iterator[_Capture]:
    """llama.cpp's log lines, at debug level, gathered while the block runs."""
    from engine.logs import NATIVE_LOGGER, route_native_log

    route_native_log()
    capture = _Capture()
    native = logging.getLogger(NATIVE_LOGGER)
    native.addHandler(capture)
    old_level, native.level = native.level, logging.DEBUG
    try:
        yield capture
    finally:
        native.removeHandler(capture)
        native.level = old_level


def _part_rows(name: str, n_ctx: int, kv: str, n_seq: int, pred: dict[str, int],
               got: dict[str, int]) -> list[Row]:
    """One row per part and one for the total: predicted ``pred`` vs measured ``got``."""
    rows = []
    for part in (*PARTS, "total"):
        p = sum(pred.values()) if part == "total" else pred[part]
        m = sum(got.get(k, 0) for k in PARTS) if part == "total" else got.get(part, 0)
        rows.append(Row(name, n_ctx, kv, n_seq, part, p, m))
    return rows


def synthetic_models(folder: Path) -> dict[str, Path]:
    """Header-only (sparse) synthetic models with realistic proportions (and one split
    into three files, read as one)."""
    from tests.helpers.gguf_factory import (
        Shape,
        qwen35_kv,
        write_gemma3,
        write_llama,
        write_llama_split,
        write_qwen3moe,
        write_qwen35,
    )
    from tests.helpers.gguf_gpt_oss import write_gpt_oss

    common = dict(n_embd=512, n_head=8, n_head_kv=4, head_dim=64, n_ff=1536, n_vocab=32768)
    llama = Shape(n_layers=8, **common)
    moe = Shape(n_layers=6, n_expert=16, n_expert_used=4, n_ff_exp=256, **common)
    gemma = Shape(n_layers=12, extra_kv={"gemma3.attention.sliding_window": 512}, **common)
    hybrid = Shape(n_layers=8, n_nextn=1, **common)
    hybrid.extra_kv.update(qwen35_kv(hybrid, d_state=64, n_k_heads=4, n_v_heads=8))
    # published widths (four blocks: compute buffers depend on widths, not depth)
    oss = Shape(n_layers=4, n_embd=2880, n_head=64, n_head_kv=8, head_dim=64, n_ff=2880,
                n_vocab=201088, n_expert=32, n_expert_used=4, n_ff_exp=2880)
    moe30 = Shape(n_layers=4, n_embd=2048, n_head=32, n_head_kv=4, head_dim=128, n_ff=6144,
                  n_vocab=151936, n_expert=128, n_expert_used=8, n_ff_exp=768)
    return {
        "llama-dense": write_llama(folder / "llama.gguf", llama, header_only=True),
        "qwen3moe": write_qwen3moe(folder / "qwen3moe.gguf", moe, header_only=True),
        "gemma3-swa": write_gemma3(folder / "gemma3.gguf", gemma, header_only=True),
        "qwen35-hybrid": write_qwen35(folder / "qwen35.gguf", hybrid, header_only=True),
        "gpt-oss-sinks-swa": write_gpt_oss(folder / "gpt-oss.gguf", oss, header_only=True),
        "qwen3moe-30b-wide": write_qwen3moe(folder / "qwen3moe-30b.gguf", moe30,
                                            header_only=True),
        "llama-split-3": write_llama_split(folder / "split-00001-of-00003.gguf", 3,
                                           Shape(n_layers=6, **common), header_only=True),
    }


def measure(path: Path, configs: list[MemoryConfig], capture: _Capture
            ) -> tuple[int, list[dict[str, int]]]:
    """Load ``path`` once; create and free one context per config; return the sizes.

    Configurations with ``load_mtp`` (all or none of them) load the NextN layers and add
    the MTP draft context llama.cpp creates next to the main one.
    """
    import llama_cpp as lc

    capture.take()
    model_params = lc.llama_model_default_params()
    model_params.load_mtp = any(c.load_mtp for c in configs)
    model = lc.llama_model_load_from_file(str(path).encode(), model_params)
    if not model:
        raise RuntimeError(f"llama.cpp could not load {path}")
    model_bytes = capture.take().get("model", 0)
    results = []
    try:
        for c in configs:
            p = lc.llama_context_default_params()
            p.n_ctx, p.n_seq_max, p.n_batch, p.n_ubatch = c.n_ctx, c.n_seq, c.n_batch, c.n_ubatch
            p.type_k, p.type_v = KvType.of(c.type_k).id, KvType.of(c.type_v).id
            p.flash_attn_type = 1 if c.flash_attn else 0
            p.swa_full, p.kv_unified, p.offload_kqv = c.swa_full, c.kv_unified, c.offload_kqv
            p.n_threads = p.n_threads_batch = 1
            ctx = lc.llama_init_from_model(model, p)
            if not ctx:
                raise RuntimeError(f"llama.cpp could not create a context for {c}")
            draft = None
            if c.load_mtp:
                p.ctx_type, p.ctx_other = 1, ctx  # LLAMA_CONTEXT_TYPE_MTP
                draft = lc.llama_init_from_model(model, p)
                if not draft:
                    raise RuntimeError(f"llama.cpp could not create an MTP context for {c}")
                lc.llama_free(draft)
            lc.llama_free(ctx)
            results.append(capture.take())
    finally:
        lc.llama_model_free(model)
    return model_bytes, results


def grid(quick: bool) -> list[MemoryConfig]:
    """The configurations compared: contexts x KV types x parallel sequences."""
    contexts = (4096,) if quick else (4096, 16384)
    kv_types = KV_TYPES[:2] if quick else KV_TYPES
    seqs = (1, 4)
    grid = [MemoryConfig(n_ctx=ctx, n_seq=n, type_k=t, type_v=t, flash_attn=fa,
                         n_batch=2048, n_ubatch=512)
            for ctx in contexts for t, fa in kv_types for n in seqs]
    # the MTP draft context (models with NextN layers only)
    grid += [MemoryConfig(n_ctx=ctx, n_seq=n, load_mtp=True, flash_attn=True)
             for ctx in contexts for n in seqs]
    return grid


def compare(models: dict[str, Path], configs: list[MemoryConfig]) -> list[Row]:
    """Predicted vs measured rows (one per part and a total) for every model x config."""
    rows: list[Row] = []
    with _native_log() as capture:
        for name, path in models.items():
            profile = load_profile(path)
            plain = [c for c in configs if not c.load_mtp]
            mtp = [c for c in configs if c.load_mtp and profile.nextn_layers]
            runs = [(group, *measure(path, group, capture)) for group in (plain, mtp) if group]
            for c, got, model_bytes in ((c, got, mb) for group, mb, res in runs
                                        for c, got in zip(group, res, strict=True)):
                got["model"] = model_bytes
                host = estimate(profile, c, Placement.all_on("host", profile.n_layers))[0]
                pred = {"model": host.weights_bytes, "kv": host.kv_bytes,
                        "compute": host.compute_bytes, "output": host.output_bytes}
                kv = c.type_k + ("+mtp" if c.load_mtp else "")
                rows += _part_rows(name, c.n_ctx, kv, c.n_seq, pred, got)
    return rows


def embedding_rows(models: dict[str, Path], folder: Path) -> list[Row]:
    """The embedding context the engine creates (its own code) vs the planner: chat models
    with the sequence lengths ``serve --embeddings`` sizes it for, and synthetic BERTs
    (all of them F16 weights or Q4_1) at their trained context."""
    from engine.launch import LaunchSpec
    from engine.native.embeddings import EmbeddingContext, EmbeddingShape
    from engine.native.model import NativeModel
    from planner.embedding_memory import EmbeddingContext as Planned
    from planner.embedding_memory import embedding_batch, embedding_memory, is_encoder
    from tests.helpers.gguf_bert import BertShape, write_bert

    bert = BertShape(n_layers=4, n_embd=384, n_head=12, n_ff=1536, n_ctx_train=512)
    cases: list[tuple[str, Path, int, str]] = [
        (name, models[name], n, kv) for name in ("smollm2-135m-demo", "llama-dense",
                                                 "gemma3-swa")
        for n, kv in ((1024, "f16"), (4096, "f16"), (4096, "q8_0"))]
    cases += [("bert-384", write_bert(folder / "bert.gguf", bert), 512, "f16"),
              ("bert-768-8k", write_bert(folder / "bert-8k.gguf", BertShape(
                  n_layers=2, n_embd=768, n_head=12, n_ff=3072, n_ctx_train=8192)), 8192,
               "f16")]
    rows: list[Row] = []
    with _native_log() as capture:
        for name, path, longest, kv in cases:
            spec = LaunchSpec(model_path=str(path), n_threads=1, n_threads_batch=1,
                              type_k=kv, type_v=kv, warm_up=False)
            capture.take()
            model = NativeModel(spec)
            try:
                got = capture.take()
                n_batch = embedding_batch(longest)
                ctx = EmbeddingContext(model, spec, EmbeddingShape(n_batch=n_batch))
                got.update({k: v for k, v in capture.take().items() if k != "model"})
                ctx.free()
            finally:
                model.free()
            profile = load_profile(path)
            placement = Placement.all_on("host", profile.n_layers)
            weights = estimate(profile, MemoryConfig(n_ctx=256), placement)[0].weights_bytes
            host = embedding_memory(profile, Planned(n_batch, kv, kv), placement)[0]
            pred = {"model": weights, "kv": host.kv_bytes, "compute": host.compute_bytes,
                    "output": host.output_bytes}
            if is_encoder(profile):
                got.setdefault("kv", 0)
            rows += _part_rows(name, n_batch, kv + "+embed", 64, pred, got)
    return rows


def verdict(rows: list[Row]) -> list[str]:
    """The goals missed (empty when all are met)."""
    misses = []
    for r in rows:
        e = r.error_pct
        if r.part == "total" and (abs(e) > GOAL_TOTAL or e < -GOAL_UNDER):
            misses.append(f"total {e:+.2f}%: {r}")
        elif r.part != "total" and abs(e) > GOAL_PART:
            misses.append(f"{r.part} {e:+.2f}%: {r}")
    return misses


def main(argv: list[str] | None = None) -> int:
    """Print the table and the worst cases; return 1 if a goal is missed."""
    rest = list(sys.argv[1:] if argv is None else argv)
    if "--gpu" in rest:  # the same comparison on a GPU engine build: bench/gpu_memory.py
        from bench.gpu_memory import main as gpu_main

        return gpu_main([a for a in rest if a != "--gpu"])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few configurations only")
    parser.add_argument("--gpu", action="store_true",
                        help="on the Vulkan (or another GPU) engine build, per device")
    args = parser.parse_args(argv)
    from engine.demo import demo_model_path

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loadout-mem-") as tmp:
        models = {"smollm2-135m-demo": demo_model_path(), **synthetic_models(Path(tmp))}
        rows = compare(models, grid(args.quick))
        rows += embedding_rows(models, Path(tmp))
    print(f"{'model':<18} {'ctx':>6} {'kv':>8} {'par':>3} {'part':<8} "
          f"{'predicted MiB':>14} {'measured MiB':>13} {'error %':>8}")
    for r in rows:
        print(f"{r.model:<18} {r.n_ctx:>6} {r.kv:>8} {r.n_seq:>3} {r.part:<8} "
              f"{r.predicted / MIB:>14.2f} {r.measured / MIB:>13.2f} {r.error_pct:>+8.2f}")
    for part in (*PARTS, "total"):
        worst = max((r for r in rows if r.part == part), key=lambda r: abs(r.error_pct))
        under = min((r for r in rows if r.part == part), key=lambda r: r.error_pct)
        print(f"worst {part:<8} {worst.error_pct:+6.2f}%  ({worst.model} ctx {worst.n_ctx} "
              f"{worst.kv} x{worst.n_seq});  most under {under.error_pct:+6.2f}%")
    misses = verdict(rows)
    from bench.vision import memory_misses, print_memory, projector_rows

    with tempfile.TemporaryDirectory(prefix="loadout-mmproj-") as tmp:
        projectors = projector_rows(Path(tmp))  # vision projectors: weights + compute
    print_memory(projectors)
    misses += memory_misses(projectors)
    rows_n = len(rows) + len(projectors)
    print(f"{rows_n} comparisons in {time.perf_counter() - start:.1f} s: "
          + ("all goals met" if not misses else f"{len(misses)} goal(s) missed"))
    for miss in misses[:20]:
        print("  MISSED", miss)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
