"""Stop strings matched incrementally: each generated character is looked at once per stop
string (Knuth-Morris-Pratt), so matching costs time linear in the answer, however long the
answer and the stop strings grow."""

from __future__ import annotations

from collections.abc import Sequence


def _failure(pattern: str) -> list[int]:
    """For each prefix length k+1, the length of its longest proper border."""
    fail = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    return fail


class StopMatcher:
    """Finds the first stop string in a text fed piece by piece.

    Args:
        stops: the stop strings (empty ones are ignored).
    """

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = tuple(s for s in stops if s)
        self._fail = [_failure(s) for s in self.stops]
        self._state = [0] * len(self.stops)
        self._fed = 0

    def feed(self, piece: str) -> int | None:
        """Take the next piece of text.

        Returns:
            where (in the whole text fed so far) the earliest stop string that completes
            in this piece begins, or None when none completes.
        """
        best: int | None = None
        for i, stop in enumerate(self.stops):
            fail, k, n = self._fail[i], self._state[i], len(stop)
            for j, c in enumerate(piece):
                while k and stop[k] != c:
                    k = fail[k - 1]
                if stop[k] == c:
                    k += 1
                if k == n:
                    start = self._fed + j + 1 - n
                    best = start if best is None else min(best, start)
                    k = fail[k - 1]
                    break
            self._state[i] = k
        self._fed += len(piece)
        return best

    @property
    def held(self) -> int:
        """Length of the longest end of the text that begins some stop string (it must not
        be sent yet: the next piece may complete the stop)."""
        return max(self._state, default=0)
