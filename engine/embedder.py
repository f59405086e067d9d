"""Embeddings: token lists in, one L2-normalised vector per list out, on one worker thread.

An :class:`Embedder` owns an :class:`~engine.native.embeddings.EmbeddingContext` over a
loaded model and the one thread that ever touches it. Jobs (one per HTTP request, each a
list of inputs) wait in a queue; the worker takes every job waiting, packs their inputs
into encodes of about ``ENCODE_TOKENS`` tokens (``n_seq_max`` inputs at most) each
and answers each job's future. Callers never block on llama.cpp: the server awaits the
future from the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import EngineClosedError, QueueFullError
from engine.launch import LaunchSpec
from engine.native.embeddings import POOLING_IDS, EmbeddingContext, EmbeddingShape
from engine.native.model import NativeModel, llama
from planner.embedding_memory import ENCODE_TOKENS, MAX_INPUT_TOKENS, embedding_batch

log = logging.getLogger(__name__)

_STOP = None
# ENCODE_TOKENS: tokens packed into one encode (more when one input is longer);
# MAX_INPUT_TOKENS: the longest input, whatever the model's context. The planner sizes
# the context from the same figures (planner.embedding_memory)
__all__ = ["ENCODE_TOKENS", "MAX_INPUT_TOKENS", "Embedder", "EmbeddingResult", "normalise",
           "pack"]


@dataclass(frozen=True)
class EmbeddingResult:
    """The answer to one job.

    Attributes:
        vectors: one L2-normalised float32 row per input, in input order.
        prompt_tokens: tokens of every input together.
        seconds: time from the job's receipt to its last vector.
    """

    vectors: np.ndarray
    prompt_tokens: int
    seconds: float


@dataclass
class _Job:
    inputs: Sequence[Sequence[int]]
    future: Future[EmbeddingResult]
    received: float = field(default_factory=time.perf_counter)
    rows: np.ndarray | None = None


def normalise(rows: np.ndarray) -> np.ndarray:
    """Each row divided by its Euclidean norm (an all-zero row stays zero)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: np.ndarray = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return out


def pack(lengths: Sequence[int], max_tokens: int, max_inputs: int) -> list[list[int]]:
    """Indices of inputs grouped into encodes, in order: each group at most ``max_inputs``
    inputs and ``max_tokens`` tokens together, or one input alone that is longer."""
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, n in enumerate(lengths):
        if current and (used + n > max_tokens or len(current) >= max_inputs):
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


class Embedder:
    """Embeds token lists with a model, on its own thread.

    Args:
        model: the loaded model (the caller keeps it alive until :meth:`close`).
        spec: threads and the model path come from it.
        pooling: ``mean`` / ``cls`` / ``last``, or None for the model's own pooling.
        max_input_tokens: the longest input accepted (the model's trained context for an
            encoder, the chat engine's sequence for a causal model).
        queue_size: jobs that may wait before :meth:`submit` refuses.

    Raises (from the constructor):
        OutOfMemoryError, ModelLoadError: the embedding context could not be created.
    """

    def __init__(self, model: NativeModel, spec: LaunchSpec, *, pooling: str | None,
                 max_input_tokens: int, queue_size: int = 64, warm_up: bool = True) -> None:
        # the context holds the longest input; encodes pack up to ENCODE_TOKENS (attention
        # within one encode costs the square of its tokens, whichever sequence they are of)
        shape = EmbeddingShape(n_batch=embedding_batch(max_input_tokens),
                               pooling=POOLING_IDS[pooling] if pooling else -1)
        self._ctx = EmbeddingContext(model, spec, shape)
        self.n_embd = self._ctx.n_embd
        self.pooling = self._ctx.pooling
        self.max_input_tokens = min(max_input_tokens, self._ctx.n_batch)
        self._queue: queue.Queue[_Job | None] = queue.Queue(maxsize=max(1, queue_size))
        self._closed = threading.Event()
        self._warm_vocab: Any = model.vocab if warm_up else None
        self.embedded_inputs = 0
        self.embedded_tokens = 0
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="loadout-embed", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._ctx.free()
            raise self._error

    def submit(self, inputs: Sequence[Sequence[int]]) -> Future[EmbeddingResult]:
        """Queue one job (every input already checked: non-empty, each at most
        ``max_input_tokens``); its future answers with the vectors.

        Raises:
            QueueFullError: too many jobs are waiting.
            EngineClosedError: the embedder is closed.
        """
        if self._closed.is_set():
            raise EngineClosedError("the embedder is closed")
        job = _Job(inputs, Future())
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFullError(f"{self._queue.maxsize} embedding jobs are already "
                                 "waiting") from None
        return job.future

    def status(self) -> dict[str, object]:
        """Counters and shape, for the server's status and metrics."""
        return {"pooling": self.pooling, "n_embd": self.n_embd,
                "max_input_tokens": self.max_input_tokens,
                "queue_length": self._queue.qsize(),
                "embedded_inputs": self.embedded_inputs,
                "embedded_tokens": self.embedded_tokens}

    def close(self) -> None:
        """Stop the worker, fail waiting jobs, free the context. Idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        with contextlib.suppress(queue.Full):  # else the worker sees the flag in its poll
            self._queue.put_nowait(_STOP)
        self._thread.join()
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None and not job.future.done():
                job.future.set_exception(EngineClosedError("the embedder was closed"))
        self._ctx.free()

    # -- the worker -----------------------------------------------------------------------
    def _run(self) -> None:
        # the first encode runs here, as every later one does (one OpenMP team per thread)
        try:
            if self._warm_vocab is not None:
                lib = llama()
                first = [t for t in (lib.llama_vocab_bos(self._warm_vocab),
                                     lib.llama_vocab_sep(self._warm_vocab)) if t >= 0] or [0]
                self._ctx.encode([first])
        except BaseException as exc:
            self._error = exc
            return
        finally:
            self._ready.set()
        while not self._closed.is_set():
            try:
                first_job = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if first_job is None:
                break
            jobs = [first_job]
            while True:  # every job already waiting joins this round
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._closed.set()
                    break
                jobs.append(more)
            self._serve(jobs)

    def _serve(self, jobs: list[_Job]) -> None:
        """Encode the jobs' inputs packed together; each job is answered as soon as its
        last input is encoded (its answer is written while the next encodes run)."""
        live = [j for j in jobs if j.future.set_running_or_notify_cancel()]
        flat = [(j, i) for j in live for i in range(len(j.inputs))]
        left = {id(job): len(job.inputs) for job in live}
        for job in live:
            job.rows = np.empty((len(job.inputs), self.n_embd), dtype=np.float32)
        lengths = [len(job.inputs[i]) for job, i in flat]
        try:
            for group in pack(lengths, ENCODE_TOKENS, self._ctx.n_seq_max):
                rows = self._ctx.encode([flat[k][0].inputs[flat[k][1]] for k in group])
                for r, k in enumerate(group):
                    job, i = flat[k]
                    assert job.rows is not None
                    job.rows[i] = rows[r]
                    left[id(job)] -= 1
                    if not left[id(job)]:
                        self._answer(job)
        except Exception as exc:
            log.exception("embedding failed")
            for job in live:
                if left[id(job)]:
                    job.future.set_exception(exc)

    def _answer(self, job: _Job) -> None:
        assert job.rows is not None
        tokens = sum(len(t) for t in job.inputs)
        self.embedded_inputs += len(job.inputs)
        self.embedded_tokens += tokens
        job.future.set_result(EmbeddingResult(normalise(job.rows), tokens,
                                              time.perf_counter() - job.received))
