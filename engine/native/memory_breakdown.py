"""llama.cpp's own per-buffer-type memory breakdown of a context (what ``--fit`` reads).

``llama_get_memory_breakdown`` is a C++ function of libllama (``src/llama-ext.h``): it
returns a ``std::map<ggml_backend_buffer_type_t, llama_memory_breakdown_data>`` by value,
which ctypes cannot describe. On x86-64 Linux (the System V ABI and libstdc++, whose
``std::map`` layout has been stable since GCC 3.4) the call is made by hand: the caller
passes the map's storage as a hidden first argument, and the red-black tree is walked
from its header. Every pointer is checked before it is followed; anything unexpected
gives ``None`` and the caller falls back to llama.cpp's log. The map's nodes (a few
dozen bytes each) are not freed: there is no destructor to call from here.

Elsewhere (other CPUs, macOS's libc++, Windows' MSVC) :func:`memory_breakdown` returns
``None``.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

SYMBOL = "_Z26llama_get_memory_breakdownPK13llama_context"
_MAP_BYTES = 48          # key_compare (padded), header node (32), node count (8)
_HEADER = 8              # offset of the header node in the map
_NODE_COUNT = 40
_PARENT, _LEFT, _RIGHT = 8, 16, 24   # offsets inside a node (colour first)
_VALUE = 32              # the (key, value) pair after the node base
_MAX_NODES = 256


@dataclass(frozen=True)
class BufferBytes:
    """Bytes llama.cpp holds in one buffer type (``Vulkan0``, ``CPU``, ``Vulkan_Host``)."""

    buffer_type: str
    model: int
    context: int
    compute: int

    @property
    def total(self) -> int:
        """Everything in this buffer type."""
        return self.model + self.context + self.compute


def supported() -> bool:
    """Whether this platform's C++ ABI is the one the hand-made call assumes."""
    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")


@cache
def _function() -> Any:
    from engine.native.model import llama

    llama()  # the backend initialised, the log routed
    from llama_cpp import llama_cpp as raw

    fn = getattr(raw._lib, SYMBOL)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_void_p
    return fn


def _read(address: int, offset: int) -> int:
    return int(ctypes.c_size_t.from_address(address + offset).value)


def _walk(map_address: int) -> list[int] | None:
    """The node addresses of the tree, or ``None`` when its shape is not as expected."""
    header = map_address + _HEADER
    count = _read(map_address, _NODE_COUNT)
    root = _read(header, _PARENT)
    if count > _MAX_NODES or (count == 0) != (root == 0):
        return None
    if root and _read(root, _PARENT) != header:
        return None
    nodes: list[int] = []
    pending = [root] if root else []
    while pending:
        node = pending.pop()
        nodes.append(node)
        if len(nodes) > count:
            return None
        for side in (_LEFT, _RIGHT):
            child = _read(node, side)
            if child:
                if _read(child, _PARENT) != node:
                    return None
                pending.append(child)
    return nodes if len(nodes) == count else None


def memory_breakdown(ctx: int) -> list[BufferBytes] | None:
    """Per buffer type: the bytes of the model, the context (KV, recurrent states) and
    the compute buffers of the ``llama_context`` at ``ctx``; with ``no_alloc`` these are
    the sizes llama.cpp would allocate. ``None`` where the call cannot be made safely."""
    if not supported() or not ctx:
        return None
    try:
        fn = _function()
    except (AttributeError, OSError):
        return None
    from engine.ggml_devices import buffer_type_name

    storage = ctypes.create_string_buffer(_MAP_BYTES + 16)
    address = ctypes.addressof(storage)
    returned = fn(address, ctx)
    if returned != address:
        return None
    nodes = _walk(address)
    if nodes is None:
        return None
    out = []
    for node in nodes:
        buft = _read(node, _VALUE)
        model, context, compute = (_read(node, _VALUE + 8 * i) for i in (1, 2, 3))
        out.append(BufferBytes(buffer_type_name(buft) if buft else "?", model, context,
                               compute))
    return sorted(out, key=lambda b: b.buffer_type)
