"""A ``llama_context`` created with the LaunchSpec's context parameters, and its KV memory."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.errors import ModelLoadError
from engine.launch import LaunchSpec
from engine.native.model import (
    NativeModel,
    allocation_error,
    capture_native_log,
    failure_message,
    llama,
)
from engine.native.threadpool import ThreadPools

log = logging.getLogger(__name__)

def context_params(spec: LaunchSpec) -> Any:
    """Translate a spec into ``llama_context_params``."""
    lib = llama()
    params = lib.llama_context_default_params()
    params.n_ctx = spec.n_ctx
    params.n_batch = spec.n_batch
    params.n_ubatch = min(spec.n_ubatch, spec.n_batch)
    params.n_seq_max = spec.n_seq_max
    params.n_threads = spec.threads
    params.n_threads_batch = spec.threads_batch
    params.flash_attn_type = spec.flash_attn.id
    params.type_k = spec.type_k.id
    params.type_v = spec.type_v.id
    params.offload_kqv = spec.offload_kqv
    params.swa_full = spec.swa_full
    params.kv_unified = spec.kv_unified
    params.no_perf = True
    return params


class NativeContext:
    """A ``llama_context`` over a loaded model; :meth:`free` releases it."""

    def __init__(self, model: NativeModel, spec: LaunchSpec) -> None:
        lib = llama()
        with capture_native_log() as captured:
            ptr = lib.llama_init_from_model(model.ptr, context_params(spec))
        self.load_log = captured.lines
        if not ptr:
            what = f"creating a {spec.n_ctx}-token context for {Path(spec.model_path).name}"
            oom = allocation_error(captured.lines, what)
            if oom is not None:
                raise oom
            raise ModelLoadError(failure_message(captured, f"{what} failed"))
        self.ptr = ptr
        self.memory = lib.llama_get_memory(ptr)
        self.n_ctx = int(lib.llama_n_ctx(ptr))
        self.n_ctx_seq = int(lib.llama_n_ctx_seq(ptr))
        self.n_batch = int(lib.llama_n_batch(ptr))
        self.n_seq_max = int(lib.llama_n_seq_max(ptr))
        self.pools = ThreadPools(ptr, spec.threads, spec.threads_batch)

    def warm_up(self, model: NativeModel, name: str) -> None:
        """Decode BOS and EOS once and forget them, as llama.cpp's server does after a load:
        the weights are read (from disk, for an mmap'd file not yet cached), the backends
        set up their kernels and workspaces, so the first request's TTFT is its own, and a
        decode that cannot run fails the load rather than the first request.

        Raises:
            OutOfMemoryError: a buffer of the first decode could not be allocated.
            ModelLoadError: the first decode failed for another reason.
        """
        from engine.native.batch import Batch

        lib = llama()
        tokens = [t for t in (lib.llama_vocab_bos(model.vocab), lib.llama_vocab_eos(model.vocab))
                  if t >= 0][:self.n_batch] or [0]
        batch = Batch(len(tokens), 1)
        try:
            for i, token in enumerate(tokens):
                batch.add(token, i, 0, i == len(tokens) - 1)
            with capture_native_log() as captured:
                status = batch.decode(self.ptr)
        finally:
            batch.free()
            self.seq_clear(0)
        if status != 0:
            what = f"the first decode of {name}"
            oom = allocation_error(captured.lines, what)
            if oom is not None:
                raise oom
            raise ModelLoadError(failure_message(
                captured, f"{what} failed (llama_decode returned {status})"))

    def seq_rm(self, seq: int, p0: int, p1: int = -1) -> bool:
        """Remove the cells of ``seq`` at positions [p0, p1) (p1 < 0: to the end)."""
        return bool(llama().llama_memory_seq_rm(self.memory, seq, p0, p1))

    def seq_clear(self, seq: int) -> None:
        """Forget every cell of ``seq``."""
        llama().llama_memory_seq_rm(self.memory, seq, -1, -1)

    def seq_pos_max(self, seq: int) -> int:
        """The largest position held for ``seq`` (-1 when empty)."""
        return int(llama().llama_memory_seq_pos_max(self.memory, seq))

    def free(self) -> None:
        """Release the context; idempotent."""
        if getattr(self, "ptr", None):
            self.pools.free()
            llama().llama_free(self.ptr)
            self.ptr = None
