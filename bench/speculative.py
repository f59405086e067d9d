"""N-gram speculative decoding in Loadout's engine, beside plain decoding and beside
llama.cpp's own ``llama-server --spec-type ngram-simple`` (built from the same source by
``bench/llama_tools.py``), on one model with the same threads.

Two prompts, each run greedily:

- edit: "repeat this code with one change" (the answer copies most of the prompt);
- creative: a short story (little to copy: the per-request switch should turn drafting
  off, keeping decode >= 0.95 x plain).

Sides alternate for ``--rounds`` rounds and the best decode t/s of each is kept (the
machine is shared; the best run is the least disturbed). Printed per prompt and side:
decode t/s, acceptance, tokens per step, what Loadout's switch did; then the ratios the
targets are about (ngram / plain, ngram / llama-server's n-gram) and whether Loadout's
answers with and without speculation are the same tokens.

    python bench/speculative.py [--model demo] [--threads 2] [--rounds 3] [--draft 8]
                                [--no-server]
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CODE = """def total_price(items, tax_rate, discount):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    if discount:
        subtotal -= subtotal * discount
    tax = subtotal * tax_rate
    return round(subtotal + tax, 2)
"""
PROMPTS = {
    # a raw completion: the model goes on writing the edited copy
    "edit": ("# shop/prices.py\n" + CODE + "\n\n# shop/prices_eu.py: the same function, "
             "with tax_rate renamed to vat\ndef total_price(items, vat, discount):\n"),
    "creative": "Write a short, original story about a lighthouse keeper who finds a "
                "strange map. Use vivid new images in every sentence.",
}


@dataclass
class Result:
    """One side's best run on one prompt."""

    decode_tps: float
    generated: int
    drafted: int
    accepted: int
    tokens_per_step: float | None
    note: str = ""
    tokens: tuple[int, ...] = ()

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None


def run_loadout(engine: Any, text: str, mode: str, draft: int, max_tokens: int) -> Result:
    from engine.requests import GenerationRequest, SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=max_tokens, spec_mode=mode,
                            draft_tokens=draft, loop_guard="off")
    if text.startswith("#"):
        request = GenerationRequest(prompt=text, params=params)
    else:
        request = GenerationRequest(messages=({"role": "user", "content": text},),
                                    params=params)
    final = engine.submit(request).result(600)
    m = final.metrics
    return Result(m.decode_tps or 0.0, m.generated_tokens, m.drafted_tokens,
                  m.accepted_tokens, m.tokens_per_step, m.speculation or "",
                  final.token_ids)


class LlamaServer:
    """llama.cpp's own server with n-gram speculation, on a free local port."""

    def __init__(self, binary: Path, model: Path, threads: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
             "-t", str(threads), "-tb", str(threads), "-c", "2048", "--parallel", "1",
             "--spec-type", "ngram-simple"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.close()
        raise RuntimeError("llama-server did not become ready")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, text: str, max_tokens: int) -> Result:
        if text.startswith("#"):
            path, doc = "/completion", {"prompt": text, "n_predict": max_tokens}
        else:
            path, doc = "/v1/chat/completions", {
                "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}
        doc.update(temperature=0.0, cache_prompt=True)
        req = urllib.request.Request(self.url + path, json.dumps(doc).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            answer = json.loads(r.read())
        t = answer["timings"]
        predicted = int(t["predicted_n"])
        drafted, accepted = int(t.get("draft_n", 0)), int(t.get("draft_n_accepted", 0))
        steps = predicted - accepted
        return Result(float(t["predicted_per_second"]), predicted, drafted, accepted,
                      predicted / steps if drafted and steps else None, "ngram-simple")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def line(name: str, r: Result) -> str:
    acc = "n/a" if r.acceptance is None else f"{r.acceptance:.0%} ({r.accepted}/{r.drafted})"
    per = "n/a" if r.tokens_per_step is None else f"{r.tokens_per_step:.2f}"
    note = f" | {r.note}" if r.note else ""
    return (f"  {name:<26} decode {r.decode_tps:6.1f} t/s | acceptance {acc} | "
            f"tokens/step {per} | {r.generated} tokens{note}")


def main() -> int:
    """Run the comparison and print one block per prompt."""
    from engine.launch import LaunchSpec
    from engine.models import resolve_local_model
    from engine.runtime import Engine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="demo")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--draft", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--no-server", action="store_true", help="skip llama-server")
    args = ap.parse_args()
    path = resolve_local_model(args.model)
    spec = LaunchSpec(str(path), n_ctx=2048, n_threads=args.threads)
    server = None
    if not args.no_server:
        sys.path.insert(0, str(ROOT / "bench"))
        from llama_tools import build

        server = LlamaServer(build(("llama-server",))["llama-server"], path, args.threads)
    print(f"model {path.name}, {spec.threads} threads for both, Loadout draft {args.draft}, "
          f"llama-server --spec-type ngram-simple (its defaults), {args.rounds} interleaved "
          f"rounds, best decode t/s of each side")
    try:
        with Engine(spec) as engine:
            for name, text in PROMPTS.items():
                best: dict[str, Result] = {}
                sides = ["off", "ngram"] + (["server"] if server is not None else [])
                for _ in range(args.rounds):
                    for side in sides:
                        if side == "server":
                            assert server is not None
                            r = server.run(text, args.max_tokens)
                        else:
                            r = run_loadout(engine, text, side, args.draft, args.max_tokens)
                        if side not in best or r.decode_tps > best[side].decode_tps:
                            best[side] = r
                report(name, best)
    finally:
        if server is not None:
            server.close()
    return 0


def report(name: str, best: dict[str, Result]) -> None:
    """Print one prompt's block: each side, the ratios and the targets."""
    off, on = best["off"], best["ngram"]
    print(f"[{name}]")
    print(line("Loadout, no speculation", off))
    print(line("Loadout, n-gram", on))
    srv = best.get("server")
    if srv is not None:
        print(line("llama-server, ngram-simple", srv))
    ratio = on.decode_tps / (off.decode_tps or 1.0)
    parts = [f"n-gram / plain {ratio:.2f}x"]
    if srv is not None:
        parts.append(f"n-gram / llama-server n-gram {on.decode_tps / (srv.decode_tps or 1):.2f}x")
    parts.append(f"same answer with and without speculation: {off.tokens == on.tokens}")
    print("  " + " | ".join(parts))
    if name == "edit" and srv is not None:
        checks = [("acceptance >= llama-server's",
                   (on.acceptance or 0) >= (srv.acceptance or 0)),
                  ("tokens/step >= llama-server's",
                   (on.tokens_per_step or 1) >= (srv.tokens_per_step or 1)),
                  ("decode >= 0.95x llama-server's", on.decode_tps >= 0.95 * srv.decode_tps),
                  ("decode >= 1.0x plain", ratio >= 1.0)]
    else:
        checks = [("decode >= 0.95x plain", ratio >= 0.95)]
    print("  targets: " + ", ".join(f"{k}: {'met' if ok else 'MISSED'}" for k, ok in checks))


if __name__ == "__main__":
    raise SystemExit(main())
