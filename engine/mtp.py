"""Drafting with the model's own NextN (MTP) head, as llama.cpp's ``draft-mtp`` does.

The model is loaded with ``load_mtp`` and gets a second context of type
``LLAMA_CONTEXT_TYPE_MTP`` (its KV cache holds only the NextN layer). The target context
outputs its pre-norm hidden state ``h`` for every token (``llama_set_embeddings_nextn``,
unmasked). The NextN head at position ``p`` reads the token there and the target's ``h``
of position ``p - 1``, and predicts the token at ``p + 1``:

- after every target decode, the decoded tokens go through the head too (each paired with
  the ``h`` of the token before it), so its cache follows the target's;
- to draft, the slot's pending token is paired with the ``h`` that predicted it, then each
  drafted token with the head's own output ``h``; the drafted cells are dropped afterwards
  (verification decodes them again, with the target's ``h``);
- after verification the head's cells past the kept tokens are dropped, and the ``h`` of
  the last kept token becomes the next pending token's.

Reusing a sequence's cached prompt needs the ``h`` before the first new token; only the
last one is kept, so a new request reuses the cache only where it continues exactly there.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import EngineError
from engine.launch import LaunchSpec
from engine.native.context import NativeContext
from engine.native.logits import LogitsRows
from engine.native.model import NativeModel, llama
from engine.native.side_context import SideContext
from engine.speculative import Run

log = logging.getLogger(__name__)


def _ext() -> Any:
    import llama_cpp.llama_cpp_ext as ext

    return ext


class MtpDrafter(SideContext):
    """The NextN head of a model loaded with ``load_mtp`` (mode ``"mtp"``).

    Raises:
        EngineError: the model has no NextN layers.
        ModelLoadError: llama.cpp could not create the MTP context.
    """

    mode = "mtp"

    def __init__(self, model: NativeModel, target: NativeContext, spec: LaunchSpec) -> None:
        lib = llama()
        if int(lib.llama_model_n_layer_nextn(model.ptr)) < 1:
            raise EngineError(f"{Path(spec.model_path).name} has no NextN (MTP) layers to "
                              "draft with")
        self._open(model.ptr, spec, f"the MTP context of {Path(spec.model_path).name}",
                   ctx_type=lib.LLAMA_CONTEXT_TYPE_MTP)
        self.target = target
        self.n_embd = int(lib.llama_model_n_embd_out(model.ptr))
        self.n_vocab = model.n_vocab
        self.greedy = LogitsRows(self.n_vocab)
        _ext().llama_set_embeddings_nextn(target.ptr, True, False)  # h of every token
        _ext().llama_set_embeddings_nextn(self.ptr, True, True)  # h of the drafted rows only
        zero = np.zeros(self.n_embd, dtype=np.float32)
        self.pending: dict[int, np.ndarray] = {}  # per sequence: h before its next token
        self.pending_pos: dict[int, int] = {}  # the position that h belongs to
        self.rows: dict[int, np.ndarray] = {}  # per sequence: h of its last decoded run
        self.rows_pos: dict[int, int] = {}
        self._zero = zero
        log.info("MTP drafting with %d NextN layer(s)",
                 int(lib.llama_model_n_layer_nextn(model.ptr)))

    # -- the head's own cache ---------------------------------------------------------
    def _process(self, entries: list[tuple[int, int, int, np.ndarray]],
                 output_last: bool) -> int:
        """Decode (seq, pos, token, h) entries through the head; llama.cpp's status."""
        lib = llama()
        batch = self.batch
        lib.llama_batch_ext_clear(batch)
        keep = []
        pos = (ctypes.c_int32 * 4)()
        for i, (seq, p, token, h) in enumerate(entries):
            idx = lib.llama_batch_ext_add_token(batch, seq, token)
            if idx < 0:
                raise EngineError(f"the MTP batch refused an entry ({idx})")
            pos[0] = p
            lib.llama_batch_ext_set_pos(batch, idx, pos)
            row = np.ascontiguousarray(h, dtype=np.float32)
            keep.append(row)
            embd = lib.llama_embd(row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), 1,
                                  self.n_embd)
            lib.llama_batch_ext_set_embd_token(batch, idx, embd)
            if output_last and i == len(entries) - 1:
                lib.llama_batch_ext_set_output_logits(batch, idx, True)
        return int(lib.llama_process(self.ptr, lib.LLAMA_PROCESS_TYPE_DECODE, batch))

    # -- the drafter ------------------------------------------------------------------
    def admit(self, seq: int, reuse: int) -> int:
        if reuse and self.pending_pos.get(seq) != reuse - 1:
            reuse = 0  # the h before the first new token is not kept
        self._seq_rm(seq, reuse)
        if reuse == 0:
            self.pending[seq] = self._zero
            self.pending_pos[seq] = -1
        return reuse

    def decoded(self, n_tokens: int, runs: list[Run]) -> None:
        """Pass the target's just-decoded tokens through the head, each with the h before."""
        ptr = _ext().llama_get_embeddings_nextn(self.target.ptr)
        if not ptr or not runs:
            return
        h = np.ctypeslib.as_array(ptr, shape=(n_tokens, self.n_embd))
        entries: list[tuple[int, int, int, np.ndarray]] = []
        for run in runs:
            before = self.pending.get(run.seq, self._zero) if run.pos else self._zero
            for k, token in enumerate(run.tokens):
                entries.append((run.seq, run.pos + k, token,
                                before if k == 0 else h[run.index + k - 1]))
            rows = h[run.index:run.index + len(run.tokens)].copy()
            self.rows[run.seq] = rows
            self.rows_pos[run.seq] = run.pos
            self.pending[run.seq] = rows[-1]
            self.pending_pos[run.seq] = run.pos + len(run.tokens) - 1
        status = self._process(entries, output_last=False)
        if status != 0:
            log.warning("the MTP head could not follow a decode (status %d)", status)

    def draft(self, seq: int, tokens: list[int], k: int) -> list[int]:
        """Up to ``k`` tokens from the head, each fed back with the head's own h."""
        pos0 = len(tokens) - 1
        if self.pending_pos.get(seq) != pos0 - 1:
            return []  # the head is not in step with this sequence
        token, h = tokens[-1], self.pending[seq]
        out: list[int] = []
        for i in range(k):
            if self._process([(seq, pos0 + i, token, h)], output_last=True) != 0:
                break
            token = self.greedy.argmax(self.ptr, 0)
            out.append(token)
            h = np.ctypeslib.as_array(_ext().llama_get_embeddings_nextn_ith(self.ptr, 0),
                                      shape=(self.n_embd,)).copy()
        self._seq_rm(seq, pos0)  # verification decodes these again, with the target's h
        return out

    def rollback(self, seq: int, keep: int, row: int) -> None:
        """Drop the head's cells past ``keep``; the kept token's h becomes the pending one."""
        self._seq_rm(seq, keep)
        rows = self.rows.get(seq)
        if rows is not None and row < len(rows):
            self.pending[seq] = rows[row]
            self.pending_pos[seq] = self.rows_pos[seq] + row

    def free(self) -> None:
        """Release the batch and the MTP context; idempotent."""
        self._close()
