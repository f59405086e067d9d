"""Load test of ``loadout serve --models DIR``: many clients over models that do not all fit.

Three synthetic llama GGUFs (written by ``tests/helpers/gguf_factory.py``, or the GGUFs of
``--models``) are served with a RAM budget that holds two of them but not three
(``--ram-budget``, computed from the planner's figure for one model unless given).
``--clients`` threads each send chat requests (half streamed) for ``--duration`` seconds,
each to a model picked at random, so the router keeps swapping. Checked at the end:

- no request failed (any status but 200 is a failure; the client never retries);
- no load ran out of memory (the server's log has no "ran out of memory"), and the
  resident models' planned RAM, sampled every 0.1 s, never exceeded the budget;
- every unload was logged with its reason ("to make room for ...", "(idle N s)"), and
  the log's loads and unloads match ``/metrics``' per-model counters.

Prints one JSON document; exits 1 when a check fails.

    python bench/router_load.py [--duration 120] [--clients 12] [--max-tokens 8]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMOL = ("smol-a", "smol-b", "smol-c")
CTX, PARALLEL = 512, 2


def write_models(folder: Path) -> list[Path]:
    from tests.helpers.gguf_factory import Shape, write_llama

    shape = Shape(n_layers=4, n_embd=256, n_head=4, n_head_kv=2, head_dim=64, n_ff=512,
                  n_vocab=2048)
    folder.mkdir(parents=True, exist_ok=True)
    return [write_llama(folder / f"{name}.gguf", shape, seed=i) for i, name in enumerate(SMOL)]


def budget_for_two(paths: list[Path]) -> float:
    """GiB that hold the two largest models' plans but not all three."""
    from engine.hardware import detect
    from engine.server.router_plan import RouterPlanner, need_of
    from planner.request import Request

    planner = RouterPlanner(detect(measure=False), Request(context=CTX, parallel=PARALLEL,
                                                           advise=False))
    needs = sorted(need_of(planner.alone(p)).get("host", 0) for p in paths)
    two, three = sum(needs[-2:]), sum(needs)
    return (two + (three - two) / 2) / 1024**3


class Server:
    """The router as a child process; its stderr (the router's log) kept in a file."""

    def __init__(self, args: list[str], home: Path) -> None:
        env = {**os.environ, "LOADOUT_HOME": str(home), "HF_HUB_OFFLINE": "1"}
        self.log_path = home / "serve-stderr.log"
        with open(self.log_path, "w", encoding="utf-8") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "loadout", "serve", *args, "--port", "0",
                 "--ready-json"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err,
                text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server exited: " + self.log_path.read_text())
        self.ready: dict[str, Any] = json.loads(line)

    def get(self, path: str) -> str:
        import urllib.request

        with urllib.request.urlopen(self.ready["url"] + path, timeout=30) as resp:
            return str(resp.read().decode("utf-8"))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _client_loop(base_url: str, models: list[str], until: float, max_tokens: int,
                 seed: int, results: list[dict[str, Any]], lock: threading.Lock) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=300)
    rng = random.Random(seed)
    i = 0
    while time.monotonic() < until:
        model = rng.choice(models)
        stream = i % 2 == 0
        i += 1
        t0 = time.perf_counter()
        outcome: dict[str, Any] = {"model": model, "stream": stream}
        try:
            messages = [{"role": "user", "content": f"count to {i}"}]
            if stream:
                parts = list(client.chat.completions.create(
                    model=model, messages=messages, max_tokens=max_tokens, stream=True))
                ok = parts[-1].choices[0].finish_reason in ("length", "stop") \
                    and parts[0].model == model
            else:
                resp = client.chat.completions.create(model=model, messages=messages,
                                                      max_tokens=max_tokens)
                ok = resp.model == model and resp.choices[0].finish_reason in ("length",
                                                                                "stop")
            outcome["ok"] = ok
        except openai.APIError as exc:
            outcome["ok"] = False
            outcome["error"] = f"{type(exc).__name__}: {exc}"
        outcome["seconds"] = time.perf_counter() - t0
        with lock:
            results.append(outcome)


def _watch_residency(server: Server, until: float, peak: list[int]) -> None:
    """Sample ``/v1/models`` while the load runs: the most RAM the resident models' plans
    held at once, and the most models resident."""
    while time.monotonic() < until:
        models = json.loads(server.get("/v1/models"))["data"]
        resident = [m for m in models if m["planned_bytes"]]  # loaded, or placed to load
        held = sum(int(m["planned_bytes"].get("host", 0)) for m in resident)
        peak[0], peak[1] = max(peak[0], held), max(peak[1], len(resident))
        time.sleep(0.1)


def _metric(text: str, family: str) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for m in re.finditer(rf"^{family}\{{([^}}]*)\}} ([\d.e+]+)$", text, re.M):
        labels = tuple(re.findall(r'"([^"]*)"', m[1]))
        out[labels] = float(m[2])
    return out


def check_log(log: str, metrics: str) -> dict[str, Any]:
    """Loads and unloads in the log, each unload's reason, and their agreement with
    ``/metrics``."""
    loads = re.findall(r"loaded (\S+) \((\w+)\) in [\d.]+ s", log)
    unloads = re.findall(r"unloaded (\S+) (.*)$", log, re.M)
    unexplained = [u for u in unloads
                   if not re.match(r"(to make room for \S+: .+|\(idle \d+ s\))$", u[1])]
    counted_loads = sum(_metric(metrics, "loadout_model_loads_total").values())
    counted_unloads = sum(_metric(metrics, "loadout_model_unloads_total").values())
    return {"loads": len(loads), "unloads": len(unloads), "unexplained_unloads": unexplained,
            "metrics_loads": counted_loads, "metrics_unloads": counted_unloads,
            "out_of_memory": len(re.findall(r"ran out of memory", log)),
            "swap_examples": sorted({f"unloaded {m} {r}" for m, r in unloads})[:3]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="decode threads per model")
    parser.add_argument("--models", type=Path, default=None,
                        help="a folder of GGUFs (default: three synthetic models)")
    parser.add_argument("--ram-budget", type=float, default=None, metavar="GIB")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="router-load-") as tmp:
        folder = args.models or Path(tmp) / "models"
        paths = sorted(folder.glob("*.gguf")) if args.models else write_models(folder)
        budget = args.ram_budget or budget_for_two(paths)
        home = Path(tmp) / "home"
        home.mkdir()
        server = Server(["--models", str(folder), "--ram-budget", f"{budget:.6f}",
                         "--ctx", str(CTX), "--parallel", str(PARALLEL), "--threads",
                         str(args.threads), "--min-residency", "0", "--max-swaps", "0"],
                        home)
        try:
            models = list(server.ready["models"])
            results: list[dict[str, Any]] = []
            lock = threading.Lock()
            until = time.monotonic() + args.duration
            threads = [threading.Thread(target=_client_loop, args=(
                server.ready["base_url"], models, until, args.max_tokens, i, results, lock))
                for i in range(args.clients)]
            peak = [0, 0]  # the most bytes planned resident at once, and models
            watcher = threading.Thread(target=_watch_residency, args=(server, until, peak))
            for t in [*threads, watcher]:
                t.start()
            for t in [*threads, watcher]:
                t.join()
            metrics = server.get("/metrics")
        finally:
            server.stop()
        log = server.log_path.read_text(encoding="utf-8")
    failed = [r for r in results if not r["ok"]]
    seconds = sorted(r["seconds"] for r in results)
    report = {
        "schema": "loadout.bench.router_load/1", "duration_s": args.duration,
        "clients": args.clients, "models": models, "ram_budget_gib": round(budget, 4),
        "requests": len(results), "failed": len(failed),
        "failures": [r.get("error", "wrong answer") for r in failed][:5],
        "request_s_median": round(seconds[len(seconds) // 2], 3) if seconds else None,
        "request_s_max": round(seconds[-1], 3) if seconds else None,
        "peak_planned_mib": round(peak[0] / 1024**2, 1),
        "budget_mib": round(budget * 1024, 1), "peak_resident_models": peak[1],
        **check_log(log, metrics),
    }
    ok = (not failed and report["requests"] > 0 and report["out_of_memory"] == 0
          and not report["unexplained_unloads"] and report["unloads"] > 0
          and peak[0] <= budget * 1024**3
          and report["loads"] == report["metrics_loads"]
          and report["unloads"] == report["metrics_unloads"])
    report["passed"] = ok
    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
