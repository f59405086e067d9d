"""The Engine: one thread owns the llama.cpp model and context; requests reach it by a queue.

``Engine(spec)`` loads exactly what the LaunchSpec says (progress reported, cancellable),
then a worker thread runs the continuous-batching :class:`~engine.scheduler.Scheduler`:
it admits queued requests between decode steps and streams chunks to each
:class:`~engine.requests.RequestHandle`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import run_records
from engine.chat_template import render_chat
from engine.errors import (
    ContextOverflowError,
    EngineClosedError,
    ImageInputError,
    QueueFullError,
)
from engine.launch import LaunchSpec
from engine.metrics import RequestTimer
from engine.native.context import NativeContext
from engine.native.model import NativeModel, llama
from engine.native.projector import ImageChunk, NativeProjector
from engine.native.tokens import Vocab
from engine.requests import Chunk, GenerationRequest, RequestHandle
from engine.scheduler import Admission, Scheduler
from engine.speculative import Drafter
from engine.vision import MediaPrompt

if TYPE_CHECKING:
    from engine.embedder import Embedder

log = logging.getLogger(__name__)

_IDLE_WAIT_S = 0.25
# Requests sent together reach the queue a few milliseconds apart (each is parsed and
# tokenized first). While no slot is generating, the first prompts' step waits for the
# rest of such a burst (a request within _BURST_GAP_S of the last, _BURST_MAX_S at most):
# otherwise the latecomers wait out that whole prefill step and then delay, in a second
# prefill, the tokens of the first ones (8 streams sent at once on 2 CPUs, demo model: they
# arrived over 1-10 ms, and in 4 of 5 bursts traced 2 to 6 of them waited out a first
# prefill step of 0.56 to 5 s on the busy machine).
_BURST_GAP_S = 0.003
_BURST_MAX_S = 0.02
_STATUS_EVERY_S = 0.1


class Engine:
    """A loaded model serving generation requests with continuous batching.

    Args:
        spec: what to load and how (every field is applied).
        queue_size: requests that may wait for a slot before ``submit`` refuses.
        progress: called with the load fraction 0..1; returning False cancels the load.

    Raises:
        ModelNotFoundError, CorruptModelError, ModelLoadError: the file cannot be loaded.
        OutOfMemoryError: a buffer could not be allocated (says what was asked and free).
        ModelLoadCancelled: ``progress`` returned False.
    """

    embedder: Embedder | None = None  # embeddings over the same weights (serve --embeddings)

    def __init__(self, spec: LaunchSpec, *, queue_size: int = 64,
                 progress: Callable[[float], bool] | None = None) -> None:
        self.spec = spec
        self._progress = 0.0
        self._closed = threading.Event()
        self._queue: queue.Queue[Admission] = queue.Queue(maxsize=max(1, queue_size))
        self._lock = threading.Lock()
        t0 = time.perf_counter()

        def on_progress(value: float) -> bool:
            self._progress = value
            return progress(value) if progress is not None else True

        self._model = NativeModel(spec, on_progress)
        drafters: dict[str, Drafter] = {}
        self.projector: NativeProjector | None = None
        try:
            self._ctx = NativeContext(self._model, spec)
            if spec.mmproj_path:
                self.projector = NativeProjector(self._model, spec.mmproj_path,
                                                 threads=spec.threads_batch,
                                                 use_gpu=spec.mmproj_offload)
            self.speculation_refusal = rollback_refusal(self._model)
            if self.speculation_refusal is None:
                drafters = load_drafters(self._model, self._ctx, spec)
            elif spec.spec_mode != "off":
                log.warning("speculation stays off: %s", self.speculation_refusal)
            self._scheduler = Scheduler(self._ctx, Vocab(self._model.vocab),
                                        self._model.n_vocab, spec_mode=spec.spec_mode,
                                        draft_tokens=spec.draft_tokens, drafters=drafters,
                                        spec_refusal=self.speculation_refusal)
            self._scheduler.on_finish = run_records.recorder(spec.run_features)
        except BaseException:
            for drafter in drafters.values():
                drafter.free()
            if self.projector is not None:
                self.projector.free()
            if hasattr(self, "_ctx"):
                self._ctx.free()
            self._model.free()
            raise
        self.load_log: list[str] = self._model.load_log + self._ctx.load_log + \
            (self.projector.load_log if self.projector is not None else [])
        self._vocab = self._scheduler.vocab
        self._template = self._model.chat_template()
        self._bos_text = self._vocab.piece(self._vocab.bos).decode("utf-8", "replace") \
            if self._vocab.bos >= 0 else ""
        self._eos_text = self._vocab.piece(self._vocab.eos).decode("utf-8", "replace") \
            if self._vocab.eos >= 0 else ""
        self._name = self._model.meta("general.name") or Path(spec.model_path).stem
        self._status_slots: list[dict[str, Any]] = self._scheduler.slot_status()
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="loadout-engine", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            self._thread.join()
            self._scheduler.free()
            self._free_projector()
            self._ctx.free()
            self._model.free()
            raise self._start_error
        self.load_seconds = time.perf_counter() - t0
        log.info("engine ready: %s, %d slot(s) x %d tokens, loaded in %.2f s", self._name,
                 self._ctx.n_seq_max, self._ctx.n_ctx_seq, self.load_seconds)

    # -- public API -----------------------------------------------------------------------
    @property
    def model_name(self) -> str:
        """The model's ``general.name`` (or its file name)."""
        return self._name

    @property
    def speculation_modes(self) -> tuple[str, ...]:
        """The speculation modes a request may ask for (none when the model refuses)."""
        if self.speculation_refusal is not None:
            return ("off",)
        return ("off", *self._scheduler.drafters)

    @property
    def native_model(self) -> NativeModel:
        """The loaded model (for a second context over the same weights)."""
        return self._model

    @property
    def vision_refusal(self) -> str | None:
        """Why this engine cannot take images (None when it can)."""
        if self.projector is None:
            return "the model was loaded without a vision projector (mmproj)"
        drafters = sorted(set(self._scheduler.drafters) - {"ngram"})
        if drafters:
            # a drafter with its own cache would be fed the image's placeholder tokens
            return f"images cannot be combined with the loaded {drafters[0]} drafter yet"
        return self.projector.refusal()

    @property
    def n_ctx_per_seq(self) -> int:
        """Tokens one request may hold (prompt + answer)."""
        return self._ctx.n_ctx_seq

    @property
    def n_vocab(self) -> int:
        """Tokens in the model's vocabulary (the bound of a logit bias's token ids)."""
        return int(self._model.n_vocab)

    @property
    def chat_template(self) -> str | None:
        """The GGUF's chat template source, if it has one."""
        return self._template

    def use_chat_template(self, source: str) -> None:
        """Render chats with ``source`` (a Jinja template) instead of the GGUF's own
        (``loadout serve --chat-template``)."""
        self._template = source

    def render_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None,
                    add_generation_prompt: bool = True) -> str:
        """Render chat messages with the model's own template (sandboxed Jinja)."""
        return render_chat(self._template, messages, tools=tools,
                           add_generation_prompt=add_generation_prompt,
                           bos_token=self._bos_text, eos_token=self._eos_text)

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        """Token ids of ``text`` (special tokens in the text are parsed)."""
        return self._vocab.tokenize(text, add_special=add_special)

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of a token list."""
        return b"".join(self._vocab.piece(t) for t in tokens).decode("utf-8", "replace")

    def submit(self, request: GenerationRequest) -> RequestHandle:
        """Queue a request; its answer streams through the returned handle.

        Raises:
            QueueFullError: too many requests are waiting.
            ContextOverflowError: the prompt does not fit in one sequence.
            ValueError: ``prompt_tokens`` names a token outside the vocabulary.
            ChatTemplateError: the messages could not be rendered.
            EngineClosedError: the engine is closed.
        """
        if self._closed.is_set():
            raise EngineClosedError("the engine is closed")
        timer = RequestTimer()
        media = self._media_prompt(request) if request.images else None
        prompt = media.tokens if media is not None else self._prompt_tokens(request)
        if len(prompt) >= self.n_ctx_per_seq:
            if media is not None:
                media.free()
            raise ContextOverflowError(len(prompt), self.n_ctx_per_seq)
        if media is not None:
            timer.images, timer.image_tokens = len(media.spans), media.image_tokens
        handle = RequestHandle(request)
        try:
            self._queue.put_nowait(Admission(handle, prompt, timer, media))
        except queue.Full:
            if media is not None:
                media.free()
            raise QueueFullError(f"{self._queue.maxsize} requests are already waiting") \
                from None
        return handle

    def status(self) -> dict[str, Any]:
        """A snapshot: slots (each with its request's figures), the decode t/s of all
        requests, queue length, memory per device, load progress, model, context, and
        the decode steps' sums (:class:`~engine.metrics.StepStats`)."""
        from engine.ggml_devices import engine_devices

        try:
            devices = [{"name": d.name, "kind": d.kind, "free_bytes": d.free_bytes,
                        "total_bytes": d.total_bytes} for d in engine_devices()]
        except Exception:  # status must always answer
            devices = []
        return {
            "model": self._name,
            "model_path": self.spec.model_path,
            "load_progress": self._progress,
            "load_seconds": self.load_seconds,
            "n_ctx_per_seq": self.n_ctx_per_seq,
            "n_ctx": self._ctx.n_ctx,
            "slots": [dict(s) for s in self._status_slots],
            "decode_tps_all_requests": self._scheduler.decode_rate.tokens_per_second(),
            "steps": self._scheduler.step_stats.to_json(),  # where the decode time goes
            "queue_length": self._queue.qsize(),
            "devices": devices,
            "closed": self._closed.is_set(),
        }

    def close(self) -> None:
        """Stop the worker, end pending requests, free the context and model. Idempotent."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
        self._thread.join()
        self._drain_queue()
        if self.embedder is not None:
            self.embedder.close()
        self._scheduler.free()
        self._free_projector()
        self._ctx.free()
        self._model.free()
        log.info("engine closed: %s", self._name)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the worker -----------------------------------------------------------------------
    def _prompt_tokens(self, request: GenerationRequest) -> list[int]:
        if request.prompt_tokens is not None:
            n_vocab = self.n_vocab
            bad = next((t for t in request.prompt_tokens if not 0 <= t < n_vocab), None)
            if bad is not None:
                raise ValueError(f"the prompt names token {bad}, outside the vocabulary "
                                 f"(0..{n_vocab - 1})")
            return list(request.prompt_tokens)
        if request.messages is not None:
            text = self.render_chat(request.messages, request.tools,
                                    request.add_generation_prompt) + request.assistant_prefix
            # the template writes BOS itself when the model wants one
            tokens = self._vocab.tokenize(text, add_special=False)
            if self._vocab.add_bos() and (not tokens or tokens[0] != self._vocab.bos):
                tokens.insert(0, self._vocab.bos)
        else:
            tokens = self._vocab.tokenize(request.prompt or "", add_special=True)
        if not tokens:
            tokens = [self._vocab.bos if self._vocab.bos >= 0 else 0]
        return tokens

    def _media_prompt(self, request: GenerationRequest) -> MediaPrompt:
        """The prompt of a request with images: the rendered chat split at its markers.

        Raises:
            ImageInputError: no projector, or an image cannot be used.
        """
        refusal = self.vision_refusal
        if refusal is not None:
            raise ImageInputError(f"this model cannot take images: {refusal}")
        assert self.projector is not None and request.messages is not None
        text = self.render_chat(request.messages, request.tools, request.add_generation_prompt) \
            + request.assistant_prefix
        parts = self.projector.tokenize(text, request.images)
        ubatch = min(self.spec.n_ubatch, self.spec.n_batch)
        for part in parts:
            if isinstance(part, ImageChunk) and part.n_tokens > ubatch \
                    and self.projector.non_causal(part):
                raise ImageInputError(
                    f"this model reads an image's {part.n_tokens} tokens at once, more than "
                    f"the {ubatch}-token micro-batch it was loaded with (n_ubatch)")
        bos = self._vocab.bos if self._vocab.add_bos() and self._vocab.bos >= 0 else None
        return MediaPrompt.build(self.projector, parts, bos)

    def _free_projector(self) -> None:
        if self.projector is not None:
            self.projector.free()

    def _run(self) -> None:
        # the warm-up decodes on this thread, as every later decode does: with an OpenMP
        # build, a decode from a second thread leaves a second team of workers behind, and
        # once the process holds more OpenMP threads than CPUs, libgomp stops spinning at
        # its barriers (a third slower decode on 2 CPUs, measured)
        try:
            if self.spec.warm_up:
                self._ctx.warm_up(self._model, Path(self.spec.model_path).name)
        except BaseException as exc:
            self._start_error = exc
            return
        finally:
            self._started.set()
        sched = self._scheduler
        shown = 0.0
        try:
            while not self._closed.is_set():
                self._admit(block=not sched.active)
                if sched.active:
                    sched.step()
                    # the slots' snapshot for status(), a few times a second rather than
                    # every token: each step's Python work delays the next llama_decode
                    now = time.perf_counter()
                    if now - shown >= _STATUS_EVERY_S or not sched.active:
                        self._status_slots = sched.slot_status()
                        shown = now
        except Exception as exc:  # never leave callers waiting on a dead thread
            log.exception("engine worker failed")
            sched.abort_all("error", error=f"{type(exc).__name__}: {exc}")
            self._closed.set()
        else:
            sched.abort_all("cancelled")
        self._status_slots = sched.slot_status()

    def _admit(self, block: bool) -> None:
        sched = self._scheduler
        if not block and self._queue.empty():
            return
        admitted = False
        while sched.has_free_slot():
            try:
                item = self._queue.get(timeout=_IDLE_WAIT_S) if block \
                    else self._queue.get_nowait()
            except queue.Empty:
                break
            sched.admit(item)
            block, admitted = False, True
            self._status_slots = sched.slot_status()
        if admitted and not sched.generating:
            self._admit_burst()

    def _admit_burst(self) -> None:
        """Admit the requests that follow the one just admitted closely (see _BURST_GAP_S)."""
        sched = self._scheduler
        end = time.perf_counter() + _BURST_MAX_S
        while sched.has_free_slot() and not sched.generating:
            wait = min(_BURST_GAP_S, end - time.perf_counter())
            if wait <= 0:
                return
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                return
            sched.admit(item)
            self._status_slots = sched.slot_status()

    def _drain_queue(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            item.handle.push(Chunk("", (), "cancelled", item.timer.snapshot(),
                                   error="the engine was closed"))


def rollback_refusal(model: NativeModel) -> str | None:
    """Why this model cannot speculate: llama.cpp cannot drop the rejected drafts from a
    recurrent state (None when it can)."""
    lib = llama()
    if lib.llama_model_is_recurrent(model.ptr) or lib.llama_model_is_hybrid(model.ptr):
        return ("the model keeps a recurrent state, from which llama.cpp cannot drop "
                "rejected drafts")
    return None


def load_drafters(model: NativeModel, ctx: NativeContext,
                  spec: LaunchSpec) -> dict[str, Drafter]:
    """The drafter the spec loads beside the model: a draft model, the NextN head or a
    DFlash drafter."""
    if spec.spec_mode == "draft":
        from engine.draft_model import DraftModel

        return {"draft": DraftModel(model, spec)}
    if spec.spec_mode == "mtp":
        from engine.mtp import MtpDrafter

        return {"mtp": MtpDrafter(model, ctx, spec)}
    if spec.spec_mode == "dflash":
        from engine.dflash import DFlashDrafter

        return {"dflash": DFlashDrafter(model, ctx, spec)}
    return {}
