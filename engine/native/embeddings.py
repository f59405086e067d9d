"""A ``llama_context`` that outputs pooled embeddings, and the batched encode over it.

Many inputs go into ONE ``llama_decode`` (which llama.cpp turns into ``llama_encode`` for a
model without a KV cache, such as BERT), each input its own sequence id; llama.cpp pools
each sequence's hidden states (mean, CLS or last token) and ``llama_get_embeddings_seq``
reads one vector per sequence. A non-causal encoder sees a whole batch in one micro-batch,
so the context's ``n_ubatch`` equals its ``n_batch``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import EngineError, ModelLoadError
from engine.launch import LaunchSpec
from engine.native.batch import Batch
from engine.native.context import context_params
from engine.native.model import (
    NativeModel,
    allocation_error,
    capture_native_log,
    failure_message,
    llama,
)
from engine.native.threadpool import ThreadPools

# llama.cpp's ``enum llama_pooling_type`` (-1: unspecified, the model's own)
POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}
POOLING_IDS = {name: i for i, name in POOLING_NAMES.items()}
MAX_SEQUENCES = 64  # sequences per encode (llama.cpp allows 256)


@dataclass(frozen=True)
class EmbeddingShape:
    """How an embedding context is sized.

    Attributes:
        n_batch: tokens of one encode (every input of it together).
        n_seq_max: inputs of one encode.
        pooling: llama.cpp's pooling id (-1: the model's own).
    """

    n_batch: int = 2048
    n_seq_max: int = MAX_SEQUENCES
    pooling: int = -1


class _EmbeddingBatch(Batch):
    """A batch whose every token is an output: pooling reads each sequence's hidden states."""

    def outputs_all(self) -> None:
        ctypes.memset(ctypes.addressof(self._logits.contents), 1, self.n_tokens)


class EmbeddingContext:
    """A context with embeddings on over a loaded model; :meth:`free` releases it.

    Raises (from the constructor):
        OutOfMemoryError, ModelLoadError: llama.cpp could not create the context.
    """

    def __init__(self, model: NativeModel, spec: LaunchSpec, shape: EmbeddingShape) -> None:
        lib = llama()
        params = context_params(spec)
        params.embeddings = True
        params.pooling_type = shape.pooling
        params.n_seq_max = shape.n_seq_max
        params.n_batch = params.n_ubatch = shape.n_batch
        params.n_ctx = shape.n_batch  # a causal model's cache holds one batch at a time
        params.kv_unified = True
        params.flash_attn_type = -1  # llama.cpp decides (on where the device supports it)
        with capture_native_log() as captured:
            ptr = lib.llama_init_from_model(model.ptr, params)
        if not ptr:
            what = f"creating an embedding context for {Path(spec.model_path).name}"
            oom = allocation_error(captured.lines, what)
            if oom is not None:
                raise oom
            raise ModelLoadError(failure_message(captured, f"{what} failed"))
        self.ptr: Any = ptr
        self.memory = lib.llama_get_memory(ptr)  # None for an encoder without a cache
        self.n_batch = int(lib.llama_n_batch(ptr))
        self.n_seq_max = int(lib.llama_n_seq_max(ptr))
        self.n_embd = int(lib.llama_model_n_embd_out(model.ptr))
        self.pooling = POOLING_NAMES.get(int(lib.llama_pooling_type(ptr)), "unknown")
        self.pools = ThreadPools(ptr, spec.threads_batch, spec.threads_batch)
        self._batch = _EmbeddingBatch(self.n_batch, self.n_seq_max)

    def encode(self, inputs: Sequence[Sequence[int]]) -> np.ndarray:
        """The pooled embedding of each input (one row each, not normalised), in ONE decode.

        The inputs must fit together: at most ``n_seq_max`` of them and ``n_batch`` tokens.

        Raises:
            EngineError: llama.cpp failed the decode.
        """
        lib = llama()
        batch = self._batch
        batch.clear()
        for seq, tokens in enumerate(inputs):
            batch.add_run(tokens, 0, seq, logits_last=False)
        batch.outputs_all()
        try:
            status = batch.decode(self.ptr)
            if status != 0:
                raise EngineError(f"llama_decode returned {status} for an embedding batch")
            out = np.empty((len(inputs), self.n_embd), dtype=np.float32)
            for seq in range(len(inputs)):
                row = lib.llama_get_embeddings_seq(self.ptr, seq)
                if not row:
                    raise EngineError(f"llama.cpp gave no embedding for sequence {seq}")
                out[seq] = np.ctypeslib.as_array(row, shape=(self.n_embd,))
        finally:
            if self.memory:  # a causal model's cache: each batch starts empty
                lib.llama_memory_clear(self.memory, True)
        return out

    def free(self) -> None:
        """Release the batch, the thread pool and the context; idempotent."""
        if getattr(self, "ptr", None):
            self._batch.free()
            self.pools.free()
            llama().llama_free(self.ptr)
            self.ptr = None
