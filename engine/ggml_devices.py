"""The devices the llama.cpp engine build sees, through ggml's backend registry (ctypes).

llama-cpp-python does not bind these functions; we bind the few we need from the ggml
library it ships. Used by detection (cross-check, Intel/Vulkan/Apple GPUs), the self-test,
the tensor buffer overrides (a device's buffer type), and the RPC workers' devices, which
are kept out of ggml's registry and looked up here by name (:func:`device_handle`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

DEVICE_TYPES = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel", 4: "meta"}


@dataclass(frozen=True)
class EngineDevice:
    """One ggml backend device: ``name`` as llama.cpp names it (``CPU``, ``CUDA0`` ...)."""

    index: int
    name: str
    description: str
    kind: str
    free_bytes: int
    total_bytes: int
    max_tensor_bytes: int = 0   # largest tensor its kernels take (0: no limit found)


# Where ggml's functions live differs by OS: on Linux and macOS the registry library
# (``ggml``) links ``ggml-base``, and a symbol lookup on it also searches what it links;
# a Windows DLL exports only its own functions (``ggml.dll`` has the registry's few,
# ``ggml-base.dll`` the device and tensor API). The engine's functions are looked up in
# these libraries in turn, then in the backends' own.
CORE_LIBRARIES = ("ggml", "ggml-base")


def library_files(folder: Path, stem: str) -> list[Path]:
    """The files of the ggml library ``stem`` in ``folder``, preferred first: the
    versioned name libllama links (``libggml.so.0``), then the plain one, on every OS."""
    names = (f"lib{stem}.so.0", f"lib{stem}.0.dylib", f"lib{stem}.so", f"lib{stem}.dylib",
             f"{stem}.dll", f"lib{stem}.dll")
    return [folder / name for name in names if (folder / name).is_file()]


def backend_stems(folder: Path) -> list[str]:
    """The ggml backend libraries in ``folder`` (``ggml-cpu``, ``ggml-cuda`` ...)."""
    stems = set()
    for path in folder.glob("*ggml-*"):
        stem = path.name.removeprefix("lib").split(".")[0]
        if stem.startswith("ggml-") and stem not in CORE_LIBRARIES:
            stems.add(stem)
    return sorted(stems)


class GgmlExports:
    """ggml's functions, each found in whichever of ``libraries`` exports it.

    ``libraries`` are ``(stem, load)`` pairs, searched in order; each library is loaded
    (``load()``) only when a function is not found in those before it. An attribute
    returns the ctypes function of the first library that has it, the same object every
    time, so its ``argtypes`` stay set.

    Raises (on attribute access):
        AttributeError: no library exports the function (the message names them all).
        OSError: a library that had to be searched does not load.
    """

    def __init__(self, libraries: list[tuple[str, Callable[[], Any]]]) -> None:
        self._libraries = libraries
        self._loaded: dict[str, Any] = {}

    def library(self, stem: str) -> Any:
        """The library ``stem`` itself (loaded now if it was not)."""
        if stem not in self._loaded:
            load = dict(self._libraries)[stem]
            self._loaded[stem] = load()
        return self._loaded[stem]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        for stem, _load in self._libraries:
            try:
                function = getattr(self.library(stem), name)
            except AttributeError:
                continue
            setattr(self, name, function)
            return function
        looked = ", ".join(stem for stem, _load in self._libraries) or "no library"
        raise AttributeError(f"function {name!r} not found in the engine's ggml "
                             f"libraries ({looked})")


def folder_exports(folder: Path, loader: Callable[[str], Any] = ctypes.CDLL) -> GgmlExports:
    """:class:`GgmlExports` over the ggml libraries in ``folder`` (core first, then the
    backends'), each loaded by ``loader(path)`` when first needed.

    Raises:
        OSError: ``folder`` has no ggml library.
    """
    libraries: list[tuple[str, Callable[[], Any]]] = []
    for stem in (*CORE_LIBRARIES, *backend_stems(folder)):
        files = library_files(folder, stem)
        if files:
            libraries.append((stem, partial(loader, str(files[0]))))
    if not libraries:
        raise OSError(f"no ggml library in {folder}")
    return GgmlExports(libraries)


def linked_library(stem: str) -> Any:
    """The ggml library ``stem`` (``ggml``, ``ggml-rpc``) exactly as libllama links it.

    llama-cpp-python's wheel holds ``libggml.so``, ``libggml.so.0`` ... as separate copies
    (wheels cannot hold links), and libllama links the versioned name: loading the plain
    name, as ``llama_cpp._ggml`` does, maps a second ggml with its own device registry, so
    devices registered there are invisible to model loads. Loading the versioned file by
    the same path returns the copy libllama already uses.
    """
    import llama_cpp  # noqa: F401  (loads libllama, hence the linked ggml)
    from llama_cpp._ctypes_extensions import load_shared_library
    from llama_cpp._ggml import libggml_base_path

    for name in (f"lib{stem}.so.0", f"lib{stem}.0.dylib"):
        path = libggml_base_path / name
        if path.exists():
            return ctypes.CDLL(str(path))
    return load_shared_library(stem, libggml_base_path)


def linked_exports() -> GgmlExports:
    """:class:`GgmlExports` over the engine's ggml libraries as libllama links them."""
    from llama_cpp._ggml import libggml_base_path

    stems = (*CORE_LIBRARIES, *backend_stems(libggml_base_path))
    return GgmlExports([(stem, partial(linked_library, stem)) for stem in stems])


def _typed(lib: Any) -> Any:
    """Give the device functions every caller uses their C signatures; returns ``lib``."""
    lib.ggml_backend_dev_count.argtypes = []
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    for fn in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
        getattr(lib, fn).argtypes = [ctypes.c_void_p]
        getattr(lib, fn).restype = ctypes.c_char_p
    lib.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.POINTER(ctypes.c_size_t)]
    lib.ggml_backend_dev_memory.restype = None
    lib.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_type.restype = ctypes.c_int
    return lib


@cache
def _lib() -> Any:
    lib = _typed(linked_exports())
    lib.ggml_backend_dev_by_name.argtypes = [ctypes.c_char_p]
    lib.ggml_backend_dev_by_name.restype = ctypes.c_void_p
    lib.ggml_backend_dev_buffer_type.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_dev_buffer_type.restype = ctypes.c_void_p
    lib.ggml_backend_buft_name.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_buft_name.restype = ctypes.c_char_p
    return lib


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw else ""


def engine_devices() -> list[EngineDevice]:
    """Every device of the engine build, CPU included, with its free/total memory."""
    return _enumerate(_lib())


def _enumerate(lib: Any) -> list[EngineDevice]:
    devices: list[EngineDevice] = []
    for i in range(int(lib.ggml_backend_dev_count())):
        dev = lib.ggml_backend_dev_get(i)
        name = _text(lib.ggml_backend_dev_name(dev))
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        # Asking an RPC device for its memory talks to its worker, and ggml aborts the
        # whole process when that worker has gone; engine.rpc.probe_worker asks safely.
        if not name.startswith("RPC"):
            lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        kind = DEVICE_TYPES.get(int(lib.ggml_backend_dev_type(dev)), "unknown")
        devices.append(EngineDevice(
            index=i,
            name=name,
            description=_text(lib.ggml_backend_dev_description(dev)),
            kind=kind,
            free_bytes=host_free_bytes(int(total.value)) if kind == "cpu" else int(free.value),
            total_bytes=int(total.value),
            max_tensor_bytes=_max_tensor_bytes(lib, dev) if name.startswith("Vulkan") else 0,
        ))
    return devices


def engine_backends() -> list[str]:
    """The backends ggml registered in this engine build (``CPU``, ``CUDA``, ``RPC`` ...),
    a GPU backend included when it found no device (a CUDA or ROCm build without a GPU)."""
    return backend_names(_lib())


def backend_names(lib: Any) -> list[str]:
    """The names of the backend registrations ``lib`` (ggml's functions) holds."""
    lib.ggml_backend_reg_count.argtypes = []
    lib.ggml_backend_reg_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_reg_get.restype = ctypes.c_void_p
    lib.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_name.restype = ctypes.c_char_p
    return [_text(lib.ggml_backend_reg_name(lib.ggml_backend_reg_get(i)))
            for i in range(int(lib.ggml_backend_reg_count()))]


def host_free_bytes(total: int) -> int:
    """The host's free memory as the OS counts it (``MemAvailable`` on Linux, what
    hardware detection reads): ggml's CPU device reports its free memory as its total."""
    import psutil

    available = int(psutil.virtual_memory().available)
    return min(available, total) if total else available


class _InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p),
                ("no_alloc", ctypes.c_bool)]


_PROBE_CEILING = 1 << 40
_GGML_TYPE_F32 = 0


def _max_tensor_bytes(lib: Any, dev: Any) -> int:
    """The largest f32 tensor the device accepts in an op, asked of the backend itself
    (``ggml_backend_dev_supports_op`` on an element-wise add, tensors never allocated):
    Vulkan refuses tensors beyond its ``maxStorageBufferRange``, and ggml's scheduler
    then runs such an op on the CPU. 0 when no limit shows up to 1 TiB, or on failure."""
    try:
        lib.ggml_init.argtypes = [_InitParams]
        lib.ggml_init.restype = ctypes.c_void_p
        lib.ggml_free.argtypes = [ctypes.c_void_p]
        lib.ggml_free.restype = None
        lib.ggml_new_tensor_1d.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
        lib.ggml_new_tensor_1d.restype = ctypes.c_void_p
        lib.ggml_add.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        lib.ggml_add.restype = ctypes.c_void_p
        lib.ggml_backend_dev_supports_op.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.ggml_backend_dev_supports_op.restype = ctypes.c_bool
    except AttributeError:
        return 0
    ctx = lib.ggml_init(_InitParams(1 << 20, None, True))
    if not ctx:
        return 0
    try:
        def takes(nbytes: int) -> bool:
            t = lib.ggml_new_tensor_1d(ctx, _GGML_TYPE_F32, nbytes // 4)
            return bool(lib.ggml_backend_dev_supports_op(dev, lib.ggml_add(ctx, t, t)))

        if not takes(4) or takes(_PROBE_CEILING):
            return 0
        low, high = 4, _PROBE_CEILING  # takes(low), not takes(high)
        while high - low > 4:
            mid = (low + high) // 8 * 4
            low, high = (mid, high) if takes(mid) else (low, mid)
            lib.ggml_free(ctx)
            ctx = lib.ggml_init(_InitParams(1 << 20, None, True))
        return low
    finally:
        lib.ggml_free(ctx)


# Devices handed in by a backend registration but kept out of ggml's global registry (an
# RPC worker's: llama.cpp would otherwise give them to every later load, and abort once
# the worker has gone): name -> ggml_backend_dev_t.
_ADOPTED: dict[str, int] = {}


def adopt_backend_devices(reg: int) -> list[str]:
    """Remember the devices of a backend registration (``ggml_backend_reg_t``, e.g. what
    ``ggml_backend_rpc_add_server`` returns) by name, without adding them to ggml's
    registry, so :func:`device_handle` finds them. Returns their names (``RPC0`` ...)."""
    lib = _lib()
    lib.ggml_backend_reg_dev_count.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_dev_get.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.ggml_backend_reg_dev_get.restype = ctypes.c_void_p
    names = []
    for i in range(int(lib.ggml_backend_reg_dev_count(ctypes.c_void_p(reg)))):
        dev = lib.ggml_backend_reg_dev_get(ctypes.c_void_p(reg), i)
        name = _text(lib.ggml_backend_dev_name(dev))
        _ADOPTED[name] = int(dev)
        names.append(name)
    return names


def remembered_device(name: str) -> int | None:
    """The ``ggml_backend_dev_t`` of an adopted device (a registered worker's), if any."""
    return _ADOPTED.get(name)


def device_handle(name: str) -> int | None:
    """The ``ggml_backend_dev_t`` of the named device: an adopted one (a registered RPC
    worker's) or one of ggml's registry; None when the engine has no such device."""
    dev = _ADOPTED.get(name) or _lib().ggml_backend_dev_by_name(name.encode())
    return int(dev) if dev else None


def buffer_type(device_name: str) -> int:
    """The default buffer type (a ``ggml_backend_buffer_type_t``) of the named device.

    A registered RPC worker's device (``RPC0`` ...) counts: it is kept out of ggml's
    registry, so ``ggml_backend_dev_by_name`` alone would not find it.

    Raises:
        KeyError: the engine build has no device of that name.
    """
    dev = device_handle(device_name)
    if not dev:
        names = ", ".join(d.name for d in engine_devices())
        raise KeyError(f"the engine has no device {device_name!r} (it has: {names})")
    return int(_lib().ggml_backend_dev_buffer_type(dev))


def buffer_type_name(buft: int) -> str:
    """The name llama.cpp prints for a buffer type (``CPU``, ``CUDA0``, ``CUDA_Host`` ...)."""
    return _text(_lib().ggml_backend_buft_name(ctypes.c_void_p(buft)))


@cache
def _bare_lib() -> Any:
    """libggml loaded from llama-cpp-python's package folder *without* importing the
    package (which pulls in numpy and jinja2: most of a cold ``loadout detect``).

    The same files llama_cpp loads later, so the process keeps one ggml either way.

    Raises:
        OSError: the library is not where llama_cpp keeps it, or does not load.
    """
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        lib = Path(folder) / "lib"
        if library_files(lib, "ggml"):
            return _typed(folder_exports(lib))
    raise OSError("llama_cpp's ggml library was not found")


def engine_devices_quick() -> list[EngineDevice]:
    """Like :func:`engine_devices`, without importing ``llama_cpp`` where that can be
    avoided (hardware detection, which must stay fast)."""
    try:
        lib = _bare_lib()
    except OSError:
        return engine_devices()
    return _enumerate(lib)
