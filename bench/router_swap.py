"""What serving many models costs: the router's swap time and its chat throughput.

1. Swap: a router over the demo and a small synthetic model with ``--models-max 1``
   (one resident at a time). Each round asks the small model once, then times a request
   to the demo from sent to answered (one token): the small model is unloaded and the
   demo loaded, planned and warmed up in between. Beside it, a fresh ``loadout serve
   demo``: process started to the first one-token answer (what a user without a router
   does to switch models: stop one server, start another).
2. Throughput: ``--streams`` concurrent streamed completions of ``--tokens`` tokens on the
   demo, through the router and through a plain ``loadout serve demo`` (same slots,
   context and threads; alternating rounds, best round of each kept), with
   ``bench/server_throughput.py``'s client. Target: the router >= 0.95 x plain serve.

    python bench/router_swap.py [--rounds 3] [--streams 8] [--tokens 128] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import server_throughput as st  # noqa: E402  (bench/ is on the path only here)
from router_load import Server  # noqa: E402

TARGET_THROUGHPUT = 0.95


def _ask(url: str, model: str) -> float:
    """Seconds from sending a one-token chat request to its answer."""
    import urllib.request

    body = json.dumps({"model": model, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", body,
                                 {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as resp:
        resp.read()
    return time.perf_counter() - t0


def _models_dir(tmp: Path) -> Path:
    from router_load import write_models

    from engine.demo import demo_model_path

    folder = tmp / "models"
    write_models(folder)
    for extra in ("smol-b", "smol-c"):
        (folder / f"{extra}.gguf").unlink()
    (folder / "demo-smollm.gguf").symlink_to(demo_model_path())
    return folder


def swap_times(tmp: Path, rounds: int, common: list[str]) -> dict[str, Any]:
    folder = _models_dir(tmp)
    home = tmp / "swap-home"
    home.mkdir()
    server = Server(["--models", str(folder), "--models-max", "1", "--min-residency", "0",
                     "--max-swaps", "0", *common], home)
    try:
        url = server.ready["url"]
        swaps = []
        for _ in range(rounds):
            _ask(url, "smol-a")
            swaps.append(_ask(url, "demo"))
    finally:
        server.stop()
    log = server.log_path.read_text(encoding="utf-8")
    loads = [float(s) for s in
             re.findall(r"loaded demo-smollm \(requested\) in ([\d.]+) s", log)]
    fresh = []
    for i in range(rounds):
        fhome = tmp / f"fresh-home-{i}"
        fhome.mkdir()
        t0 = time.perf_counter()
        plain = Server(["demo", *common], fhome)
        try:
            _ask(plain.ready["url"], "demo")
            fresh.append(time.perf_counter() - t0)
        finally:
            plain.stop()
    return {"router_swap_s": [round(s, 3) for s in swaps],
            "router_swap_s_median": round(statistics.median(swaps), 3),
            "router_demo_load_s_median": round(statistics.median(loads), 3) if loads else None,
            "fresh_serve_s": [round(s, 3) for s in fresh],
            "fresh_serve_s_median": round(statistics.median(fresh), 3)}


def _cpu_seconds(pid: int) -> float:
    """CPU time of the whole server process (every thread): what it spends per token
    does not change with other work on the machine the way speeds do."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def throughput(tmp: Path, rounds: int, streams: int, tokens: int, common: list[str]
               ) -> dict[str, Any]:
    folder = _models_dir(tmp / "tp")
    best: dict[str, dict[str, float]] = {}
    runs: dict[str, list[dict[str, float]]] = {"router": [], "plain": []}
    for i in range(rounds):
        for name, argv in (("router", ["--models", str(folder)]), ("plain", ["demo"])):
            home = tmp / f"tp-{name}-{i}"
            home.mkdir()
            server = Server([*argv, *common], home)
            try:
                url = server.ready["url"]
                host, port = url.removeprefix("http://").rsplit(":", 1)
                _ask(url, "demo")  # loads it (router) and warms both alike
                cpu0 = _cpu_seconds(server.proc.pid)
                result = asyncio.run(st._measure(host, int(port), streams, tokens,
                                                 {"model": "demo"}))
                used = _cpu_seconds(server.proc.pid) - cpu0
                result["cpu_ms_per_token"] = 1000 * used / (result["single_tokens"]
                                                            + result["aggregate_tokens"])
            finally:
                server.stop()
            runs[name].append(result)
            if result["aggregate_decode_tps"] > best.get(name, {}).get(
                    "aggregate_decode_tps", 0.0):
                best[name] = result
    ratio = best["router"]["aggregate_decode_tps"] / best["plain"]["aggregate_decode_tps"]
    cpu = {name: min(r["cpu_ms_per_token"] for r in rows) for name, rows in runs.items()}
    return {"streams": streams, "tokens": tokens,
            "cpu_ms_per_token": {k: round(v, 3) for k, v in cpu.items()},
            "cpu_ratio": round(cpu["router"] / cpu["plain"], 3),
            "router": {k: round(v, 2) for k, v in best["router"].items()},
            "plain": {k: round(v, 2) for k, v in best["plain"].items()},
            "aggregate_ratio": round(ratio, 3), "target": TARGET_THROUGHPUT,
            "passed": ratio >= TARGET_THROUGHPUT}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--ctx", type=int, default=512, help="context per slot")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--part", choices=("both", "swap", "throughput"), default="both")
    args = parser.parse_args(argv)
    common = ["--ctx", str(args.ctx), "--parallel", str(args.streams), "--threads",
              str(args.threads)]
    with tempfile.TemporaryDirectory(prefix="router-swap-") as tmp:
        report: dict[str, Any] = {"schema": "loadout.bench.router_swap/1",
                                  "threads": args.threads}
        if args.part in ("both", "swap"):
            report["swap"] = swap_times(Path(tmp), args.rounds, common)
        if args.part in ("both", "throughput"):
            report["throughput"] = throughput(Path(tmp), args.rounds, args.streams,
                                              args.tokens, common)
    print(json.dumps(report, indent=2))
    return 0 if report.get("throughput", {}).get("passed", True) else 1


if __name__ == "__main__":
    sys.exit(main())
