"""The router's guard against thrash: when a load would unload another model.

Alternating two model names forced a reload per request (5-36 s each), and the clients of
the model that was unloaded waited for its reload behind the other's. Two rules decide
whether a load may unload a model now; when not, every request waiting for that load gets
503 ``model_busy`` or ``model_swap_limited`` with ``Retry-After`` (the seconds until the
rule would allow it), and the loaded model keeps serving its own requests first:

- **minimum residency**: a model loaded less than ``min_residency_s`` ago is not unloaded
  while it has work (requests in flight or waiting for it);
- **swap rate**: at most ``max_swaps`` loads that unload another model in any
  ``swap_window_s`` seconds.

A load into free memory unloads nothing and is never limited.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence

from engine.server.errors import ApiError

Victim = tuple[str, float, bool]  # model id, when it was loaded (monotonic), has work


class ResidencyGuard:
    """Decides whether a load may unload the models it must (see the module).

    Args:
        min_residency_s: the minimum residency of a model with work.
        max_swaps: loads that unload another model per window (None: no limit).
        swap_window_s: the window, in seconds.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, min_residency_s: float, max_swaps: int | None, swap_window_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.min_residency_s = min_residency_s
        self.max_swaps = max_swaps
        self.swap_window_s = swap_window_s
        self.clock = clock
        self._swaps: deque[float] = deque()

    def check(self, loading: str, victims: Sequence[Victim]) -> None:
        """Allow the load of ``loading`` that unloads ``victims``, and count it as a swap.

        Raises:
            ApiError: 503 with ``Retry-After`` when a rule forbids it now.
        """
        if not victims:
            return
        now = self.clock()
        for victim, loaded_at, busy in victims:
            left = loaded_at + self.min_residency_s - now
            if busy and left > 0:
                raise _retry(f"the model '{loading}' needs the memory of '{victim}', which "
                             f"was loaded {now - loaded_at:.0f} s ago and is answering "
                             f"requests; it stays at least {self.min_residency_s:g} s",
                             "model_busy", left)
        while self._swaps and self._swaps[0] <= now - self.swap_window_s:
            self._swaps.popleft()
        if self.max_swaps is not None and len(self._swaps) >= self.max_swaps:
            left = self._swaps[0] + self.swap_window_s - now
            raise _retry(f"the model '{loading}' would unload '{victims[0][0]}', and "
                         f"{len(self._swaps)} models were swapped in the last "
                         f"{self.swap_window_s:g} s (the limit)", "model_swap_limited", left)
        self._swaps.append(now)


def _retry(message: str, code: str, seconds: float) -> ApiError:
    after = max(1, math.ceil(seconds))
    return ApiError(503, f"{message}; retry in {after} s", code=code,
                    headers={"Retry-After": str(after)})


__all__ = ["ResidencyGuard"]
