"""A CPU thread pool that lives as long as the context, attached to it.

Without one, ggml creates and joins its worker threads inside every ``llama_decode``: a
thread start per decode step, and cold threads that the OS must first schedule. llama.cpp's
own tools (``llama-bench``, ``llama-server``) attach a persistent pool, and so does the
engine; llama-cpp-python 0.3.36 has no binding for it, so it is declared here.
"""

from __future__ import annotations

import ctypes
import logging
from functools import cache
from typing import Any

from engine.ggml_devices import linked_library

log = logging.getLogger(__name__)

GGML_MAX_N_THREADS = 512  # ggml.h
# Idle workers sleep at once rather than spin for the next graph (llama.cpp's tools spin,
# poll 50): a desktop shares its cores with other work, and spinning threads that wait on
# each other under oversubscription can slow a decode many times over (llama-bench with a
# second llama.cpp process busy on this 2-core machine: tg64 at depth 2000 ran for minutes).
# Waking them costs one signal per decode step.
DEFAULT_POLL = 0


class _PoolParams(ctypes.Structure):
    """``struct ggml_threadpool_params`` (ggml.h)."""

    _fields_ = [
        ("cpumask", ctypes.c_bool * GGML_MAX_N_THREADS),
        ("n_threads", ctypes.c_int),
        ("prio", ctypes.c_int),
        ("poll", ctypes.c_uint32),
        ("strict_cpu", ctypes.c_bool),
        ("paused", ctypes.c_bool),
    ]


@cache
def _libs() -> tuple[Any, Any, Any]:
    import llama_cpp.llama_cpp as bindings

    base, cpu = linked_library("ggml-base"), linked_library("ggml-cpu")
    llama = ctypes.CDLL(bindings._lib._name)  # the libllama the bindings loaded (same handle)
    base.ggml_threadpool_params_default.argtypes = [ctypes.c_int]
    base.ggml_threadpool_params_default.restype = _PoolParams
    cpu.ggml_threadpool_new.argtypes = [ctypes.POINTER(_PoolParams)]
    cpu.ggml_threadpool_new.restype = ctypes.c_void_p
    cpu.ggml_threadpool_free.argtypes = [ctypes.c_void_p]
    cpu.ggml_threadpool_free.restype = None
    llama.llama_attach_threadpool.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.c_void_p]
    llama.llama_attach_threadpool.restype = None
    llama.llama_detach_threadpool.argtypes = [ctypes.c_void_p]
    llama.llama_detach_threadpool.restype = None
    return base, cpu, llama


class ThreadPools:
    """The decode and prompt pools of one context (one pool when the counts agree).

    Args:
        ctx: the ``llama_context`` pointer to attach to.
        threads: decode threads; ``threads_batch``: prompt-processing threads.
        poll: how long idle workers spin for the next graph (0-100, ggml's scale).
    """

    def __init__(self, ctx: Any, threads: int, threads_batch: int,
                 poll: int = DEFAULT_POLL) -> None:
        self._ctx = ctypes.cast(ctx, ctypes.c_void_p).value
        self._pools: list[int] = []
        try:
            base, cpu, llama = _libs()
        except (OSError, AttributeError) as exc:  # a build without a CPU backend library
            log.info("no persistent thread pool: %s", exc)
            return
        decode = self._new(base, cpu, threads, poll)
        batch = decode if threads_batch == threads else self._new(base, cpu, threads_batch,
                                                                   poll)
        if decode and batch:
            llama.llama_attach_threadpool(self._ctx, decode, batch)
            self.attached = True

    attached = False

    def _new(self, base: Any, cpu: Any, n_threads: int, poll: int) -> int | None:
        params = base.ggml_threadpool_params_default(max(1, n_threads))
        params.poll = max(0, min(100, poll))
        pool = cpu.ggml_threadpool_new(ctypes.byref(params))
        if pool:
            self._pools.append(pool)
        return pool or None

    def free(self) -> None:
        """Detach and free the pools; call before the context is freed. Idempotent."""
        if not self._pools:
            return
        _base, cpu, llama = _libs()
        if self.attached and self._ctx:
            llama.llama_detach_threadpool(self._ctx)
            self.attached = False
        for pool in self._pools:
            cpu.ggml_threadpool_free(pool)
        self._pools = []
