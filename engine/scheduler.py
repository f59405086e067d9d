"""Continuous batching: slots (one llama.cpp sequence each) and the decode step over all of them.

Each :meth:`Scheduler.step` runs ONE ``llama_decode`` holding the pending token of every
generating slot plus as much of the waiting prompts as the batch has room for (chunked
prefill), then samples one token for every slot whose logits were computed. A new request
joins between steps. A slot keeps its tokens after a request ends so that the next request
reuses the longest common prefix of its KV cells.

Speculation (see :mod:`engine.speculative`): a generating slot's drafts follow its pending
token in the same decode; every drafter sees each decoded batch (the MTP head needs the
target's hidden states) and each rollback of rejected drafts. Each step's wall time is
charged to the slots that were generating, so a request can judge whether drafting pays.

Log-probabilities (see :mod:`engine.native.logprobs`) are read from the same logits rows
the sampler samples from, only for requests that ask. A request that scores its prompt
asks llama.cpp for the logits of every prompt position (others only for the last one), in
chunks of at most ``SCORE_BYTES`` of logits per step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.errors import ImageInputError
from engine.loop_guard import LoopGuard
from engine.metrics import DecodeRate, RequestTimer, StepStats
from engine.native.batch import Batch
from engine.native.context import NativeContext
from engine.native.logprobs import Scorer
from engine.native.sampler import GrammarDeadEndError, SamplerChain
from engine.native.tokens import Detokenizer, Vocab
from engine.requests import Chunk, RequestHandle, SamplingParams, TokenLogprob, push_all
from engine.speculative import Drafter, NgramDrafter, Run, SpecState
from engine.stop_strings import StopMatcher
from engine.vision import MediaPrompt, eval_due

log = logging.getLogger(__name__)

RETRY_PENALTIES = {"repeat_penalty": 1.3, "presence_penalty": 0.6, "frequency_penalty": 0.6}
NOT_LOADED = {"draft": "no draft model is loaded", "mtp": "the model was loaded without MTP",
              "dflash": "no DFlash drafter is loaded"}
SCORE_BYTES = 64 << 20  # logits rows of a scored prompt per step (llama.cpp keeps the buffer)


@dataclass
class Admission:
    """A request waiting for a slot: its handle, prompt tokens and timer (started on receipt)."""

    handle: RequestHandle
    prompt: list[int]
    timer: RequestTimer
    media: MediaPrompt | None = None  # the prompt's images (engine.vision)


@dataclass
class Slot:
    """One sequence of the context and the request it is serving (if any)."""

    seq: int
    tokens: list[int] = field(default_factory=list)  # what the sequence's cells hold
    state: str = "idle"  # idle | prefill | generate
    handle: RequestHandle | None = None
    params: SamplingParams | None = None
    prompt: list[int] = field(default_factory=list)
    n_prompt_done: int = 0
    sampler: SamplerChain | None = None
    detok: Detokenizer | None = None
    timer: RequestTimer | None = None
    guard: LoopGuard | None = None
    stops: StopMatcher | None = None
    text: str = ""
    emitted: int = 0
    generated: int = 0
    pending: int | None = None
    logits_index: int = -1
    retried: bool = False
    spec: SpecState | None = None
    drafts: list[int] = field(default_factory=list)  # in the batch after ``pending``
    media: MediaPrompt | None = None
    # prompt scoring: the scored prompt tokens so far (None: not asked, or already sent),
    # and this step's rows: (batch index of the first, prompt index of the first, count)
    prompt_lps: list[TokenLogprob] | None = None
    score_rows: tuple[int, int, int] | None = None

    @property
    def busy(self) -> bool:
        return self.state != "idle"


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Scheduler:
    """Owns the slots and the batch; driven by the engine thread only."""

    def __init__(self, ctx: NativeContext, vocab: Vocab, n_vocab: int, *,
                 spec_mode: str = "off", draft_tokens: int = 8,
                 drafters: Mapping[str, Drafter] | None = None,
                 spec_refusal: str | None = None) -> None:
        """``drafters``: the loaded drafters by mode (n-gram is always there);
        ``spec_refusal``: why this model cannot speculate at all (a recurrent state)."""
        self.ctx = ctx
        self.spec_mode = spec_mode
        self.draft_tokens = draft_tokens
        self.drafters: dict[str, Drafter] = {"ngram": NgramDrafter(), **(drafters or {})}
        self.spec_refusal = spec_refusal
        self.vocab = vocab
        self.n_vocab = n_vocab
        self.slots = [Slot(seq=i) for i in range(ctx.n_seq_max)]
        self.batch = Batch(ctx.n_batch, ctx.n_seq_max)
        self.scorer = Scorer(vocab, n_vocab)
        self.score_rows = max(1, SCORE_BYTES // (4 * max(1, n_vocab)))
        self.decode_rate = DecodeRate()  # every slot's decoded tokens, for the status
        self.step_stats = StepStats()  # where the engine thread's time goes
        # the chunks and run records of the step running now, sent when its work is done
        self._outbox: list[tuple[RequestHandle, Chunk]] | None = None
        self._records: list[tuple[dict[str, Any], str]] = []
        self._counted: float | None = None  # when the last step was counted, slots busy
        # called with (metrics as JSON, finish reason) when a request ends: the run record
        self.on_finish: Callable[[dict[str, Any], str], None] | None = None

    # -- admission ------------------------------------------------------------------------
    def has_free_slot(self) -> bool:
        return any(not s.busy for s in self.slots)

    @property
    def active(self) -> bool:
        return any(s.busy for s in self.slots)

    @property
    def generating(self) -> bool:
        """Whether a slot waits for its next token (a step now would decode one)."""
        return any(s.state == "generate" for s in self.slots)

    def admit(self, item: Admission) -> None:
        """Give a waiting request the free slot whose cached tokens share most of its prompt."""
        if item.handle.cancelled.is_set():
            item.handle.push(Chunk("", (), "cancelled", item.timer.snapshot()))
            return
        free = [s for s in self.slots if not s.busy]
        slot = max(free, key=lambda s: common_prefix(s.tokens, item.prompt))
        self.step_stats.admit(time.perf_counter() - item.timer.received)
        params = item.handle.request.params
        try:
            sampler = self._sampler(params)
        except Exception as exc:  # a bad grammar is the caller's error, not the engine's
            item.handle.push(Chunk("", (), "error", item.timer.snapshot(), error=str(exc)))
            return
        # a scored prompt needs the logits of every position: nothing cached is reused
        reuse = common_prefix(slot.tokens, item.prompt) \
            if params.cache_prompt and not params.prompt_logprobs else 0
        reuse = min(reuse, len(item.prompt) - 1)  # the last prompt token must be decoded
        if item.media is not None:
            reuse = item.media.align_reuse(reuse)
        for drafter in self.drafters.values():
            reuse = min(reuse, drafter.admit(slot.seq, reuse))
        if not self.ctx.seq_rm(slot.seq, reuse, -1):
            self.ctx.seq_clear(slot.seq)
            reuse = 0
            for drafter in self.drafters.values():
                drafter.admit(slot.seq, 0)
        slot.tokens = item.prompt[:reuse]
        slot.state, slot.handle, slot.params = "prefill", item.handle, params
        slot.prompt, slot.n_prompt_done = item.prompt, reuse
        slot.sampler, slot.detok = sampler, Detokenizer(self.vocab)
        slot.timer = item.timer
        slot.timer.rate = self.decode_rate
        slot.timer.prompt_tokens = len(item.prompt)
        slot.timer.cached_tokens = reuse
        slot.guard = LoopGuard() if params.loop_guard != "off" else None
        slot.stops = StopMatcher(params.stop) if params.stop else None
        slot.text, slot.emitted, slot.generated = "", 0, 0
        slot.pending, slot.retried = None, False
        mode = params.spec_mode if params.spec_mode is not None else self.spec_mode
        k = params.draft_tokens if params.draft_tokens is not None else self.draft_tokens
        slot.spec = SpecState(mode, k) if mode != "off" else None
        if slot.spec is not None:
            if self.spec_refusal is not None:
                slot.spec.turn_off(self.spec_refusal)
            elif mode not in self.drafters:
                slot.spec.turn_off(NOT_LOADED.get(mode, f"no {mode} drafter is loaded"))
        slot.drafts = []
        slot.media = item.media
        if slot.media is not None:
            slot.spec = None  # drafters never see an image's decode
        slot.prompt_lps = [self.scorer.unscored(item.prompt[0])] \
            if params.prompt_logprobs else None
        slot.score_rows = None
        slot.timer.speculation = slot.spec.label() if slot.spec is not None else None

    def _sampler(self, p: SamplingParams, **changes: float) -> SamplerChain:
        values: dict[str, Any] = {
            "temperature": p.temperature, "top_p": p.top_p, "top_k": p.top_k,
            "min_p": p.min_p, "repeat_penalty": p.repeat_penalty,
            "presence_penalty": p.presence_penalty, "frequency_penalty": p.frequency_penalty,
            "seed": p.seed, "grammar": p.grammar, "logit_bias": p.logit_bias}
        values.update(changes)
        return SamplerChain(self.vocab.ptr, self.n_vocab, **values)

    # -- the decode step ------------------------------------------------------------------
    def step(self) -> None:
        """One ``llama_decode`` over every busy slot, then one sampled token per ready slot.

        The step's chunks reach their handles at its end, all together, with one wake-up
        per event loop (:func:`~engine.requests.push_all`). A wake-up per chunk let the
        server's loop thread take the GIL at each one (the wake-up write releases it) for
        its HTTP work, and the step's Python work waited for it every time: with 8 streams
        (2 CPUs, demo model) 1.3-2.0 ms a step between the decodes, against 0.45 ms
        without a server; 0.5 ms, and 0.6-1 ms between two steps, with one wake-up.
        Delivering them just before the next decode instead measured the same sum.
        """
        t0 = time.perf_counter()
        between = t0 - self._counted if self._counted is not None else 0.0
        self._counted = None
        self._outbox = []
        try:
            decoded = self._step()
            if decoded is not None:  # counted before its chunks go: whoever has read
                # a request's last chunk finds its steps in the sums
                end = time.perf_counter()
                self.step_stats.step(end - t0, *decoded, between_s=between)
                self._counted = end if self.active else None
        finally:
            out, self._outbox = self._outbox, None
            push_all(out)
            records, self._records = self._records, []
            if self.on_finish is not None:
                for record in records:  # after the answers: a record is a file write
                    self.on_finish(*record)

    def _step(self) -> tuple[float, int, int] | None:
        """The step; seconds in ``llama_decode``, tokens decoded and slots sampled (None
        when there was nothing to decode)."""
        for slot in self.slots:
            if slot.busy and slot.handle is not None and slot.handle.cancelled.is_set():
                self._finish(slot, "cancelled")
        t0 = time.perf_counter()
        batch = self.batch
        batch.clear()
        runs: list[Run] = []
        timed: list[tuple[Slot, SpecState, bool, int]] = []
        for slot in self.slots:
            slot.logits_index = -1
            slot.score_rows = None
            if slot.state == "generate" and slot.pending is not None:
                pos = len(slot.tokens)
                slot.logits_index = batch.add(slot.pending, pos, slot.seq, True)
                slot.tokens.append(slot.pending)
                slot.pending = None
                self._add_drafts(slot)
                runs.append(Run(slot.seq, slot.logits_index, pos, tuple(slot.tokens[pos:])))
                if slot.spec is not None and slot.timer is not None:
                    timed.append((slot, slot.spec, bool(slot.drafts),
                                  slot.timer.generated_tokens))
        for slot in self.slots:
            if slot.state != "prefill" or batch.free_space <= 0:
                continue
            assert slot.timer is not None
            if slot.timer.prefill_start is None:
                slot.timer.prefill_started()
            limit = len(slot.prompt)
            if slot.media is not None:
                try:
                    limit = eval_due(self.ctx, slot)
                except ImageInputError as exc:
                    self._finish(slot, "error", error=str(exc))
                    continue
            start = slot.n_prompt_done
            scoring = slot.prompt_lps is not None
            room = min(batch.free_space, self.score_rows) if scoring else batch.free_space
            chunk = slot.prompt[start:min(start + room, limit)]
            last = start + len(chunk) == len(slot.prompt)
            runs.append(Run(slot.seq, batch.n_tokens, start, tuple(chunk)))
            if scoring:
                slot.score_rows = (batch.n_tokens, start, len(chunk) - int(last))
            index = batch.add_run(chunk, start, slot.seq, logits_last=last,
                                  logits_all=scoring)
            slot.tokens.extend(chunk)
            slot.n_prompt_done += len(chunk)
            if last:
                slot.logits_index = index
        if batch.n_tokens == 0:
            return None
        t_native = time.perf_counter()
        status = batch.decode(self.ctx.ptr)
        native_s = time.perf_counter() - t_native
        for run in runs:
            # the slots that were generating: their decode time includes this call
            slot = self.slots[run.seq]
            if slot.state == "generate" and slot.timer is not None:
                slot.timer.native_s += native_s
        if status != 0:
            self._decode_failed(status)
            return native_s, batch.n_tokens, 0
        for drafter in self.drafters.values():
            drafter.decoded(batch.n_tokens, runs)
        for slot in self.slots:
            if slot.score_rows is not None and slot.busy:
                self._score_prompt(slot)
        sampled = 0
        for slot in self.slots:
            if slot.logits_index >= 0 and slot.busy:
                sampled += 1
                try:
                    self._after_decode(slot)
                except GrammarDeadEndError as exc:  # this request's grammar, not the engine
                    self._finish(slot, "error", error=str(exc))
        seconds = time.perf_counter() - t0
        for slot, spec, drafted, before in timed:
            assert slot.timer is not None
            spec.timed(drafted, slot.timer.generated_tokens - before, seconds)
            slot.timer.speculation = spec.label()
        return native_s, batch.n_tokens, sampled

    def _add_drafts(self, slot: Slot) -> None:
        """Put the slot's drafts after its pending token (logits at each)."""
        slot.drafts = []
        spec = slot.spec
        if spec is None or not spec.wanted():
            return
        assert slot.params is not None
        room = min(spec.wanted(), self.batch.free_space,
                   self.ctx.n_ctx_seq - len(slot.tokens) - 1,
                   slot.params.max_tokens - slot.generated - 1)
        if room < 1:
            return
        drafts = self.drafters[spec.mode].draft(slot.seq, slot.tokens, room)[:room]
        for token in drafts:
            self.batch.add(token, len(slot.tokens), slot.seq, True)
            slot.tokens.append(token)
        slot.drafts = drafts

    def _score_prompt(self, slot: Slot) -> None:
        """Score the prompt tokens that follow this step's prompt rows (each row predicts
        the token after it; the last row of the prompt predicts the first answer token)."""
        assert slot.score_rows is not None and slot.prompt_lps is not None
        assert slot.params is not None
        first, start, n = slot.score_rows
        slot.score_rows = None
        scored = self.scorer.tokens(self.ctx.ptr, first, slot.prompt[start + 1:start + 1 + n],
                                    slot.params.logprobs or 0)
        if scored is None:
            self._finish(slot, "error", error="llama.cpp kept no logits for the prompt")
            return
        slot.prompt_lps.extend(scored)

    def _score(self, slot: Slot, index: int, token: int) -> tuple[TokenLogprob, ...]:
        """The sampled ``token``'s log-probability at batch ``index``, when asked."""
        assert slot.params is not None
        n_top = slot.params.logprobs
        if n_top is None or self.vocab.is_eog(token):
            return ()
        scored = self.scorer.token(self.ctx.ptr, index, token, n_top)
        return () if scored is None else (scored,)

    def _push(self, slot: Slot, chunk: Chunk) -> None:
        """Deliver a chunk; the first of a request carries the scored prompt."""
        assert slot.handle is not None
        if slot.prompt_lps is not None:
            chunk = replace(chunk, prompt_logprobs=tuple(slot.prompt_lps))
            slot.prompt_lps = None
        if self._outbox is not None:
            self._outbox.append((slot.handle, chunk))
        else:
            slot.handle.push(chunk)

    def _decode_failed(self, status: int) -> None:
        reason = "the context is full" if status == 1 else f"llama_decode returned {status}"
        log.error("decode failed: %s", reason)
        for slot in self.slots:
            if slot.busy:
                # the cells of a failed batch are unknown: forget the sequence entirely
                self.ctx.seq_clear(slot.seq)
                for drafter in self.drafters.values():
                    drafter.admit(slot.seq, 0)
                slot.tokens = []
                self._finish(slot, "error", error=reason)

    def _after_decode(self, slot: Slot) -> None:
        assert slot.sampler is not None and slot.timer is not None and slot.params is not None
        if slot.state == "prefill":
            slot.timer.prefill_done()
            slot.state = "generate"
            if slot.params.max_tokens == 0:  # the prompt was only to be scored
                self._finish(slot, "length")
                return
        if slot.spec is None:
            token = slot.sampler.sample(self.ctx.ptr, slot.logits_index)
            self._take(slot, token, lps=self._score(slot, slot.logits_index, token))
            return
        self._verify(slot)

    def _verify(self, slot: Slot) -> None:
        """Sample at the pending token and at each draft while the target agrees with the
        drafts; emit those tokens, then drop the cells of the drafts not kept."""
        spec, timer, sampler = slot.spec, slot.timer, slot.sampler
        assert spec is not None and timer is not None and sampler is not None
        drafts, slot.drafts = slot.drafts, []
        out: list[int] = []
        lps: list[tuple[TokenLogprob, ...]] = []
        for i in range(len(drafts) + 1):
            out.append(sampler.sample(self.ctx.ptr, slot.logits_index + i))
            lps.append(self._score(slot, slot.logits_index + i, out[-1]))
            if i == len(drafts) or out[-1] != drafts[i]:
                break
        timer.decode_steps += 1
        if drafts:
            timer.drafted_tokens += len(drafts)
            timer.accepted_tokens += len(out) - 1
            spec.record(len(drafts), len(out) - 1)
            timer.speculation = spec.label()
        base = len(slot.tokens) - len(drafts)  # tokens held up to the pending one
        kept = 0  # drafts whose cells stay: each equals a token emitted after it
        for i, token in enumerate(out):
            if not self._take(slot, token, held=base + i, lps=lps[i]) or i == len(out) - 1:
                break
            slot.pending = None  # the draft already sits in the cache
            kept += 1
        if kept < len(drafts):
            if not self.ctx.seq_rm(slot.seq, base + kept, -1):
                log.warning("could not drop rejected drafts of slot %d", slot.seq)
            for drafter in self.drafters.values():
                drafter.rollback(slot.seq, base + kept, kept)
            del slot.tokens[base + kept:]

    def _take(self, slot: Slot, token: int, held: int | None = None,
              lps: tuple[TokenLogprob, ...] = ()) -> bool:
        """Emit one sampled token; True when the request goes on with it pending.

        ``held``: tokens the sequence holds before this one (default: all of them);
        ``lps``: its log-probability, when asked.
        """
        assert slot.timer is not None and slot.params is not None
        slot.timer.token()
        slot.generated += 1
        if self.vocab.is_eog(token) and not slot.params.ignore_eos:
            self._finish(slot, "stop", token_ids=(token,))
            return False
        assert slot.detok is not None
        piece = slot.detok.feed(token)
        slot.text += piece
        if self._check_loop(slot, token, lps):
            return False
        finish = self._stop_or_length(slot, piece)
        out, slot.emitted = self._emittable(slot, finish)
        if finish is not None:
            self._finish(slot, finish, text=out, token_ids=(token,), lps=lps)
            return False
        if (len(slot.tokens) if held is None else held) + 1 >= self.ctx.n_ctx_seq:
            self._finish(slot, "length", text=out + slot.text[slot.emitted:],
                         token_ids=(token,), lps=lps)
            return False
        slot.pending = token
        self._push(slot, Chunk(out, (token,), None, slot.timer.snapshot(), logprobs=lps))
        return True

    def _check_loop(self, slot: Slot, token: int, lps: tuple[TokenLogprob, ...]) -> bool:
        """Apply the loop guard; True when the request ended because of a loop."""
        if slot.guard is None:
            return False
        verdict = slot.guard.feed(token)
        if verdict is None:
            return False
        assert slot.params is not None and slot.handle is not None and slot.timer is not None
        if slot.params.loop_guard == "retry" and not slot.retried:
            log.info("loop guard: %s loop (period %d) in slot %d; retrying with penalties",
                     verdict.kind, verdict.period, slot.seq)
            self._retry(slot, token, lps)
            return True
        log.info("loop guard: %s loop (period %d) in slot %d; stopping",
                 verdict.kind, verdict.period, slot.seq)
        text = slot.text[slot.emitted:]
        slot.emitted = len(slot.text)
        self._finish(slot, "loop", text=text, token_ids=(token,), loop_guard="stopped",
                     lps=lps)
        return True

    def _retry(self, slot: Slot, token: int, lps: tuple[TokenLogprob, ...]) -> None:
        """Continue the same answer with raised penalties (once); the chunk says so."""
        assert slot.params is not None and slot.sampler is not None and slot.guard is not None
        slot.sampler.free()
        raised = {k: max(v, float(getattr(slot.params, k))) for k, v in RETRY_PENALTIES.items()}
        slot.sampler = self._sampler(slot.params, **raised)
        slot.retried = True
        slot.guard.reset()
        text = slot.text[slot.emitted:]
        slot.emitted = len(slot.text)
        slot.pending = token
        assert slot.timer is not None
        self._push(slot, Chunk(text, (token,), None, slot.timer.snapshot(),
                               loop_guard="retried", logprobs=lps))

    def _stop_or_length(self, slot: Slot, piece: str) -> str | None:
        assert slot.params is not None
        if slot.stops is not None and piece:
            hit = slot.stops.feed(piece)
            if hit is not None:
                slot.text = slot.text[:hit]
                return "stop"
        if slot.generated >= slot.params.max_tokens:
            return "length"
        return None

    def _emittable(self, slot: Slot, finish: str | None) -> tuple[str, int]:
        """Text that can go out now: all at the end, else all but a possible stop prefix."""
        end = len(slot.text)
        if finish is None and slot.stops is not None:
            end -= slot.stops.held
        end = max(end, slot.emitted)
        return slot.text[slot.emitted:end], end

    def _finish(self, slot: Slot, reason: str, *, text: str = "",
                token_ids: tuple[int, ...] = (), error: str | None = None,
                loop_guard: str | None = None, lps: tuple[TokenLogprob, ...] = ()) -> None:
        """End the slot's request with a final chunk; the slot keeps its cached tokens."""
        assert slot.timer is not None and slot.handle is not None
        if slot.detok is not None and reason not in ("error", "cancelled"):
            text += slot.detok.flush()
        if loop_guard is None and slot.retried:
            loop_guard = "retried"
        metrics = slot.timer.snapshot()
        self._push(slot, Chunk(text, token_ids, reason, metrics, error=error,
                               loop_guard=loop_guard, logprobs=lps))
        if self.on_finish is not None:
            if self._outbox is not None:
                self._records.append((metrics.to_json(), reason))
            else:
                self.on_finish(metrics.to_json(), reason)
        if slot.sampler is not None:
            slot.sampler.free()
        if slot.state == "prefill":
            # a half-filled prompt: keep only what was really decoded
            slot.tokens = slot.prompt[:slot.n_prompt_done]
        slot.state, slot.handle, slot.sampler, slot.detok = "idle", None, None, None
        slot.pending, slot.guard, slot.params, slot.stops = None, None, None, None
        slot.spec, slot.prompt_lps, slot.score_rows = None, None, None
        if slot.media is not None:
            slot.media.free()
            slot.media = None

    # -- status and teardown --------------------------------------------------------------
    def slot_status(self) -> list[dict[str, Any]]:
        """Per slot: state, tokens held, and its request's id and figures so far (this
        answer's decode t/s, prefill t/s, TTFT: its timer's, as in the final chunk)."""
        out = []
        for s in self.slots:
            doc: dict[str, Any] = {"seq": s.seq, "state": s.state, "tokens": len(s.tokens),
                                   "generated": s.generated if s.busy else 0,
                                   "request_id": None, "decode_tps": None,
                                   "prefill_tps": None, "ttft_s": None}
            if s.busy and s.timer is not None and s.handle is not None:
                m = s.timer.snapshot()
                doc.update(request_id=s.handle.request_id, decode_tps=m.decode_tps,
                           prefill_tps=m.prefill_tps, ttft_s=m.ttft_s)
            out.append(doc)
        return out

    def abort_all(self, reason: str, error: str | None = None) -> None:
        """End every busy slot (used on close)."""
        for slot in self.slots:
            if slot.busy:
                self._finish(slot, reason, error=error)

    def free(self) -> None:
        """Release the batch, the drafters and any sampler still held."""
        for slot in self.slots:
            if slot.sampler is not None:
                slot.sampler.free()
                slot.sampler = None
        for drafter in self.drafters.values():
            drafter.free()
        self.batch.free()

