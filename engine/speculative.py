"""Speculative decoding: n-gram drafting, the drafter interface and the per-request switch.

Drafters propose tokens after a slot's pending token: the n-gram (prompt lookup) drafter
here, a small draft model (:mod:`engine.draft_model`), the model's own NextN heads
(:mod:`engine.mtp`) or a DFlash block-diffusion drafter (:mod:`engine.dflash`).
Verification happens in the scheduler: the pending token and the drafts go into the same
``llama_decode`` with logits at every position, the target samples at each position with
the slot's own chain, and a draft is accepted iff it equals the token the target sampled
there. Every proposal is deterministic given the slot's tokens, so this
keeps the target's distribution exactly (and at temperature 0 every token is the target's
argmax).

N-gram drafting: the longest suffix (``NGRAM_MAX`` .. ``NGRAM_MIN`` tokens) of a slot's
tokens that occurred earlier in the same slot proposes the tokens that followed its latest
earlier occurrence; a one-token match is too weak to pay for its verification.

Adaptive, per request (:class:`SpecState`): the draft length halves toward what was
accepted after a rejection and doubles back after a fully accepted draft; drafting turns
off when acceptance stays below ``MIN_ACCEPTANCE``, or when steps with drafts yield fewer
tokens per second than plain steps (measured: plain steps happen when there is nothing to
draft, else a short probe of plain steps is run). The metrics say why it turned off.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from statistics import median
from typing import Protocol

log = logging.getLogger(__name__)

SPEC_MODES = ("off", "ngram", "draft", "mtp", "dflash")
NGRAM_MAX = 4
NGRAM_MIN = 2
PROBE_DRAFTS = 24  # drafted tokens before the acceptance switch may judge a request
MIN_ACCEPTANCE = 0.4  # below this, verifying drafts costs more than it gives on a CPU
COST_STEPS = 8  # steps with drafts before their speed is compared with plain steps
PLAIN_PROBE = 4  # plain steps measured (forced if none happened) for that comparison
COST_MARGIN = 0.9  # drafting stops only when its steps are clearly slower than plain ones
RATES_KEPT = 32  # recent per-step rates compared (medians: one stalled step decides nothing)
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


@dataclass(frozen=True)
class Run:
    """Consecutive tokens of one sequence in a decoded batch: where they sat and what."""

    seq: int
    index: int  # batch index of the first token
    pos: int  # position of the first token
    tokens: tuple[int, ...]


class Drafter(Protocol):
    """Something that proposes tokens for a slot and keeps its own state in step."""

    mode: str

    def admit(self, seq: int, reuse: int) -> int:
        """A sequence keeps its first ``reuse`` cells for a new request; returns how many
        this drafter can follow (the scheduler re-decodes the rest)."""
        ...

    def draft(self, seq: int, tokens: list[int], k: int) -> list[int]:
        """Up to ``k`` tokens to follow ``tokens`` (whose last one is not decoded yet)."""
        ...

    def decoded(self, n_tokens: int, runs: list[Run]) -> None:
        """The target decoded a batch of ``n_tokens`` holding ``runs``."""
        ...

    def rollback(self, seq: int, keep: int, row: int) -> None:
        """The target kept the sequence's first ``keep`` cells after verifying drafts;
        ``row`` is the kept token's row in the last run of ``seq``."""
        ...

    def free(self) -> None:
        """Release native resources."""
        ...


class NgramDrafter:
    """Prompt lookup: needs no state beyond the slot's own tokens."""

    mode = "ngram"

    def admit(self, seq: int, reuse: int) -> int:
        return reuse

    def draft(self, seq: int, tokens: list[int], k: int) -> list[int]:
        return ngram_draft(tokens, k)

    def decoded(self, n_tokens: int, runs: list[Run]) -> None:
        return None

    def rollback(self, seq: int, keep: int, row: int) -> None:
        return None

    def free(self) -> None:
        return None


@dataclass
class SpecState:
    """Speculation of one request: its mode, draft length and whether it is still on."""

    mode: str
    draft_tokens: int
    drafted: int = 0
    accepted: int = 0
    off_reason: str | None = None
    length: int = 0  # drafts asked for at the next step (adapts; 0: ``draft_tokens``)
    draft_rates: list[float] = field(default_factory=list)  # tokens/s of recent steps
    plain_rates: list[float] = field(default_factory=list)
    probe: int = 0  # plain steps still to run before the cost is judged

    def __post_init__(self) -> None:
        self.length = self.length or self.draft_tokens

    @property
    def on(self) -> bool:
        return self.mode != "off" and self.off_reason is None and self.draft_tokens > 0

    def wanted(self) -> int:
        """How many drafts to ask for at the next step (0: a plain step)."""
        if not self.on or self.probe > 0:
            return 0
        return self.length

    def turn_off(self, reason: str) -> None:
        """Stop drafting for this request, saying why."""
        if self.off_reason is None:
            self.off_reason = reason
            log.info("speculation off for a request: %s", reason)

    def record(self, drafted: int, accepted: int) -> None:
        """Count one verification; adapt the draft length; turn off at low acceptance."""
        self.drafted += drafted
        self.accepted += accepted
        if accepted == drafted:
            self.length = min(self.draft_tokens, max(1, self.length) * 2)
        else:
            self.length = max(1, min(self.length // 2, accepted + 1))
        if self.drafted >= PROBE_DRAFTS and self.accepted < MIN_ACCEPTANCE * self.drafted:
            self.turn_off(f"acceptance {self.accepted / self.drafted:.0%} below "
                          f"{MIN_ACCEPTANCE:.0%}")

    def timed(self, drafted: bool, emitted: int, seconds: float) -> None:
        """Count one decode step's wall time; turn off when drafting clearly does not pay
        (the median step with drafts below ``COST_MARGIN`` x the median plain step)."""
        rates = self.draft_rates if drafted else self.plain_rates
        rates.append(emitted / max(1e-9, seconds))
        del rates[:-RATES_KEPT]
        if not drafted:
            self.probe = max(0, self.probe - 1)
        if not self.on or len(self.draft_rates) < COST_STEPS or self.probe > 0:
            return
        if len(self.plain_rates) < PLAIN_PROBE:
            self.probe = PLAIN_PROBE - len(self.plain_rates)
            return
        with_drafts, plain = median(self.draft_rates), median(self.plain_rates)
        if with_drafts < COST_MARGIN * plain:
            self.turn_off(f"steps with drafts gave {with_drafts:.1f} t/s, plain steps "
                          f"{plain:.1f} t/s")

    def label(self) -> str | None:
        """What the metrics say: the mode, or why it turned off; None when never asked."""
        if self.mode == "off":
            return None
        if self.off_reason is not None:
            return f"{self.mode} off: {self.off_reason}"
        return self.mode
