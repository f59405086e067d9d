"""What a caller asks the engine for, and the handle through which the answer streams back.

A :class:`RequestHandle` is filled by the engine thread and read by anyone: blocking
iteration for threads and the CLI, ``async for`` for asyncio (no busy-wait, no thread per
request: the engine thread wakes the waiting coroutine through its event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.metrics import Metrics
from engine.speculative import SPEC_MODES

# where an image sits in a message's text (llama.cpp's multimodal library's default marker)
MEDIA_MARKER = "<__media__>"
FINISH_REASONS = ("stop", "length", "loop", "cancelled", "error")
LOOP_GUARD_MODES = ("stop", "retry", "off")


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens and when to stop. ``temperature <= 0`` is greedy."""

    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    max_tokens: int = 512
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    loop_guard: str = "stop"
    ignore_eos: bool = False  # benchmarks: always generate max_tokens
    # reuse the slot's cached tokens that the prompt starts with (False: process it whole,
    # as a benchmark repeat must)
    cache_prompt: bool = True
    # speculative decoding: "off" | "ngram"; None takes the engine's LaunchSpec setting
    spec_mode: str | None = None
    draft_tokens: int | None = None  # drafts per step (None: the engine's setting)
    # log-probabilities of the model's distribution (see TokenLogprob): None = none; n >= 0
    # = each generated token's own, with the n most likely tokens at its position
    logprobs: int | None = None
    # also score every prompt token (logits at every prompt position: a slower prefill,
    # and no reuse of cached prompt tokens); max_tokens may then be 0
    prompt_logprobs: bool = False
    # (token id, bias) added to the logits before sampling; a bias <= -100 bans the token
    logit_bias: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        if self.loop_guard not in LOOP_GUARD_MODES:
            raise ValueError(f"loop_guard must be one of {LOOP_GUARD_MODES}")
        if self.max_tokens < (0 if self.prompt_logprobs else 1):
            raise ValueError("max_tokens must be at least 1 (0 only to score the prompt)")
        if self.logprobs is not None and self.logprobs < 0:
            raise ValueError("logprobs must not be negative")
        if self.spec_mode is not None and self.spec_mode not in SPEC_MODES:
            raise ValueError(f"spec_mode must be one of {SPEC_MODES}")
        if self.draft_tokens is not None and self.draft_tokens < 0:
            raise ValueError("draft_tokens must not be negative")


@dataclass(frozen=True)
class GenerationRequest:
    """A raw ``prompt``, chat ``messages`` (rendered with the GGUF's template) or a prompt
    given as token ids (``prompt_tokens``, decoded as they are)."""

    prompt: str | None = None
    messages: tuple[Mapping[str, Any], ...] | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    params: SamplingParams = field(default_factory=SamplingParams)
    add_generation_prompt: bool = True
    # text the answer starts with (a prefilled assistant turn): appended to the rendered
    # messages, where the template's generation prompt opens the assistant turn; the
    # answer continues it without repeating it
    assistant_prefix: str = ""
    # image files (PNG, JPEG ...) in the order of the media markers in the messages' text
    images: tuple[bytes, ...] = ()
    prompt_tokens: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        given = (self.prompt, self.messages, self.prompt_tokens)
        if sum(x is not None for x in given) != 1:
            raise ValueError("give exactly one of prompt, messages or prompt_tokens")
        if self.prompt_tokens is not None and not self.prompt_tokens:
            raise ValueError("prompt_tokens must not be empty")
        if self.images and self.messages is None:
            raise ValueError("images go with chat messages, not a raw prompt")
        if self.assistant_prefix and (self.messages is None or not self.add_generation_prompt):
            raise ValueError("an assistant prefix follows chat messages' generation prompt")


@dataclass(frozen=True)
class TokenLogprob:
    """A token with its log-probability under the model (natural log, log-softmax of the
    raw logits over the whole vocabulary: before logit bias, penalties, grammar and
    temperature), and the most likely tokens at its position.

    Attributes:
        token: the token id.
        piece: the bytes it stands for (control tokens written out, e.g. ``<|im_end|>``).
        logprob: None for the first prompt token, which nothing before it predicts.
        top: ``(token, piece, logprob)`` of the most likely tokens, most likely first.
    """

    token: int
    piece: bytes
    logprob: float | None
    top: tuple[tuple[int, bytes, float], ...] = ()


@dataclass(frozen=True)
class Chunk:
    """One streamed piece of an answer; the last one has ``finish_reason`` set.

    ``metrics`` are the figures so far (final on the last chunk). ``loop_guard`` says
    "stopped" or "retried" when the loop guard intervened. ``logprobs``: when asked,
    one per generated token of ``token_ids`` (an end-of-generation token has none).
    ``prompt_logprobs``: when asked, every prompt token, on the request's first chunk.
    """

    text: str
    token_ids: tuple[int, ...]
    finish_reason: str | None
    metrics: Metrics
    error: str | None = None
    loop_guard: str | None = None
    logprobs: tuple[TokenLogprob, ...] = ()
    prompt_logprobs: tuple[TokenLogprob, ...] | None = None


class RequestHandle:
    """The answer to one request, as it streams. Filled by the engine thread."""

    def __init__(self, request: GenerationRequest) -> None:
        self.request = request
        self.request_id: str | None = None  # the id its client sees, named in the status
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._chunks: deque[Chunk] = deque()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._texts: list[str] = []
        self._tokens: list[int] = []
        self._logprobs: list[TokenLogprob] = []
        self._prompt_logprobs: tuple[TokenLogprob, ...] | None = None
        self._final: Chunk | None = None
        self._loop_guard: str | None = None
        self._finished = threading.Event()  # result() sleeps on this, not on every chunk
        self.cancelled = threading.Event()

    # -- engine side -------------------------------------------------------------------
    def push(self, chunk: Chunk) -> None:
        """Deliver a chunk (engine thread). A chunk with a finish reason ends the stream."""
        for loop, fut in self._store(chunk):
            with contextlib.suppress(RuntimeError):  # that event loop has been closed
                loop.call_soon_threadsafe(_wake, fut)

    def _store(self, chunk: Chunk) -> list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]:
        """Keep a chunk; returns the coroutines waiting for it, for the caller to wake."""
        with self._lock:
            if self._final is not None:
                return []
            self._chunks.append(chunk)
            self._texts.append(chunk.text)
            self._tokens.extend(chunk.token_ids)
            self._logprobs.extend(chunk.logprobs)
            if chunk.prompt_logprobs is not None:
                self._prompt_logprobs = chunk.prompt_logprobs
            if chunk.loop_guard:
                self._loop_guard = chunk.loop_guard
            if chunk.finish_reason is not None:
                self._final = chunk
                self._finished.set()
            self._ready.notify_all()
            waiters, self._waiters = self._waiters, []
        return waiters

    @property
    def token_ids(self) -> tuple[int, ...]:
        """The ids of the tokens generated so far."""
        with self._lock:
            return tuple(self._tokens)

    @property
    def done(self) -> bool:
        """Whether the last chunk has been delivered."""
        return self._final is not None

    # -- caller side -------------------------------------------------------------------
    def cancel(self) -> None:
        """Ask the engine to stop this request; its slot is freed within one decode step."""
        self.cancelled.set()

    def __iter__(self) -> Iterator[Chunk]:
        while True:
            with self._lock:
                while not self._chunks:
                    self._ready.wait()
                chunk = self._chunks.popleft()
            yield chunk
            if chunk.finish_reason is not None:
                return

    def __aiter__(self) -> AsyncIterator[Chunk]:
        return self._aiter()

    async def _aiter(self) -> AsyncIterator[Chunk]:
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                chunk = self._chunks.popleft() if self._chunks else None
                if chunk is None:
                    fut: asyncio.Future[None] = loop.create_future()
                    self._waiters.append((loop, fut))
            if chunk is None:
                await fut
                continue
            yield chunk
            if chunk.finish_reason is not None:
                return

    def result(self, timeout: float | None = None) -> Chunk:
        """Wait for the end; a final chunk with the whole text and every token id.

        Raises:
            TimeoutError: the request did not end within ``timeout`` seconds.
        """
        if not self._finished.wait(timeout):
            raise TimeoutError("the request did not finish in time")
        with self._lock:
            final = self._final
            assert final is not None
            return Chunk(text="".join(self._texts), token_ids=tuple(self._tokens),
                         finish_reason=final.finish_reason, metrics=final.metrics,
                         error=final.error, loop_guard=self._loop_guard,
                         logprobs=tuple(self._logprobs),
                         prompt_logprobs=self._prompt_logprobs)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _wake_all(futs: list[asyncio.Future[None]]) -> None:
    for fut in futs:
        _wake(fut)


def push_all(items: Iterable[tuple[RequestHandle, Chunk]]) -> None:
    """Deliver several chunks (engine thread), waking each waiting event loop once.

    One wake-up per loop rather than per chunk: each wake-up writes to the loop's socket,
    which releases the GIL to the loop's thread, and the deliveries that follow then wait
    for it to hand the GIL back.
    """
    woken: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for handle, chunk in items:
        for loop, fut in handle._store(chunk):
            woken.setdefault(loop, []).append(fut)
    for loop, futs in woken.items():
        with contextlib.suppress(RuntimeError):  # that event loop has been closed
            loop.call_soon_threadsafe(_wake_all, futs)
