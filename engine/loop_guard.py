"""Detect degenerate output: one token repeated, a short pattern covering the recent output,
or a recent window made of a handful of distinct tokens.

Random-weight and over-quantized models loop; so do some models with a broken template.
The guard watches token ids (cheap, exact) incrementally: for each period ``p`` up to
``max_period`` it keeps the length of the current run where ``t[i] == t[i - p]``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class LoopGuardConfig:
    """Thresholds. A run of ``same_token`` identical tokens is a loop; so is a pattern of
    period <= ``max_period`` repeated ``min_repeats`` times that covers ``share`` of the
    last ``window`` tokens."""

    same_token: int = 256
    window: int = 256
    share: float = 0.5
    max_period: int = 64
    min_repeats: int = 3
    min_distinct_share: float = 1 / 16

    @property
    def pattern_tokens(self) -> int:
        """Tokens a periodic stretch must cover to count as a loop."""
        return max(2, int(self.window * self.share))


@dataclass(frozen=True)
class LoopVerdict:
    """What the guard found: ``kind`` is "token", "pattern" or "variety" (a full window of
    at most ``window * min_distinct_share`` distinct tokens); ``period`` in tokens."""

    kind: str
    period: int
    covered_tokens: int


class LoopGuard:
    """Feed generated token ids one at a time; :meth:`feed` returns a verdict on a loop."""

    def __init__(self, config: LoopGuardConfig | None = None) -> None:
        self.config = config or LoopGuardConfig()
        self._history: list[int] = []
        self._runs = [0] * (self.config.max_period + 1)
        self._recent: deque[int] = deque()
        self._counts: dict[int, int] = {}

    def reset(self) -> None:
        """Forget the history (after a retry)."""
        self._history.clear()
        self._runs = [0] * (self.config.max_period + 1)
        self._recent.clear()
        self._counts.clear()

    def feed(self, token: int) -> LoopVerdict | None:
        """Record one token; a verdict when the output has become a loop."""
        cfg = self.config
        hist = self._history
        hist.append(token)
        n = len(hist)
        runs = self._runs
        best: LoopVerdict | None = None
        for p in range(1, min(n - 1, cfg.max_period) + 1):
            if hist[n - 1 - p] == token:
                runs[p] += 1
                covered = runs[p] + p
                if p > 1 and best is None and covered >= cfg.pattern_tokens \
                        and covered >= cfg.min_repeats * p and runs[1] + 1 < covered:
                    best = LoopVerdict("pattern", p, covered)
            else:
                runs[p] = 0
        if runs[1] + 1 >= cfg.same_token:
            return LoopVerdict("token", 1, runs[1] + 1)
        if n > 4 * cfg.window:  # keep the history bounded; runs stay valid
            del hist[: n - 2 * cfg.window]
        if best is None:
            best = self._variety(token)
        else:
            self._variety(token)
        return best

    def _variety(self, token: int) -> LoopVerdict | None:
        cfg = self.config
        counts = self._counts
        self._recent.append(token)
        counts[token] = counts.get(token, 0) + 1
        if len(self._recent) > cfg.window:
            old = self._recent.popleft()
            counts[old] -= 1
            if not counts[old]:
                del counts[old]
        if len(self._recent) == cfg.window and len(counts) <= cfg.window * cfg.min_distinct_share:
            return LoopVerdict("variety", len(counts), cfg.window)
        return None
