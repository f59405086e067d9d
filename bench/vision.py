"""Vision projectors: predicted memory vs llama.cpp's clip loader, and an image prompt's TTFT.

Run from the repository root::

    .venv/bin/python bench/vision.py            # memory table, then the TTFT of an image
    .venv/bin/python bench/vision.py --memory   # the memory table only

Memory: synthetic CLIP/MLP projectors (the tiny test one, and header-only ones at the
widths of CLIP ViT-B/16 at 224 px, ViT-L/14 at 336 px and a 448 px encoder; their data is a
hole, read as zeros) are loaded by llama.cpp's multimodal library on the CPU, with and
without flash attention. The weights ("model size") and compute buffer llama.cpp logs are
compared with ``planner.projector``. Goal as for every other part: total within 3%, never
under by more than 2%. llama.cpp prints MiB with two decimals, so a part's error allows
that rounding (0.005 MiB).

TTFT: a synthetic vision pair (a 4-layer llama of width 512 and a projector of 1024
patches) planned on this machine with 2 threads (``planner.vision_plan``) and served by
the real engine; one image prompt's TTFT measured (best of 3, the image differing each
time so nothing is cached; the least disturbed run on a shared machine) next to the
plan's: the text prompt's TTFT, the image's tokens at the planned prefill rate and its
encoding (``planner.projector.image_ttft_s``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.gguf_file import load_projector  # noqa: E402
from planner import projector as pj  # noqa: E402
from tests.helpers.gguf_mmproj import VisionShape, write_mmproj  # noqa: E402

MIB = 1024 * 1024
ROUNDING = 0.0051 * MIB
SHAPES = {
    "tiny-test": VisionShape(),
    "vit-b16-224": VisionShape(image_size=224, patch_size=16, n_embd=768, n_head=12,
                               n_ff=3072, n_layer=12, proj_hidden=2048, n_embd_text=2048),
    "vit-l14-336": VisionShape(image_size=336, patch_size=14, n_embd=1024, n_head=16,
                               n_ff=4096, n_layer=24, proj_hidden=4096, n_embd_text=4096),
    "vit-l14-448": VisionShape(image_size=448, patch_size=14, n_embd=1024, n_head=16,
                               n_ff=4096, n_layer=4, proj_hidden=4096, n_embd_text=4096),
    "gemma3-tiny": VisionShape(kind="gemma3", image_size=64, patch_size=4),
    "gemma3-896": VisionShape(kind="gemma3", image_size=896, patch_size=14, n_embd=1152,
                              n_head=16, n_ff=4304, n_layer=4, n_embd_text=2560),
}


@dataclass(frozen=True)
class Row:
    name: str
    flash: bool
    part: str
    predicted: int
    measured: int

    @property
    def error_pct(self) -> float:
        diff = float(self.predicted - self.measured)
        if abs(diff) <= ROUNDING:
            return 0.0
        diff -= ROUNDING if diff > 0 else -ROUNDING
        return 100.0 * diff / max(1, self.measured)


def measure_projector(path: Path, flash: bool) -> tuple[int, int]:
    """(weights, compute) bytes llama.cpp's clip loader reports for ``path`` on the CPU."""
    from engine.native.model import capture_native_log
    from engine.native.projector import loader_memory, mtmd

    lib = mtmd()
    params = lib.mtmd_context_params_default()
    params.use_gpu, params.n_threads, params.warmup = False, 2, True
    params.flash_attn_type = -1 if flash else 0
    with capture_native_log() as captured:
        ctx = lib.mtmd_init_from_file(str(path).encode(), None, params)
    if not ctx:
        raise RuntimeError(f"llama.cpp did not load {path.name}")
    lib.mtmd_free(ctx)
    mem = loader_memory(captured.lines)
    return mem.weights_bytes, mem.compute_bytes


def projector_rows(folder: Path) -> list[Row]:
    """Predicted vs measured weights, compute and total for every shape, flash on and off."""
    rows = []
    for name, shape in SHAPES.items():
        path = write_mmproj(folder / f"mmproj-{name}.gguf", shape,
                            header_only=name not in ("tiny-test", "gemma3-tiny"))
        profile = load_projector(path)
        for flash in (True, False):
            weights, compute = measure_projector(path, flash)
            predicted = pj.compute_bytes(profile, flash)
            rows += [Row(name, flash, "weights", profile.weights_bytes, weights),
                     Row(name, flash, "compute", predicted, compute),
                     Row(name, flash, "total", profile.weights_bytes + predicted,
                         weights + compute)]
    return rows


def memory_misses(rows: list[Row]) -> list[str]:
    """The goals missed: total within 3% and never under by more than 2%, parts within 5%."""
    out = []
    for r in rows:
        e = r.error_pct
        limit_missed = (abs(e) > 3.0 or e < -2.0) if r.part == "total" else abs(e) > 5.0
        if limit_missed:
            out.append(f"{r.name} flash={r.flash} {r.part} {e:+.2f}%")
    return out


def print_memory(rows: list[Row]) -> None:
    print(f"{'projector':<14} {'flash':>5} {'part':<8} {'predicted MiB':>14} "
          f"{'measured MiB':>13} {'error %':>8}")
    for r in rows:
        print(f"{r.name:<14} {'on' if r.flash else 'off':>5} {r.part:<8} "
              f"{r.predicted / MIB:>14.2f} {r.measured / MIB:>13.2f} {r.error_pct:>+8.2f}")


def ttft(folder: Path) -> tuple[float, float, dict[str, float]]:
    """(predicted, measured) TTFT of one image prompt, and the parts of each.

    Predicted: the planner's plan of the pair on this machine (2 threads), with the
    projector held in RAM: the text prompt's TTFT, the image's tokens at the plan's prefill
    rate and the encoding at its CPU rate. Measured: the best of three image prompts (a
    different image each time: nothing cached)."""
    from dataclasses import replace

    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from engine.launch import LaunchSpec
    from engine.requests import MEDIA_MARKER, GenerationRequest, SamplingParams
    from engine.runtime import Engine
    from planner.plan import plan_with_projector
    from planner.request import Request
    from tests.helpers.gguf_factory import Shape
    from tests.helpers.gguf_mmproj import png_bytes, write_vision_pair

    shape = VisionShape(image_size=448, patch_size=14, n_embd=256, n_head=4, n_ff=1024,
                        n_layer=3, proj_hidden=512, n_embd_text=512)
    text = Shape(n_layers=4, n_embd=512, n_head=8, n_head_kv=4, head_dim=64, n_ff=1536,
                 n_vocab=4096)
    model, projector = write_vision_pair(folder, shape, text, stem="bench-vision")
    threads = 2
    inventory = detect(measure=False)
    inventory = replace(inventory, host=replace(inventory.host, cores=threads))
    spec = LaunchSpec(str(model), n_threads=threads, n_ctx=4096, n_batch=2048, n_ubatch=512,
                      mmproj_path=str(projector), mmproj_offload=False)
    params = SamplingParams(temperature=0.0, max_tokens=2, cache_prompt=False)
    measured, encode, rates, decode = [], [], [], []
    with Engine(spec) as engine:
        question = f"{MEDIA_MARKER}\nDescribe the picture."
        text_tokens = len(engine.tokenize(engine.render_chat(
            [{"role": "user", "content": question}]), add_special=False))
        filler = " ".join(["word"] * 512)
        for seed in range(3):
            final = engine.submit(GenerationRequest(
                messages=({"role": "user", "content": question},),
                images=(png_bytes(640, 480, seed=seed),), params=params)).result(300)
            assert final.metrics.ttft_s is not None and final.metrics.image_encode_s
            measured.append(final.metrics.ttft_s)
            encode.append(final.metrics.image_encode_s)
            decode.append(final.metrics.image_decode_s or 0.0)
            rates.append(engine.submit(GenerationRequest(
                messages=({"role": "user", "content": filler},), params=params))
                .result(300).metrics.prefill_tps or 0.0)
    request = Request(context=4096, prompt_tokens=text_tokens, advise=False)
    profile = load_profile(model)
    plan = plan_with_projector(inventory, profile, request, load_projector(projector),
                               offload=False)
    use = plan.projector
    assert use is not None
    predicted = pj.image_ttft_s(plan.predicted.ttft_s, plan.predicted.prefill_tps, use)
    # the planner corrected by this machine's text runs of the same session, as the app's
    # run records correct it (planner.machine_fit): the image's share is then priced alone
    from planner.machine_fit import RunSample, model_key, plan_regime
    from planner.plan import plan as plain_plan

    regime = plan_regime(inventory, profile, plain_plan(inventory, profile, request))
    runs = tuple(RunSample(regime, model_key(profile), prefill_ratio=r / plan.predicted
                           .prefill_tps) for r in rates if r > 0)
    fitted = plan_with_projector(inventory, profile, replace(request, machine_runs=runs),
                                 load_projector(projector), offload=False)
    assert fitted.projector is not None
    parts = {"text_ttft_predicted_s": plan.predicted.ttft_s,
             "image_prefill_predicted_s": use.image_tokens / plan.predicted.prefill_tps,
             "encode_predicted_s": use.encode_s, "encode_measured_s": min(encode),
             "image_decode_measured_s": min(decode),
             "prefill_tps_predicted": plan.predicted.prefill_tps,
             "prefill_tps_measured": max(rates), "image_tokens": float(use.image_tokens),
             # the same sum with the text model's measured prefill rate: what the image's
             # own pricing (its tokens, its encoding) misses, apart from the speed model's
             "predicted_at_measured_prefill_s": pj.image_ttft_s(
                 text_tokens / max(rates), max(rates), use),
             "predicted_calibrated_s": pj.image_ttft_s(
                 fitted.predicted.ttft_s, fitted.predicted.prefill_tps, fitted.projector),
             "encode_calibrated_s": fitted.projector.encode_s}
    return predicted, min(measured), parts


def main(argv: list[str] | None = None) -> int:
    """Print the memory table (and the TTFT); 1 if a memory goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", action="store_true", help="the memory table only")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loadout-vision-") as tmp:
        rows = projector_rows(Path(tmp))
        print_memory(rows)
        misses = memory_misses(rows)
        print(f"{len(rows)} comparisons in {time.perf_counter() - start:.1f} s: "
              + ("all goals met" if not misses else f"{len(misses)} goal(s) missed"))
        for miss in misses:
            print("  MISSED", miss)
        if not args.memory:
            predicted, measured, parts = ttft(Path(tmp) / "pair")
            err = 100.0 * (predicted - measured) / measured
            print(f"image prompt TTFT: predicted {predicted:.3f} s, measured {measured:.3f} s "
                  f"(best of 3), error {err:+.1f}%")
            print("  " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items()))
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            print(f"  load average {load:.1f} on {os.cpu_count()} CPUs during the run")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
