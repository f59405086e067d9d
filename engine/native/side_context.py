"""The second ``llama_context`` a drafter keeps beside the target's (an MTP head's, a
DFlash drafter's): the spec's context parameters with a few changed, its own thread pool,
and a reusable ``llama_batch_ext``."""

from __future__ import annotations

from typing import Any

from engine.errors import ModelLoadError
from engine.launch import LaunchSpec
from engine.native.context import context_params
from engine.native.model import capture_native_log, failure_message, llama
from engine.native.threadpool import ThreadPools


class SideContext:
    """Mixed into a drafter: :meth:`_open` sets ``ptr``, ``memory``, ``pools`` and
    ``batch``; :meth:`_close` releases them."""

    ptr: Any = None

    def _open(self, model_ptr: Any, spec: LaunchSpec, what: str, **changes: Any) -> None:
        """Create the context over ``model_ptr`` (``changes``: context parameters set on top
        of the spec's).

        Raises:
            ModelLoadError: llama.cpp could not create it (``what`` names it).
        """
        lib = llama()
        params = context_params(spec)
        for name, value in changes.items():
            setattr(params, name, value)
        with capture_native_log() as captured:
            ptr = lib.llama_init_from_model(model_ptr, params)
        if not ptr:
            raise ModelLoadError(failure_message(captured, f"creating {what} failed"))
        self.ptr = ptr
        self.memory = lib.llama_get_memory(ptr)
        self.pools = ThreadPools(ptr, spec.threads, spec.threads_batch)
        self.batch = lib.llama_batch_ext_init(ptr)

    def _seq_rm(self, seq: int, p0: int) -> bool:
        """Drop the cells of ``seq`` from ``p0`` on; where llama.cpp cannot cut there, the
        whole sequence (then False)."""
        if llama().llama_memory_seq_rm(self.memory, seq, p0, -1):
            return True
        llama().llama_memory_seq_rm(self.memory, seq, -1, -1)
        return False

    def _close(self) -> bool:
        """Release the batch, the thread pool and the context; False when already done."""
        if not self.ptr:
            return False
        lib = llama()
        lib.llama_batch_ext_free(self.batch)
        self.pools.free()
        lib.llama_free(self.ptr)
        self.ptr = None
        return True
