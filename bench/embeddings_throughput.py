"""Embedding throughput of ``loadout serve`` against llama.cpp's own ``llama-server --embedding``.

Both servers run on the same machine, the same synthetic BERT GGUF (random weights,
MiniLM-L6's shape by default: 6 blocks of 384, mean pooling; written by
``tests/helpers/gguf_bert.py``), the same threads and the same physical batch
(``-b``/``-ub`` 512 for llama-server, which needs ``-ub`` >= ``-b`` for a non-causal
model; Loadout packs about 512 tokens into each encode too), in the same run, alternating
rounds. ``llama-server`` is built from the engine's own sdist by ``bench/llama_tools.py``.
A plain HTTP client (the same for both) sends ``--requests`` ``/v1/embeddings`` requests
of ``--batch`` texts each from ``--clients`` concurrent connections and measures:

- embeddings per second: inputs embedded / wall time of all requests;
- tokens per second: the ``usage.prompt_tokens`` of every answer / the same wall time.

The vectors of both servers are compared too (same model, same pooling, both normalised:
they must agree to float precision). The best round of each side is kept (on a shared
machine the best run is the one least disturbed). Target: Loadout >= 0.95 x llama-server.
Without a llama-server (it cannot be built here), Loadout's figures are still printed.

    python bench/embeddings_throughput.py [--batch 32] [--requests 16] [--clients 2]
                                          [--threads 1] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.server_throughput import Server, _free_port, _model_id  # noqa: E402
from engine.embedder import ENCODE_TOKENS  # noqa: E402
from tests.helpers.gguf_bert import WORDS, BertShape, write_bert  # noqa: E402

TARGET = 0.95


def texts(n: int, seed: int = 0) -> list[str]:
    """``n`` sentences of 20 to 60 words (all in the synthetic vocabulary)."""
    rng = random.Random(seed)
    vocab = [*WORDS, *"abcdefghij"]
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(20, 60))) + "."
            for _ in range(n)]


def _post(port: int, doc: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings",
                                 data=json.dumps(doc).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        out: dict[str, Any] = json.loads(resp.read())
    return out


def measure(port: int, batches: list[list[str]], clients: int) -> dict[str, float]:
    """Send every batch (``clients`` at a time); embeddings/s and tokens/s over the wall."""
    model = _model_id("127.0.0.1", port)

    def one(batch: list[str]) -> tuple[int, int]:
        doc = _post(port, {"model": model, "input": batch, "encoding_format": "float"})
        return len(doc["data"]), int(doc["usage"]["prompt_tokens"])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        done = list(pool.map(one, batches))
    wall = time.perf_counter() - t0
    inputs, tokens = sum(d[0] for d in done), sum(d[1] for d in done)
    return {"embeddings_per_s": inputs / wall, "tokens_per_s": tokens / wall,
            "inputs": inputs, "tokens": tokens, "wall_s": wall}


def vectors(port: int, batch: list[str]) -> np.ndarray:
    doc = _post(port, {"model": _model_id("127.0.0.1", port), "input": batch,
                       "encoding_format": "float"})
    return np.array([d["embedding"] for d in sorted(doc["data"], key=lambda d: d["index"])])


def llama_server_binary() -> tuple[Path | None, str]:
    """llama-server from ``bench/llama_tools.py``, or None and why it is missing."""
    try:
        from bench.llama_tools import build

        return build(("llama-server",))["llama-server"], ""
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32, help="texts per request")
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--clients", type=int, default=2, help="concurrent connections")
    # one thread each by default: on a small machine shared with other work, OpenMP
    # threads that wait for each other at every barrier make two threads noisier than one
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--embd", type=int, default=384)
    parser.add_argument("--loadout-only", action="store_true",
                        help="do not build or run llama-server")
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="embeddings-throughput-"))
    shape = BertShape(n_layers=args.layers, n_embd=args.embd, n_head=max(1, args.embd // 64),
                      n_ff=4 * args.embd, n_ctx_train=512)
    model = write_bert(work / "bench-bert.gguf", shape)
    all_texts = texts(args.batch * args.requests)
    batches = [all_texts[i:i + args.batch] for i in range(0, len(all_texts), args.batch)]
    t = str(args.threads)
    p1, p2 = _free_port(), _free_port()
    servers = [Server("loadout", [sys.executable, "-m", "loadout", "serve", str(model),
                                  "--threads", t, "--host", "127.0.0.1", "--port", str(p2)],
                      p2, {}, work)]
    binary, why = (None, "--loadout-only") if args.loadout_only else llama_server_binary()
    if binary is not None:
        slots = str(args.batch)
        servers.insert(0, Server("llama-server", [
            str(binary), "-m", str(model), "--embedding", "-np", slots,
            "-c", str(512 * args.batch), "-b", str(ENCODE_TOKENS), "-ub", str(ENCODE_TOKENS),
            "-t", t, "-tb", t, "--host", "127.0.0.1", "--port", str(p1), "--no-webui"],
            p1, {}, work))
    elif not args.json:
        print(f"llama-server is not available ({why}); Loadout's figures only", flush=True)
    best: dict[str, dict[str, float]] = {}
    probe: dict[str, np.ndarray] = {}
    for round_ in range(args.rounds):
        for server in servers:
            with server:
                measure(server.port, batches[:1], 1)  # warm
                got = measure(server.port, batches, args.clients)
                probe[server.name] = vectors(server.port, batches[0])
            if not args.json:
                print(f"round {round_ + 1} {server.name:>12}: {got['embeddings_per_s']:8.1f} "
                      f"embeddings/s, {got['tokens_per_s']:9.0f} tokens/s "
                      f"({got['inputs']:.0f} inputs, {got['tokens']:.0f} tokens, "
                      f"{got['wall_s']:.2f} s)", flush=True)
            old = best.setdefault(server.name, dict(got))
            if got["embeddings_per_s"] > old["embeddings_per_s"]:
                best[server.name] = dict(got)
    result: dict[str, Any] = {
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "model": {"layers": shape.n_layers, "n_embd": shape.n_embd, "pooling": shape.pooling},
        "batch": args.batch, "requests": args.requests, "clients": args.clients,
        "threads": args.threads, "rounds": args.rounds, "loadout": best["loadout"],
        "llama_server": best.get("llama-server"), "llama_server_missing": why or None,
    }
    if "llama-server" in best:
        ref, ours = best["llama-server"], best["loadout"]
        result["ratio"] = ours["embeddings_per_s"] / ref["embeddings_per_s"]
        diff = float(np.max(np.abs(probe["loadout"] - probe["llama-server"])))
        result["max_abs_vector_difference"] = diff
        result["target"] = TARGET
        result["pass"] = result["ratio"] >= TARGET
        if not args.json:
            print(f"best: loadout {ours['embeddings_per_s']:.1f} embeddings/s "
                  f"({ours['tokens_per_s']:.0f} tokens/s) vs llama-server "
                  f"{ref['embeddings_per_s']:.1f} embeddings/s ({ref['tokens_per_s']:.0f} "
                  f"tokens/s) = {result['ratio']:.2f}x (target {TARGET}x); vectors agree "
                  f"to {diff:.1e}")
    print(json.dumps(result))
    return 0 if result.get("pass", True) else 1


if __name__ == "__main__":
    sys.exit(main())
