"""``loadout --self-test``: load the demo model, answer one question, show the engine build."""

from __future__ import annotations

import argparse
import sys

QUESTION = "What is the capital of France? Answer briefly."


def engine_build() -> str:
    """The llama.cpp system info line (backends and CPU features compiled in)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    return f"llama-cpp-python {llama_cpp.__version__}: {text.strip()}"


def run(args: argparse.Namespace) -> int:
    from engine.demo import demo_model_path
    from engine.launch import LaunchSpec
    from engine.requests import GenerationRequest, SamplingParams
    from engine.runtime import Engine

    try:
        print(engine_build())
        from engine.ggml_devices import engine_devices

        for dev in engine_devices():
            print(f"device: {dev.name} ({dev.description}, {dev.kind}, "
                  f"{dev.free_bytes / 2**30:.1f} of {dev.total_bytes / 2**30:.1f} GiB free)")
        path = demo_model_path()
        print(f"demo model: {path}")
        with Engine(LaunchSpec(str(path), n_ctx=2048)) as engine:
            print(f"loaded in {engine.load_seconds:.2f} s")
            final = engine.submit(GenerationRequest(
                messages=({"role": "user", "content": QUESTION},),
                params=SamplingParams(temperature=0.0, max_tokens=32))).result(timeout=120)
    except Exception as exc:  # the self-test reports every failure as a verdict
        print(f"self-test FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"Q: {QUESTION}\nA: {final.text.strip()}")
    print(final.metrics.speed_line())
    if "paris" not in final.text.lower():
        print("self-test FAILED: the answer does not mention Paris", file=sys.stderr)
        return 1
    print("self-test passed")
    return 0
