"""The cost per generated token of matching stop strings, as the answer grows.

Feeds a 10,000-character answer in 4-character pieces (about one token each) to the
engine's incremental matcher (:class:`engine.stop_strings.StopMatcher`) with the most stop
strings a request may carry, each of the longest length allowed and never matching (the
worst case: nothing ends the answer early). For comparison it runs the rescan the
scheduler did before (search the text's tail for every stop, then the longest suffix
that begins a stop, slicing prefix by prefix) with the same inputs. Prints the mean time
per token at the end of the answer for both (CPU time of this process).

Run: ``.venv/bin/python bench/stop_matching.py [--chars N] [--stops K] [--length L]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.server.request_model import DEFAULT_REQUEST_LIMITS  # noqa: E402
from engine.stop_strings import StopMatcher  # noqa: E402


def rescan(text: str, emitted: int, stops: tuple[str, ...]) -> int:
    """The former per-token work: a tail search per stop, then the held-back suffix."""
    start = max(0, emitted - max(len(s) for s in stops))
    hits = [i for i in (text.find(s, start) for s in stops) if i >= 0]
    if hits:
        return min(hits)
    best = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:k]):
                best = k
                break
    return -best


def run(chars: int, n_stops: int, length: int, partial: bool) -> None:
    # partial: the stops share the answer's prefixes (the matcher backs off often);
    # else they begin with a letter the answer never has (the rescan's worst case)
    head = "" if partial else "z"
    stops = tuple((head + "ab" * length)[:length - 1] + str(i % 10) for i in range(n_stops))
    pieces = [("abab" * 2)[:4] for _ in range(chars // 4)]
    tail = 200  # time the last pieces (the answer is longest there)
    matcher = StopMatcher(stops)
    t0 = time.process_time()
    for i, piece in enumerate(pieces):
        if i == len(pieces) - tail:
            t0 = time.process_time()
        assert matcher.feed(piece) is None
        _ = matcher.held
    incremental = (time.process_time() - t0) / tail
    text = ""
    emitted = 0
    for i, piece in enumerate(pieces):
        if i == len(pieces) - tail:
            t0 = time.process_time()
        text += piece
        held = rescan(text, emitted, stops)
        emitted = len(text) + min(0, held)
    before = (time.process_time() - t0) / tail
    kind = "sharing the answer's prefixes" if partial else "never begun"
    print(f"{n_stops} stops x {length} chars ({kind}), answer {chars} chars, "
          "per token at the end:")
    print(f"  incremental matcher: {incremental * 1e6:9.1f} us")
    print(f"  rescan (before):     {before * 1e6:9.1f} us")


def main() -> None:
    limits = DEFAULT_REQUEST_LIMITS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=10_000)
    parser.add_argument("--stops", type=int, default=limits.max_stop_sequences)
    parser.add_argument("--length", type=int, default=limits.max_stop_chars)
    args = parser.parse_args()
    for partial in (False, True):
        run(args.chars, args.stops, args.length, partial)


if __name__ == "__main__":
    main()
