"""A small draft model with the target's vocabulary, proposing tokens greedily.

The draft model has its own ``llama_model`` and ``llama_context`` (its own placement:
``LaunchSpec.draft_n_gpu_layers`` / ``draft_devices``) with one sequence per target slot.
Each sequence's cells follow the slot's tokens by their longest common prefix: before a
draft the cells past that prefix are dropped and the missing tokens decoded in one batch,
then ``k`` tokens are drafted one decode each (argmax). Rejected drafts thus leave the
draft cache at the next draft, with no bookkeeping of their own.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from engine.errors import EngineError
from engine.launch import LaunchSpec
from engine.native.batch import Batch
from engine.native.context import NativeContext
from engine.native.logits import LogitsRows
from engine.native.model import NativeModel, llama
from engine.speculative import Run

log = logging.getLogger(__name__)

VOCAB_SAMPLES = 64  # token ids compared (evenly spread, plus BOS / EOS / the last id)


def draft_spec(spec: LaunchSpec) -> LaunchSpec:
    """The launch of the draft model: the target's context, the draft's own placement."""
    if not spec.draft_model_path:
        raise EngineError("speculation with a draft model needs draft_model_path")
    return spec.with_changes(model_path=spec.draft_model_path,
                             n_gpu_layers=spec.draft_n_gpu_layers,
                             devices=spec.draft_devices, tensor_split=(),
                             tensor_overrides=(), spec_mode="off", draft_model_path=None)


def vocab_mismatch(target: NativeModel, draft: NativeModel) -> str | None:
    """Why two models cannot share drafts (None when their vocabularies agree).

    Compares the vocabulary size, then the text of BOS, EOS and a spread of token ids.
    """
    if target.n_vocab != draft.n_vocab:
        return f"{target.n_vocab} tokens against {draft.n_vocab}"
    lib = llama()
    n = target.n_vocab
    ids = {int(i) for i in np.linspace(0, n - 1, VOCAB_SAMPLES)}
    for vocab in (target.vocab, draft.vocab):
        ids |= {t for t in (lib.llama_vocab_bos(vocab), lib.llama_vocab_eos(vocab)) if t >= 0}
    for token in sorted(ids):
        a = lib.llama_vocab_get_text(target.vocab, token)
        b = lib.llama_vocab_get_text(draft.vocab, token)
        if a != b:
            return f"token {token} is {a!r} in one and {b!r} in the other"
    return None


class DraftModel:
    """The draft model's drafter (mode ``"draft"``); :meth:`free` releases it.

    Raises:
        EngineError: the vocabularies differ (the message names both models).
        ModelLoadError and its kin: the draft model cannot be loaded.
    """

    mode = "draft"

    def __init__(self, target: NativeModel, spec: LaunchSpec) -> None:
        dspec = draft_spec(spec)
        self.model = NativeModel(dspec)
        try:
            why = vocab_mismatch(target, self.model)
            if why is not None:
                raise EngineError(
                    f"the draft model {Path(dspec.model_path).name} cannot draft for "
                    f"{Path(spec.model_path).name}: their vocabularies differ ({why})")
            self.ctx = NativeContext(self.model, dspec)
        except BaseException:
            self.model.free()
            raise
        self.batch = Batch(self.ctx.n_batch, self.ctx.n_seq_max)
        self.held: dict[int, list[int]] = {}  # per sequence: the tokens its cells hold
        self.n_vocab = self.model.n_vocab
        self.greedy = LogitsRows(self.n_vocab)
        log.info("draft model loaded: %s", self.model.description())

    def admit(self, seq: int, reuse: int) -> int:
        return reuse  # the cells follow by common prefix at the next draft

    def draft(self, seq: int, tokens: list[int], k: int) -> list[int]:
        """Up to ``k`` greedy tokens of the draft model after ``tokens``."""
        held = self.held.get(seq, [])
        same = 0
        limit = min(len(held), len(tokens) - 1)  # the last token is always decoded
        while same < limit and held[same] == tokens[same]:
            same += 1
        if not self.ctx.seq_rm(seq, same, -1):
            self.ctx.seq_clear(seq)
            same = 0
        held = tokens[:same]
        self.held[seq] = held
        todo = tokens[same:]
        out: list[int] = []
        while len(out) < k:
            batch = self.batch
            done = 0
            while done < len(todo):  # a long catch-up goes in batch-sized pieces
                part = todo[done:done + batch.capacity]
                batch.clear()
                index = batch.add_run(part, len(held), seq, logits_last=True)
                if batch.decode(self.ctx.ptr) != 0:
                    self.ctx.seq_clear(seq)
                    self.held[seq] = []
                    return out
                held.extend(part)
                done += len(part)
            token = self.greedy.argmax(self.ctx.ptr, index)
            out.append(token)
            todo = [token]
        return out

    def decoded(self, n_tokens: int, runs: list[Run]) -> None:
        return None

    def rollback(self, seq: int, keep: int, row: int) -> None:
        return None

    def free(self) -> None:
        """Release the batch, context and model; idempotent."""
        if getattr(self, "ctx", None) is not None:
            self.batch.free()
            self.ctx.free()
            self.model.free()
            self.ctx = None  # type: ignore[assignment]
