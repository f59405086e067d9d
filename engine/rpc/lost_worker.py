"""A worker that went away: ggml-rpc cannot fail a request, it ends the process.

:func:`worker_lost` reads that end from an engine log; :func:`announce_lost_workers` has
ggml say it, naming the worker, before it aborts.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from engine.ggml_devices import linked_library
from engine.rpc.endpoint import accepts
from engine.rpc.errors import WorkerError

# What the engine build prints before aborting when a worker vanishes mid-request.
_LOST_MARKERS = ("Remote RPC server crashed or returned malformed response",
                 "RPC transport initialization failed", "RPC handshake failed")

_ABORT_CALLBACK: list[Any] = []  # the installed ctypes callback (kept alive)


def worker_lost(log_tail: str, rpc_workers: list[str]) -> WorkerError | None:
    """The clear error for an engine process that ended because a worker went away
    (ggml-rpc aborts the process), read from the end of its log; None otherwise."""
    for marker in _LOST_MARKERS:
        if marker in log_tail:
            named = [w for w in rpc_workers if w in log_tail]
            who = ", ".join(named or rpc_workers) or "an RPC worker"
            return WorkerError(
                f"the engine stopped: worker {who} went away or stopped answering "
                f"({marker.lower()}). Plan again without it, or restart it.")
    return None


def announce_lost_workers(rpc_workers: list[str], stream: Any = None) -> bool:
    """Have ggml say, before it aborts this process over a vanished worker, which workers
    it was using and what to do (ggml-rpc cannot fail a request: it ends the process).

    Returns False when this engine build has no abort hook (the abort then speaks alone).
    """
    out = stream if stream is not None else sys.stderr
    try:
        lib = linked_library("ggml-base")
        setter = lib.ggml_set_abort_callback
    except (OSError, AttributeError):
        return False
    prototype = ctypes.CFUNCTYPE(None, ctypes.c_char_p)

    def on_abort(message: bytes | None) -> None:
        text = (message or b"").decode("utf-8", "replace").strip()
        error = worker_lost(text, rpc_workers)
        if error is not None:  # name the one(s) gone: a living worker still accepts
            gone = [w for w in rpc_workers if not accepts(w)]
            error = worker_lost(text, gone or rpc_workers)
        lines = [text] + ([f"loadout: {error}"] if error is not None else [])
        try:
            out.write("\n".join(lines) + "\n")
            out.flush()
        except (OSError, ValueError):
            pass

    callback = prototype(on_abort)
    setter.argtypes = [prototype]
    setter.restype = ctypes.c_void_p
    setter(callback)
    _ABORT_CALLBACK[:] = [callback]
    return True
