"""Decode throughput of ``loadout serve`` against llama.cpp's own ``llama-server``.

Both servers run on the same machine, model, threads and slot count (``-np N`` /
``--parallel N``), in the same run, alternating rounds; ``llama-server`` is built from the
engine's own sdist by ``bench/llama_tools.py`` (kept in a cache folder, never committed).
A light asyncio client (raw HTTP/1.1, the same code for both) measures:

- single-stream decode t/s: one streamed completion of ``--tokens`` tokens, generated
  tokens after the first / time from the first to the last streamed token;
- aggregate decode t/s: ``--streams`` concurrent streams of ``--tokens`` tokens each,
  (all tokens - one per stream) / (first token of any stream -> last token of all);
- the CPU time of ``loadout serve``'s main thread (the asyncio loop: HTTP and SSE) per
  generated token: what the server adds on top of the engine, a figure that other work
  on a shared machine does not distort the way it distorts speeds;
- each server's whole-process CPU time per generated token over the ``--streams``
  streams (all threads: decode, sampling, HTTP): the same figure for both servers, and
  the one to compare when other work on the machine makes the speeds noisy.

Per decode step of the ``--streams`` run, each server's figures are printed beside the
round's: slots in the step (llama-server's ``n_busy_slots_per_decode`` over its
``n_decode_total``, from its ``--metrics``) and, for ``loadout serve``, from the sums of
its status (:class:`engine.metrics.StepStats`): tokens decoded, milliseconds inside
``llama_decode``, in the step's Python work, between two steps, and the time each request
waited for a slot. Each round also shows its ratios to llama-server's figures of the same
round and the machine's load: the noise of a shared machine, next to the best rounds.

Flash attention is set alike on both sides: ``llama-server`` is given the setting
``loadout serve``'s plan chose (``-fa on|off``); its own default, ``auto``, turns it on
for a CPU, where the planner turns it off for an f16 cache (llama.cpp's CPU kernel reads
a deep cache slower), which would compare two attention kernels rather than two servers.
``--llama-fa auto,off`` runs llama-server once per setting listed (the first one is the
reference).

``--code DIR`` adds another ``loadout serve``, run from a checkout of another commit
(``DIR/.venv``'s Python if it has one), to the same interleaved rounds: an older and a
newer engine measured side by side.

The prompt is a counting sequence that greedy decoding continues for hundreds of tokens,
so every stream really generates ``--tokens`` tokens. The best round of each side is kept
(on a shared machine the best run is the one least disturbed). Targets: aggregate >= 1.0 x
llama-server, single stream >= 0.95 x.

    python bench/server_throughput.py [--model demo] [--streams 8] [--tokens 128]
                                      [--threads N] [--rounds 3] [--code DIR]
                                      [--llama-fa same|auto|on|off[,...]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT = "1, 2, 3, 4, 5, 6, 7, 8,"
TARGET_AGGREGATE = 1.0
TARGET_SINGLE = 0.95


@dataclass
class StreamResult:
    first: float
    last: float
    tokens: int


async def _stream(host: str, port: int, body: dict[str, Any]) -> StreamResult:
    """POST a streaming completion; times of the first and last token, tokens generated."""
    reader, writer = await asyncio.open_connection(host, port)
    payload = json.dumps(body).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: %s\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n\r\n" % (host.encode(), len(payload)) + payload)
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"server answered {status!r}: {await reader.read(2000)!r}")
    first = last = 0.0
    tokens = 0
    while True:
        line = await reader.readline()
        if not line:
            break
        if not line.startswith(b"data: {"):
            continue
        now = time.perf_counter()
        doc = json.loads(line[6:])
        if doc.get("choices") and doc["choices"][0].get("text"):
            first = first or now
            last = now
        if doc.get("usage"):
            tokens = int(doc["usage"]["completion_tokens"])
    writer.close()
    return StreamResult(first, last, tokens)


def _body(tokens: int, extra: dict[str, Any]) -> dict[str, Any]:
    return {"model": "bench", "prompt": PROMPT, "max_tokens": tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}, **extra}


def _model_id(host: str, port: int) -> str:
    import urllib.request

    with urllib.request.urlopen(f"http://{host}:{port}/v1/models", timeout=10) as resp:
        return str(json.loads(resp.read())["data"][0]["id"])


async def _single(host: str, port: int, tokens: int,
                  extra: dict[str, Any]) -> dict[str, float]:
    """One stream's decode speed."""
    extra = {"model": _model_id(host, port), **extra}
    one = await _stream(host, port, _body(tokens, extra))
    return {"single_decode_tps": (one.tokens - 1) / (one.last - one.first),
            "single_tokens": one.tokens}


async def _aggregate(host: str, port: int, streams: int, tokens: int,
                     extra: dict[str, Any]) -> dict[str, float]:
    """``streams`` concurrent streams' aggregate decode speed."""
    extra = {"model": _model_id(host, port), **extra}
    results = await asyncio.gather(*(_stream(host, port, _body(tokens, extra))
                                     for _ in range(streams)))
    total = sum(r.tokens for r in results)
    window = max(r.last for r in results) - min(r.first for r in results)
    return {"aggregate_decode_tps": (total - streams) / window, "aggregate_tokens": total}


def _main_thread_cpu(pid: int) -> float:
    """CPU seconds of a process's main thread: for ``loadout serve`` the event loop, i.e.
    the HTTP / SSE work (the engine decodes on its own thread)."""
    import psutil

    for thread in psutil.Process(pid).threads():
        if thread.id == pid:
            return float(thread.user_time + thread.system_time)
    return 0.0


def _process_cpu(pid: int) -> float:
    """CPU seconds of a whole process, all threads (user + system)."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def _get(port: int, path: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
        return bytes(resp.read())


def _step_sums(server: Server) -> dict[str, float] | None:
    """The server's decode-step sums so far: ``loadout serve``'s ``steps`` status
    (:class:`engine.metrics.StepStats`), or llama-server's ``llama_decode`` calls and busy
    slots from its Prometheus metrics; None when the server has neither (an older one)."""
    if server.name.startswith("llama-server"):
        values = {}
        for line in _get(server.port, "/metrics").decode().splitlines():
            name, _, value = line.partition(" ")
            if name.startswith("llamacpp:"):
                values[name[9:]] = float(value)
        if "n_decode_total" not in values:
            return None
        steps = values["n_decode_total"]
        return {"steps": steps,
                "generating_slots": steps * values.get("n_busy_slots_per_decode", 0.0)}
    doc = json.loads(_get(server.port, "/v1/loadout/status"))
    steps = (doc.get("engine") or {}).get("steps")
    return {k: float(v) for k, v in steps.items()} if isinstance(steps, dict) else None


def _step_breakdown(before: dict[str, float] | None, after: dict[str, float] | None,
                    wall_s: float) -> dict[str, float]:
    """Per decode step over one run of ``wall_s`` seconds: slots in the step, tokens
    decoded, and (``loadout serve``) milliseconds inside ``llama_decode``, in the step's
    Python work around it, and between two steps (delivering the chunks, admission); and
    the milliseconds of the run outside any step or gap between two (the requests'
    arrival before the first step, the last events after the last one)."""
    if before is None or after is None:
        return {}
    d = {k: after[k] - before.get(k, 0.0) for k in after}
    steps = max(1.0, d["steps"])
    out = {"steps": d["steps"], "slots_per_step": d["generating_slots"] / steps,
           "wall_ms_per_step": 1000 * wall_s / steps}
    if "step_s" in d:
        out.update(tokens_per_step=d["batch_tokens"] / steps,
                   decode_ms_per_step=1000 * d["decode_s"] / steps,
                   python_ms_per_step=1000 * (d["step_s"] - d["decode_s"]) / steps,
                   between_steps_ms=1000 * d.get("between_s", 0.0) / steps,
                   outside_steps_ms=1000 * (wall_s - d["step_s"] - d.get("between_s", 0.0)),
                   queue_ms_per_request=1000 * d["queue_s"] / max(1.0, d["admitted"]))
    return out


def _planned_flash_attn(model: str, ctx: int, streams: int, threads: int) -> str:
    """``on`` or ``off``: what ``loadout serve`` with these options loads with."""
    from engine.planned_launch import plan_launch

    spec = plan_launch(model, context=max(64, ctx), parallel=streams, n_threads=threads).spec
    return {"on": "on", "off": "off"}.get(spec.flash_attn, "auto")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_health(port: int, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited while starting")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise TimeoutError("the server did not become healthy")


class Server:
    """One server process, started and stopped around a round."""

    def __init__(self, name: str, argv: list[str], port: int, extra: dict[str, Any],
                 log_dir: Path, cwd: Path = ROOT) -> None:
        self.name, self.argv, self.port, self.extra = name, argv, port, extra
        self.log = log_dir / f"{name}.log"
        self.cwd = cwd

    def __enter__(self) -> Server:
        env = {**os.environ, "LOADOUT_HOME": str(self.log.parent / "home")}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, env=env,
                                         cwd=self.cwd)
        _wait_health(self.port, self.proc)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--ctx", type=int, default=512, help="context per slot")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    parser.add_argument("--llama-fa", default="same",
                        help="llama-server's flash attention: same (as loadout's plan), "
                             "auto, on, off; a comma list runs one llama-server per setting")
    parser.add_argument("--code", type=Path, action="append", default=[],
                        help="also run loadout serve from this checkout (repeatable)")
    args = parser.parse_args(argv)

    from bench.llama_tools import build
    from engine.models import resolve_local_model

    model = resolve_local_model(args.model)
    llama_server = build(("llama-server",))["llama-server"]
    log_dir = Path(tempfile.mkdtemp(prefix="server-throughput-"))
    np_, ctx, t = str(args.streams), args.ctx, str(args.threads)
    p2 = _free_port()
    serve = ["serve", str(model), "--parallel", np_, "--ctx", str(ctx), "--threads", t,
             "--host", "127.0.0.1"]
    servers = []
    planned = _planned_flash_attn(str(model), args.ctx, args.streams, args.threads)
    llama_fa = [planned if fa == "same" else fa for fa in args.llama_fa.split(",")]
    for i, fa in enumerate(llama_fa):
        port = _free_port()
        servers.append(Server("llama-server" if i == 0 else f"llama-server-fa-{fa}",
                              [str(llama_server), "-m", str(model), "-np", np_,
                               "-c", str(ctx * args.streams), "-t", t, "-tb", t, "-fa", fa,
                               "--host", "127.0.0.1", "--port", str(port), "--no-webui",
                               "--metrics"],
                              port, {}, log_dir))
    servers += [
        Server("loadout", [sys.executable, "-m", "loadout", *serve, "--port", str(p2)],
               p2, {}, log_dir),
    ]
    for code in args.code:
        code = code.resolve()
        python = code / ".venv" / "bin" / "python"
        port = _free_port()
        servers.append(Server(f"loadout@{code.name}",
                              [str(python if python.is_file() else sys.executable),
                               "-m", "loadout", *serve, "--port", str(port)],
                              port, {}, log_dir, cwd=code))
    best: dict[str, dict[str, float]] = {}
    rounds: list[dict[str, dict[str, float]]] = []  # each round's figures, by server
    for round_ in range(args.rounds):
        for server in servers:
            with server:
                asyncio.run(_single("127.0.0.1", server.port, 16, server.extra))  # warm
                http_before = _main_thread_cpu(server.proc.pid)
                got = asyncio.run(_single("127.0.0.1", server.port, args.tokens,
                                          server.extra))
                cpu_before = _process_cpu(server.proc.pid)
                sums_before, t_before = _step_sums(server), time.perf_counter()
                got.update(asyncio.run(_aggregate("127.0.0.1", server.port, args.streams,
                                                  args.tokens, server.extra)))
                wall = time.perf_counter() - t_before
                cpu = _process_cpu(server.proc.pid) - cpu_before
                steps = _step_breakdown(sums_before, _step_sums(server), wall)
                http_cpu = _main_thread_cpu(server.proc.pid) - http_before
            got["cpu_ms_per_token"] = 1000 * cpu / got["aggregate_tokens"]
            if server.name.startswith("loadout"):  # llama-server decodes on its main thread
                got["http_cpu_ms_per_token"] = 1000 * http_cpu / (
                    got["single_tokens"] + got["aggregate_tokens"])
            got["load_1min"] = os.getloadavg()[0]
            ref_round = rounds[-1].get("llama-server") if rounds else None
            if server.name == "llama-server":
                rounds.append({})
            rounds[-1][server.name] = dict(got)
            if not args.json:
                ratios = "" if ref_round is None or server.name == "llama-server" else (
                    f" = {got['single_decode_tps'] / ref_round['single_decode_tps']:.2f}x / "
                    f"{got['aggregate_decode_tps'] / ref_round['aggregate_decode_tps']:.2f}x "
                    f"llama-server's this round")
                print(f"round {round_ + 1} {server.name:>12}: single "
                      f"{got['single_decode_tps']:7.1f} t/s decode, {args.streams} streams "
                      f"{got['aggregate_decode_tps']:7.1f} t/s aggregate decode "
                      f"({got['single_tokens']:.0f} / {got['aggregate_tokens']:.0f} tokens), "
                      f"{got['cpu_ms_per_token']:.2f} ms CPU per token, load "
                      f"{got['load_1min']:.2f}{ratios}", flush=True)
                if steps:
                    print("    per decode step: " + ", ".join(
                        f"{k} {v:.2f}" for k, v in steps.items()), flush=True)
            got.update({f"step_{k}": v for k, v in steps.items()})
            old = best.setdefault(server.name, dict(got))
            for key in ("single_decode_tps", "aggregate_decode_tps"):
                old[key] = max(old[key], got[key])
            for key in ("cpu_ms_per_token", "http_cpu_ms_per_token"):
                if key in got:
                    old[key] = min(old[key], got[key])
    ref, ours = best["llama-server"], best["loadout"]
    result = {
        "load_average": [round(x, 2) for x in os.getloadavg()],  # other work on the machine
        "model": model.name, "streams": args.streams, "tokens": args.tokens,
        "threads": args.threads, "rounds": args.rounds, "llama_server": ref, "loadout": ours,
        "flash_attn": {"loadout": planned, "llama_server": llama_fa},
        "single_ratio": ours["single_decode_tps"] / ref["single_decode_tps"],
        "aggregate_ratio": ours["aggregate_decode_tps"] / ref["aggregate_decode_tps"],
        "targets": {"single_ratio": TARGET_SINGLE, "aggregate_ratio": TARGET_AGGREGATE},
        "others": {name: got for name, got in best.items()
                   if name not in ("llama-server", "loadout")},
        # the noise: each round's ratios to llama-server's figures of the same round
        "round_ratios": [
            {name: {"single": got["single_decode_tps"] / r["llama-server"]["single_decode_tps"],
                    "aggregate": got["aggregate_decode_tps"]
                    / r["llama-server"]["aggregate_decode_tps"], "load_1min": got["load_1min"]}
             for name, got in r.items() if name != "llama-server"} for r in rounds],
    }
    result["pass"] = result["single_ratio"] >= TARGET_SINGLE and \
        result["aggregate_ratio"] >= TARGET_AGGREGATE
    if not args.json:
        print(f"best single-stream decode: loadout {ours['single_decode_tps']:.1f} t/s vs "
              f"llama-server {ref['single_decode_tps']:.1f} t/s = "
              f"{result['single_ratio']:.2f}x (target {TARGET_SINGLE}x)")
        print(f"loadout serve's HTTP/SSE thread: {ours['http_cpu_ms_per_token']:.3f} ms CPU "
              f"per generated token")
        print(f"best aggregate decode ({args.streams} streams x {args.tokens} tokens): loadout "
              f"{ours['aggregate_decode_tps']:.1f} t/s vs llama-server "
              f"{ref['aggregate_decode_tps']:.1f} t/s = {result['aggregate_ratio']:.2f}x "
              f"(target {TARGET_AGGREGATE}x)")
        for name, got in best.items():
            print(f"{name:>12}: {got['cpu_ms_per_token']:.2f} ms process CPU per token over "
                  f"the {args.streams} streams (least of the rounds), best aggregate "
                  f"{got['aggregate_decode_tps']:.1f} t/s")
    print(json.dumps(result))
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
