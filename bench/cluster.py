"""Decode speed on this machine alone against the same model split over RPC workers.

Run from the repository root::

    .venv/bin/python bench/cluster.py [--workers 2] [--tokens 64] [--model demo] [--json]

Starts ``--workers`` ``loadout worker`` processes on 127.0.0.1 (or uses the running ones
given by ``--endpoints HOST:PORT,...``), adds their devices to this machine's Inventory
(``engine.hardware.workers.add_workers``: probed, link measured), and plans the model twice:
on this machine alone, and split evenly over the workers (roles and split pinned, as a
user would: on one machine the planner itself leaves same-host workers off). Each plan
is then carried out with llama.cpp's low-level API (the split load names the workers'
devices in ``llama_model_params.devices``, in the plan's order) and greedily generates
``--tokens`` tokens from one prompt. Prints measured decode t/s (tokens after the first /
time from first to last token) next to the plan's prediction, and whether the two texts
are identical. Exit status 1 when they are not.

On loopback the workers use the same cores and RAM as the main: the split cannot be
faster, and is not expected to be (the plan says so with ``same_host``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROMPT = "The three most useful things to pack for a week of hiking are"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_workers(n: int, threads: int) -> tuple[list[str], list[subprocess.Popen[bytes]]]:
    """``n`` loadout workers on loopback, each listening before this returns."""
    procs, endpoints = [], []
    for _ in range(n):
        port = _free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "loadout", "worker", "--port", str(port),
             "--threads", str(threads)], cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        endpoints.append(f"127.0.0.1:{port}")
    deadline = time.monotonic() + 60
    for ep in endpoints:
        port = int(ep.rsplit(":", 1)[1])
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"worker {ep} did not start") from None
                time.sleep(0.1)
    return endpoints, procs


def generate(model_path: str, engine: dict[str, Any], tokens: int, threads: int,
             on_token: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Load with the plan's engine parameters (devices included) and decode greedily;
    ``on_token(n)`` is called after the n-th token."""
    import llama_cpp
    import numpy as np

    from engine.rpc import device_handles, register_worker

    for ep in engine.get("rpc_workers", []):
        register_worker(ep)
    mp = llama_cpp.llama_model_default_params()
    mp.n_gpu_layers = int(engine["n_gpu_layers"]) if engine.get("devices") else 0
    keep: list[Any] = []
    if engine.get("devices"):
        devices = device_handles(list(engine["devices"]))
        keep.append(devices)
        mp.devices = ctypes.cast(devices, ctypes.c_void_p).value
        mp.split_mode = int(engine["split_mode"])
        mp.main_gpu = int(engine["main_gpu"])
        split = engine.get("tensor_split") or []
        arr = (ctypes.c_float * max(1, len(split)))(*split)
        keep.append(arr)
        mp.tensor_split = ctypes.cast(arr, ctypes.POINTER(ctypes.c_float))
    t0 = time.perf_counter()
    model = llama_cpp.llama_model_load_from_file(model_path.encode(), mp)
    if not model:
        raise RuntimeError("the model did not load")
    load_s = time.perf_counter() - t0
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = 512
    cp.n_batch = 512
    cp.n_threads = cp.n_threads_batch = threads
    if "flash_attn" in engine:  # as planned (the planner turns it off on a CPU)
        cp.flash_attn_type = 1 if engine["flash_attn"] else 0
    ctx = llama_cpp.llama_init_from_model(model, cp)
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    text = PROMPT.encode()
    buf = (llama_cpp.llama_token * 256)()
    n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, 256, True, False)
    out: list[int] = []
    stamps: list[float] = []
    batch = llama_cpp.llama_batch_get_one(buf, n)
    started = time.perf_counter()
    piece = ctypes.create_string_buffer(64)
    pieces: list[bytes] = []
    for _ in range(tokens):
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("decode failed")
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1),
                                       shape=(n_vocab,))
        tok = int(np.argmax(logits))
        stamps.append(time.perf_counter())
        if llama_cpp.llama_vocab_is_eog(vocab, tok):
            break
        out.append(tok)
        if on_token is not None:
            on_token(len(out))
        k = llama_cpp.llama_token_to_piece(vocab, tok, piece, 64, 0, False)
        pieces.append(piece.raw[:max(0, k)])
        one = (llama_cpp.llama_token * 1)(tok)
        keep.append(one)
        batch = llama_cpp.llama_batch_get_one(one, 1)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    decode = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return {"text": b"".join(pieces).decode("utf-8", "replace"), "tokens": len(out),
            "decode_tps": round(decode, 2), "ttft_s": round(stamps[0] - started, 3),
            "load_s": round(load_s, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="demo")
    ap.add_argument("--workers", type=int, default=2, help="loopback workers to start")
    ap.add_argument("--endpoints", default="", help="use these running workers instead")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads of each worker and of the main's own compute (default: "
                         "cores / workers; equal counts keep the comparison fair)")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from engine.gguf_file import load_profile
    from engine.hardware.workers import add_workers
    from engine.models import resolve_local_model
    from engine.rig_file import inventory_for
    from planner.plan import plan
    from planner.request import Request, Role

    path = str(resolve_local_model(args.model))
    profile = load_profile(Path(path))
    cores = os.cpu_count() or 1
    given = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    n_workers = len(given) or args.workers
    threads = args.threads or max(1, cores // max(1, n_workers))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        endpoints = given
        if not endpoints:
            endpoints, procs = start_workers(n_workers, threads)
        detected = inventory_for(None)
        # priced as it runs: the main and each loopback worker compute with ``threads``
        local_inv = replace(detected, host=replace(detected.host, cores=threads,
                                                   threads=threads))
        inv = add_workers(local_inv, endpoints)
        quiet = Request(advise=False, context=512)
        local_plan = plan(local_inv, profile, quiet)
        remote = [g for g in inv.gpus if g.remote]
        roles = tuple(Role.HELPER if g.remote else Role.OFF for g in inv.gpus)
        split = tuple(1.0 if g.remote else 0.0 for g in inv.gpus)
        split_plan = plan(inv, profile, replace(quiet, roles=roles, tensor_split=split))
        # what the planner does on its own with these workers
        own_plan = plan(inv, profile, quiet)
        local = generate(path, local_plan.engine.to_json(), args.tokens, threads)
        split_run = generate(path, split_plan.engine.to_json(), args.tokens, threads)
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)
    doc = {
        "model": args.model, "workers": endpoints, "threads_per_worker": threads,
        "links": [{"endpoint": g.endpoint, "link_gbps": round(g.link_gbps, 3),
                   "link_latency_ms": round(g.link_latency_s * 1e3, 3),
                   "measured": "link_gbps" in g.measured, "same_host": g.same_host}
                  for g in remote],
        "local": {**local, "predicted_decode_tps": round(local_plan.predicted.decode_tps, 2)},
        "split": {**split_run, "devices": split_plan.engine.to_json().get("devices"),
                  "tensor_split": split_plan.engine.to_json().get("tensor_split"),
                  "predicted_decode_tps": round(split_plan.predicted.decode_tps, 2),
                  "warnings": [w.code.value for w in split_plan.warnings]},
        "planner_own_choice": {"uses_workers": bool(own_plan.engine.to_json().get("rpc_workers")),
                               "roles": [r.reason.value for r in own_plan.roles]},
        "identical_text": local["text"] == split_run["text"],
    }
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        for ln in doc["links"]:
            print(f"worker {ln['endpoint']}: link {ln['link_gbps']} GB/s "
                  f"({'measured' if ln['measured'] else 'nominal'}), "
                  f"{ln['link_latency_ms']} ms round trip, same host {ln['same_host']}")
        for name in ("local", "split"):
            r = doc[name]
            assert isinstance(r, dict)
            print(f"{name:6} decode {r['decode_tps']:7.2f} t/s measured, "
                  f"{r['predicted_decode_tps']:7.2f} t/s predicted; TTFT {r['ttft_s']} s, "
                  f"{r['tokens']} tokens, load {r['load_s']} s")
        print(f"split devices {doc['split']['devices']} tensor_split "  # type: ignore[index]
              f"{doc['split']['tensor_split']}")  # type: ignore[index]
        print(f"planner's own choice uses the workers: "
              f"{doc['planner_own_choice']['uses_workers']}")  # type: ignore[index]
        print(f"greedy texts identical: {doc['identical_text']}")
    return 0 if doc["identical_text"] else 1


if __name__ == "__main__":
    sys.exit(main())
