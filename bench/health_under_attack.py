"""How long ``/health`` takes while clients attack ``loadout serve demo`` (loopback).

Three phases, each ``--seconds`` long, with ``/health`` asked every 50 ms throughout:

1. ``quiet``: nothing else.
2. ``heavy_bodies``: ``--senders`` clients send, in a loop, the corpus of heavy bodies
   (8 MB of numbers, a million short strings, 250 arrays of 1000 numbers, 8 MB of text
   in one message, nesting 100,000 deep); each must be answered 4xx (the text one, a
   valid chat with ``max_tokens`` 1 refused for its length, or answered).
3. ``idle_crowd``: ``--crowd`` sockets opened and left idle or half-sent (headers, or a
   body, never finished), reopened as the server closes them.

Prints one JSON document: per phase the ``/health`` latency (p50, p99, max, in ms), how
the attackers were answered, and the server's peak resident memory after it (``VmHWM``,
Linux only). Exit status 1 when any ``/health`` took 1 s or more.

    python bench/health_under_attack.py [--seconds 10] [--senders 3] [--crowd 300]
                                        [--bodies numbers_8mb,...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> dict[str, bytes]:
    """The heavy bodies, each under the 8 MiB body limit."""
    chat = b'{"model": "demo", "max_tokens": 1, "messages": '
    return {
        "numbers_8mb": b'{"model": "demo", "messages": [], "x": [' + b"1," * 3_900_000 +
                       b"1]}",
        "strings_1m": json.dumps({"model": "demo", "x": ["a,b"] * 1_000_000}).encode(),
        "arrays_250x1000": b'{"model": "demo", "x": [' + b",".join(
            [b"[" + b"1," * 999 + b"1]"] * 250) + b"]}",
        "text_8mb": chat + json.dumps([{"role": "user", "content": "a, b c. " * 1_000_000}]
                                      ).encode() + b"}",
        "deep_100k": chat + b"[" * 100_000 + b"]" * 100_000 + b"}",
    }


class Server:
    def __init__(self, home: Path) -> None:
        env = {**os.environ, "LOADOUT_HOME": str(home), "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loadout", "serve", "demo", "--parallel", "1", "--ctx",
             "512", "--threads", "1", "--port", "0", "--ready-json"], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        doc = json.loads(self.proc.stdout.readline())
        host, port = doc["url"].removeprefix("http://").rsplit(":", 1)
        self.address = (host, int(port))

    def peak_rss_mib(self) -> float | None:
        """The server's peak resident memory so far (Linux), in MiB."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return None
        kib = next((int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("VmHWM:")), None)
        return None if kib is None else round(kib / 1024, 1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _request(address: tuple[str, int], method: str, path: str, body: bytes | None = None
             ) -> tuple[int, float]:
    conn = http.client.HTTPConnection(*address, timeout=120)
    started = time.perf_counter()
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status, time.perf_counter() - started
    finally:
        conn.close()


def _senders(address: tuple[str, int], n: int, stop: threading.Event,
             answers: Counter[str], only: list[str]) -> list[threading.Thread]:
    bodies = [(k, v) for k, v in corpus().items() if not only or k in only]

    def loop(offset: int) -> None:
        i = offset
        while not stop.is_set():
            name, body = bodies[i % len(bodies)]
            i += 1
            try:
                status, _ = _request(address, "POST", "/v1/chat/completions", body)
                answers[f"{name}:{status}"] += 1
            except OSError as exc:
                answers[f"{name}:{type(exc).__name__}"] += 1

    return [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(n)]


def _crowd(address: tuple[str, int], n: int, stop: threading.Event,
           opened: Counter[str]) -> list[threading.Thread]:
    starts = [b"", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n",
              b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: application/json\r\nContent-Length: 900\r\n\r\n{\"model\""]

    def keep() -> None:
        socks: list[socket.socket] = []
        try:
            while not stop.is_set():
                socks = [s for s in socks if _open(s)]
                while len(socks) < n and not stop.is_set():
                    s = socket.create_connection(address, timeout=5)
                    s.sendall(starts[len(socks) % len(starts)])
                    s.setblocking(False)
                    socks.append(s)
                    opened["sockets"] += 1
                time.sleep(0.2)
        finally:
            for s in socks:
                s.close()

    return [threading.Thread(target=keep, daemon=True)]


def _open(s: socket.socket) -> bool:
    try:
        if s.recv(1, socket.MSG_PEEK) == b"":
            s.close()
            return False
    except BlockingIOError:
        return True
    except OSError:
        s.close()
        return False
    return True


def _phase(address: tuple[str, int], seconds: float,
           attackers: list[threading.Thread], stop: threading.Event) -> dict[str, Any]:
    for t in attackers:
        t.start()
    waits: list[float] = []
    statuses: Counter[int] = Counter()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        status, took = _request(address, "GET", "/health")
        statuses[status] += 1
        waits.append(took)
        time.sleep(0.05)
    stop.set()
    for t in attackers:
        t.join(timeout=120)
    waits.sort()
    return {"health_checks": len(waits), "health_status": dict(statuses),
            "p50_ms": round(1000 * waits[len(waits) // 2], 1),
            "p99_ms": round(1000 * waits[min(len(waits) - 1, int(len(waits) * 0.99))], 1),
            "max_ms": round(1000 * waits[-1], 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--senders", type=int, default=3)
    parser.add_argument("--crowd", type=int, default=300)
    parser.add_argument("--bodies", default="", metavar="NAME,...",
                        help="send only these bodies of the corpus (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="health-attack-") as tmp:
        server = Server(Path(tmp))
        try:
            report: dict[str, Any] = {}
            report["quiet"] = _phase(server.address, args.seconds, [], threading.Event())
            report["quiet"]["peak_rss_mib"] = server.peak_rss_mib()
            stop, answers = threading.Event(), Counter[str]()
            report["heavy_bodies"] = _phase(
                server.address, args.seconds,
                _senders(server.address, args.senders, stop, answers,
                         [b for b in args.bodies.split(",") if b]), stop)
            report["heavy_bodies"]["answers"] = dict(sorted(answers.items()))
            report["heavy_bodies"]["peak_rss_mib"] = server.peak_rss_mib()
            stop, opened = threading.Event(), Counter[str]()
            report["idle_crowd"] = _phase(server.address, args.seconds,
                                          _crowd(server.address, args.crowd, stop, opened),
                                          stop)
            report["idle_crowd"]["sockets_opened"] = opened["sockets"]
        finally:
            server.stop()
    print(json.dumps(report, indent=1))
    worst = max(p["max_ms"] for p in report.values())
    ok = worst < 1000 and all(set(p["health_status"]) == {200} for p in report.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
