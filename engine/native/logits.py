"""Greedy picks from a context's logits rows, read in place through reused numpy views."""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

import numpy as np

from engine.errors import EngineError

# views kept before the cache starts over (llama.cpp keeps its output buffer, and so the
# rows' addresses, until a batch needs a bigger one)
_MAX_VIEWS = 256


@cache
def _logits_address() -> Any:
    """``llama_get_logits_ith`` returning the row's address as an int (the bindings return
    a ctypes pointer, which costs an object per call), called without releasing the GIL
    (a ``PyDLL`` function): it only looks the row up, and a release hands the GIL to any
    thread waiting for it, a server's event loop thread during its HTTP work, which this
    thread then waits out before it samples the next slot."""
    import llama_cpp.llama_cpp as bindings

    fn = ctypes.PyDLL(bindings._lib._name).llama_get_logits_ith  # the handle already loaded
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    fn.restype = ctypes.c_void_p
    return fn


class LogitsRows:
    """The argmax of the logits row at a batch index of a context.

    Called right after ``llama_decode``, when the weights have just flushed the caches: the
    fewer Python objects per token, the better, so each row address keeps its numpy view.
    """

    def __init__(self, n_vocab: int) -> None:
        self.n_vocab = n_vocab
        self._views: dict[int, np.ndarray[Any, np.dtype[np.float32]]] = {}

    def row(self, ctx: Any, index: int) -> np.ndarray[Any, np.dtype[np.float32]] | None:
        """The logits row at batch ``index``, read in place (valid until the next decode);
        None when llama.cpp holds no logits there."""
        address = _logits_address()(ctx, index)
        if not address:
            return None
        view = self._views.get(address)
        if view is None:
            if len(self._views) >= _MAX_VIEWS:
                self._views.clear()
            buffer = (ctypes.c_float * self.n_vocab).from_address(address)
            view = self._views[address] = np.frombuffer(memoryview(buffer), dtype=np.float32)
        return view

    def rows(self, ctx: Any, first: int, n: int
             ) -> np.ndarray[Any, np.dtype[np.float32]] | None:
        """The ``n`` logits rows at batch indices ``first`` .. ``first + n - 1`` as one
        (n, n_vocab) array (in place when llama.cpp stores them one after the other, as it
        does for consecutive outputs); None when a row is missing."""
        fn = _logits_address()
        start, end = fn(ctx, first), fn(ctx, first + n - 1)
        if not start or not end:
            return None
        if end - start == 4 * self.n_vocab * (n - 1):
            buffer = (ctypes.c_float * (self.n_vocab * n)).from_address(start)
            return np.frombuffer(memoryview(buffer), dtype=np.float32).reshape(n, self.n_vocab)
        rows = [self.row(ctx, first + i) for i in range(n)]
        if any(r is None for r in rows):
            return None
        return np.stack([r for r in rows if r is not None])

    def find(self, ctx: Any, index: int) -> int | None:
        """The token with the highest logit at batch ``index``; None when llama.cpp holds
        no logits there."""
        view = self.row(ctx, index)
        return None if view is None else int(view.argmax())

    def argmax(self, ctx: Any, index: int) -> int:
        """As :meth:`find`, for an index whose logits were asked for.

        Raises:
            EngineError: llama.cpp holds no logits at ``index``.
        """
        token = self.find(ctx, index)
        if token is None:
            raise EngineError(f"llama.cpp holds no logits at batch index {index}")
        return token
