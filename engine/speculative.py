"""Speculative decoding by n-gram (prompt) lookup: drafting and the per-request switch.

Drafting: the longest suffix (``NGRAM_MAX`` .. ``NGRAM_MIN`` tokens) of a slot's tokens that
occurred earlier in the same slot (prompt and output so far) proposes the tokens that
followed its latest earlier occurrence. Verification happens in the scheduler: the pending
token and the drafts go into the same ``llama_decode`` with logits at every position, the
target samples at each position with the slot's own chain, and a draft is accepted iff it
equals the token the target sampled there. The proposal is deterministic, so this keeps the
target's distribution exactly (and at temperature 0 every token is the target's argmax).

Adaptive: a request whose acceptance stays below ``MIN_ACCEPTANCE`` after ``PROBE_DRAFTS``
drafted tokens stops drafting; its metrics say so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

SPEC_MODES = ("off", "ngram")
NGRAM_MAX = 3
NGRAM_MIN = 1
PROBE_DRAFTS = 24  # drafted tokens before the switch may judge a request
MIN_ACCEPTANCE = 0.4  # below this, verifying drafts costs more than it gives on a CPU
SEARCH_WINDOW = 4096  # tokens of history searched for a match


def ngram_draft(history: list[int], k: int, n_max: int = NGRAM_MAX,
                n_min: int = NGRAM_MIN) -> list[int]:
    """Up to ``k`` tokens that followed the latest earlier occurrence of the history's suffix.

    The longest suffix (``n_max`` down to ``n_min`` tokens) with an earlier occurrence wins;
    an empty list when none occurs or ``k < 1``.
    """
    size = len(history)
    if k < 1 or size < n_min + 1:
        return []
    lo = max(0, size - SEARCH_WINDOW)
    for n in range(min(n_max, size - 1), n_min - 1, -1):
        suffix = history[size - n:]
        last = suffix[-1]
        # an occurrence ending at index e (exclusive end) must leave at least one token after it
        for end in range(size - 1, lo + n - 1, -1):
            if history[end - 1] != last or history[end - n:end] != suffix:
                continue
            return history[end:end + k]
    return []


@dataclass
class SpecState:
    """Speculation of one request: its mode, draft length and whether it is still on."""

    mode: str
    draft_tokens: int
    drafted: int = 0
    accepted: int = 0
    off_reason: str | None = None

    @property
    def on(self) -> bool:
        return self.mode != "off" and self.off_reason is None and self.draft_tokens > 0

    def record(self, drafted: int, accepted: int) -> None:
        """Count one verification; turn off when acceptance stays too low to pay."""
        self.drafted += drafted
        self.accepted += accepted
        if self.drafted >= PROBE_DRAFTS and self.accepted < MIN_ACCEPTANCE * self.drafted:
            self.off_reason = (f"acceptance {self.accepted / self.drafted:.0%} below "
                               f"{MIN_ACCEPTANCE:.0%}")
            log.info("speculation off for a request: %s", self.off_reason)

    def label(self) -> str | None:
        """What the metrics say: the mode, or why it turned off; None when never asked."""
        if self.mode == "off":
            return None
        if self.off_reason is not None:
            return f"{self.mode} off: {self.off_reason}"
        return self.mode
