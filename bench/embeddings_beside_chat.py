"""Does embedding with a chat model (``loadout serve --embeddings``) slow its chat decode?

The embedder encodes on its own thread with its own llama.cpp context; with an OpenMP build
that thread gets its own team of workers, and a process holding more OpenMP threads than
CPUs can make libgomp stop spinning at its barriers. This measures the chat side: the demo
model served with ``--embeddings`` (``--threads`` decode threads, one slot), the decode t/s
(the server's own ``timings.decode_tps``) of ``--chats`` greedy answers before any
embedding, then of as many after embedding requests have run, in ``--rounds`` fresh
servers; the medians of all before and all after figures are compared.

    python bench/embeddings_beside_chat.py [--threads 2] [--chats 4] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.engine.server_fixtures import ServerProcess  # noqa: E402

QUESTION = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]


def _decode_tps(client: Any, model: str) -> float:
    resp = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=96,
                                          temperature=0)
    return float(resp.model_extra["timings"]["decode_tps"])


def one_round(threads: int, chats: int) -> tuple[list[float], list[float]]:
    """Decode t/s of ``chats`` answers before and after embedding, on a fresh server."""
    import openai

    home = Path(tempfile.mkdtemp(prefix="embeddings-beside-chat-"))
    server = ServerProcess("demo", "--embeddings", "--parallel", "1", "--ctx", "1024",
                           "--threads", str(threads), home=home).start()
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0,
                               timeout=300)
        before = [_decode_tps(client, server.model) for _ in range(chats)]
        for _ in range(2):
            client.embeddings.create(model=server.model, encoding_format="float",
                                     input=["a sentence to embed, of a few words"] * 8)
        after = [_decode_tps(client, server.model) for _ in range(chats)]
        return before, after
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chats", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    args = parser.parse_args(argv)
    before: list[float] = []
    after: list[float] = []
    for i in range(args.rounds):
        b, a = one_round(args.threads, args.chats)
        before += b
        after += a
        if not args.json:
            print(f"round {i + 1}: decode t/s before {[round(x, 1) for x in b]}, after "
                  f"embedding {[round(x, 1) for x in a]}", flush=True)
    result = {"threads": args.threads, "chats": args.chats, "rounds": args.rounds,
              "median_decode_tps_before": statistics.median(before),
              "median_decode_tps_after": statistics.median(after),
              "ratio": statistics.median(after) / statistics.median(before)}
    if not args.json:
        print(f"median decode: {result['median_decode_tps_before']:.1f} t/s before, "
              f"{result['median_decode_tps_after']:.1f} t/s after embedding "
              f"({result['ratio']:.2f}x)")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
