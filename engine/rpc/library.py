"""The engine build's ggml-rpc library (``-DGGML_RPC=ON``), bound with ctypes."""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

from engine.ggml_devices import linked_library


@cache
def rpc_library() -> Any:
    """libggml-rpc as libllama links it, with the two functions Loadout calls typed.

    Raises:
        OSError, FileNotFoundError, RuntimeError, AttributeError: the build has no RPC
            backend (see :func:`engine_has_rpc`).
    """
    lib = linked_library("ggml-rpc")
    lib.ggml_backend_rpc_start_server.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_void_p)]
    lib.ggml_backend_rpc_start_server.restype = None
    lib.ggml_backend_rpc_add_server.argtypes = [ctypes.c_char_p]
    lib.ggml_backend_rpc_add_server.restype = ctypes.c_void_p
    return lib


def engine_has_rpc() -> bool:
    """Whether this engine build includes the RPC backend (``-DGGML_RPC=ON``)."""
    try:
        rpc_library()
    except (OSError, FileNotFoundError, RuntimeError, AttributeError):
        return False
    return True
