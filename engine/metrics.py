"""Speed figures, one definition everywhere (see docs/speed-figures.md).

- TTFT: request received -> first generated token (queueing + prompt processing).
- Prefill t/s: new prompt tokens / prompt-processing time (cached tokens counted apart).
- Decode t/s: generated tokens after the first / time from first to last token.
- End-to-end t/s: generated tokens / (request received -> last token).
- Decode t/s of all requests: the tokens every slot together decoded (each request's tokens
  after its first, as in its own decode t/s) per wall second, over the last few seconds
  (from when decoding began, if later); what a server delivers to all its clients.
- Acceptance: accepted / drafted tokens, and tokens per decode step, when speculating.
- Decode overhead: the share of the decode time (first -> last token) spent outside
  llama.cpp's ``llama_decode`` (sampling, detokenizing, streaming, speculation's drafting):
  what the engine costs on top of llama.cpp, measured over the same seconds.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestTimer:
    """Collects the instants of one request and derives the figures from them."""

    received: float = field(default_factory=time.perf_counter)
    prefill_start: float | None = None
    prefill_end: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    decode_steps: int = 0
    speculation: str | None = None  # the mode, or why it turned off (None: not asked)
    native_s: float = 0.0  # seconds inside llama_decode over the steps after the first token
    images: int = 0  # images in the prompt, their tokens, and (in the prefill time) the
    image_tokens: int = 0  # seconds the vision encoder took and the seconds their
    image_encode_s: float = 0.0  # embeddings took to decode into the sequence
    image_decode_s: float = 0.0
    # the engine's decode t/s of all requests, which token() feeds
    rate: DecodeRate | None = field(default=None, repr=False, compare=False)

    def prefill_started(self) -> None:
        self.prefill_start = time.perf_counter()

    def prefill_done(self) -> None:
        self.prefill_end = time.perf_counter()

    def token(self, count: int = 1) -> None:
        """Record ``count`` generated tokens arriving now."""
        now = time.perf_counter()
        first = self.first_token is None
        if first:
            self.first_token = now
        self.last_token = now
        self.generated_tokens += count
        if self.rate is not None:
            self.rate.decoded(count - 1 if first else count, now, first=first)

    def snapshot(self) -> Metrics:
        """The figures so far (final once the request has ended)."""
        now = time.perf_counter()
        ttft = (self.first_token - self.received) if self.first_token is not None else None
        new_prompt = max(0, self.prompt_tokens - self.cached_tokens)
        prefill_s = None
        if self.prefill_start is not None and self.prefill_end is not None:
            prefill_s = self.prefill_end - self.prefill_start
        prefill_tps = new_prompt / prefill_s if prefill_s and new_prompt else None
        decode_tps = None
        if self.first_token is not None and self.last_token is not None \
                and self.generated_tokens > 1 and self.last_token > self.first_token:
            decode_tps = (self.generated_tokens - 1) / (self.last_token - self.first_token)
        end = self.last_token if self.last_token is not None else now
        e2e_tps = self.generated_tokens / (end - self.received) if self.generated_tokens \
            and end > self.received else None
        overhead = None
        if decode_tps is not None and self.native_s > 0.0:
            assert self.first_token is not None and self.last_token is not None
            overhead = max(0.0, 1.0 - self.native_s / (self.last_token - self.first_token))
        acceptance = self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None
        per_step = self.generated_tokens / self.decode_steps if self.decode_steps else None
        return Metrics(ttft_s=ttft, prefill_tps=prefill_tps, decode_tps=decode_tps,
                       e2e_tps=e2e_tps, prompt_tokens=self.prompt_tokens,
                       cached_tokens=self.cached_tokens,
                       generated_tokens=self.generated_tokens, prefill_s=prefill_s,
                       drafted_tokens=self.drafted_tokens,
                       accepted_tokens=self.accepted_tokens, acceptance=acceptance,
                       tokens_per_step=per_step, speculation=self.speculation,
                       decode_overhead=overhead, images=self.images,
                       image_tokens=self.image_tokens,
                       image_encode_s=self.image_encode_s if self.images else None,
                       image_decode_s=self.image_decode_s if self.images else None)


@dataclass(frozen=True)
class Metrics:
    """The speed figures of one request. ``None`` where a figure is undefined (yet)."""

    ttft_s: float | None
    prefill_tps: float | None
    decode_tps: float | None
    e2e_tps: float | None
    prompt_tokens: int
    cached_tokens: int
    generated_tokens: int
    prefill_s: float | None = None
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    acceptance: float | None = None
    tokens_per_step: float | None = None
    speculation: str | None = None
    decode_overhead: float | None = None
    images: int = 0
    image_tokens: int = 0
    image_encode_s: float | None = None  # inside prefill_s and TTFT
    image_decode_s: float | None = None  # the images' embeddings into the cache (likewise)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def speed_line(self) -> str:
        """One line with every figure named (never a bare "t/s")."""

        def fmt(value: float | None, unit: str, digits: int = 1) -> str:
            return "n/a" if value is None else f"{value:.{digits}f} {unit}"

        parts = [
            f"TTFT {fmt(self.ttft_s, 's', 2)}",
            f"prefill {fmt(self.prefill_tps, 't/s')}",
            f"decode {fmt(self.decode_tps, 't/s')}",
            f"end-to-end {fmt(self.e2e_tps, 't/s')}",
            f"{self.prompt_tokens} prompt ({self.cached_tokens} cached)"
            f" + {self.generated_tokens} generated tokens",
        ]
        if self.images:
            parts.append(f"{self.images} image(s), {self.image_tokens} tokens, "
                         f"encoded in {fmt(self.image_encode_s, 's', 2)}")
        if self.acceptance is not None:
            parts.append(f"acceptance {self.acceptance:.0%}, "
                         f"{fmt(self.tokens_per_step, 'tokens/step', 2)}")
        return " | ".join(parts)


DECODE_WINDOW_S = 4.0


class DecodeRate:
    """The engine's decode t/s of all requests: tokens decoded by every slot together per
    wall second over the last ``window_s`` seconds, or since decoding began when that is
    later. Fed by each request's :class:`RequestTimer` (engine thread), read by the status
    (any thread).

    Args:
        window_s: how far back the figure looks.
    """

    def __init__(self, window_s: float = DECODE_WINDOW_S) -> None:
        self.window_s = window_s
        self._events: deque[tuple[float, int]] = deque()  # (instant, tokens decoded then)
        self._since: float | None = None  # when decoding began (after a pause of a window)
        self._last: float | None = None  # the last token recorded
        self._lock = threading.Lock()

    def decoded(self, count: int, now: float, *, first: bool = False) -> None:
        """Record ``count`` tokens decoded at ``now``; ``first``: a request's first token
        arrived with them (it ends its prefill: not counted, but decoding begins)."""
        with self._lock:
            if self._last is None or self._last < now - self.window_s:
                self._events.clear()  # decoding begins (again, after a pause)
                self._since = now
            self._last = now
            if count > 0:
                self._events.append((now, count))
            self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop what left the window (on every token too: nothing may read the figure)."""
        start = now - self.window_s
        while self._events and self._events[0][0] <= start:
            self._events.popleft()

    def tokens_per_second(self, now: float | None = None) -> float:
        """The figure at ``now`` (default: now); 0 when nothing was decoded in the window."""
        now = time.perf_counter() if now is None else now
        with self._lock:
            self._forget(now)
            if not self._events or self._since is None:
                return 0.0
            start = max(now - self.window_s, self._since)
            tokens = sum(n for _, n in self._events)
        return tokens / (now - start) if now > start else 0.0


@dataclass
class StepStats:
    """Where the engine thread's time goes, summed over its decode steps since it started:
    inside ``llama_decode``, in the step's own Python work around it (building the batch,
    sampling, detokenizing, stop strings; not delivering the chunks, which follows the
    count), the tokens each step
    decoded, and how long admitted requests waited. Written by the engine thread; a reader
    gets a consistent copy from :meth:`to_json` (plain sums: the difference of two readings
    is the figure over the seconds between them).
    """

    steps: int = 0
    step_s: float = 0.0  # whole steps, decode included
    decode_s: float = 0.0  # inside llama_decode
    batch_tokens: int = 0  # tokens decoded (prompt chunks and drafts included)
    generating_slots: int = 0  # slots that sampled a next token, summed over the steps
    admitted: int = 0
    queue_s: float = 0.0  # request received -> given a slot, summed over the admitted
    # from the end of one step's count to the start of the next while slots stayed busy:
    # delivering the chunks, run records, admission, the status snapshot
    between_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def step(self, seconds: float, decode_s: float, tokens: int, generating: int,
             between_s: float = 0.0) -> None:
        """Record one step of ``seconds``, ``decode_s`` of them in ``llama_decode``,
        ``between_s`` after the previous one (0 for the first after an idle spell)."""
        with self._lock:
            self.steps += 1
            self.between_s += between_s
            self.step_s += seconds
            self.decode_s += decode_s
            self.batch_tokens += tokens
            self.generating_slots += generating

    def admit(self, waited_s: float) -> None:
        """Record a request given a slot ``waited_s`` after it was received."""
        with self._lock:
            self.admitted += 1
            self.queue_s += waited_s

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {"steps": self.steps, "step_s": self.step_s, "decode_s": self.decode_s,
                    "batch_tokens": self.batch_tokens,
                    "generating_slots": self.generating_slots, "admitted": self.admitted,
                    "queue_s": self.queue_s, "between_s": self.between_s}
