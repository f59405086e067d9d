"""Load a GGUF model with every LaunchSpec parameter applied, tensor buffer overrides included.

llama-cpp-python's ``Llama`` class leaves ``llama_model_params.tensor_buft_overrides``
unset; we build the NULL-terminated ``llama_model_tensor_buft_override`` array ourselves,
with each pattern mapped to the buffer type of the named ggml device.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import (
    AllocationFailedError,
    CorruptModelError,
    ModelLoadCancelled,
    ModelLoadError,
    ModelNotFoundError,
)
from engine.launch import LaunchSpec
from engine.logs import NATIVE_LOGGER, route_native_log

log = logging.getLogger(__name__)

_ALLOC_FAILED = re.compile(r"failed to allocate (\S+) buffer of size (\d+)")
_UNABLE = re.compile(r"unable to allocate (\S+) buffer")
_backend_ready = threading.Lock()
_backend_done = [False]


class _TensorBuftOverride(ctypes.Structure):
    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


def llama() -> Any:
    """The llama_cpp bindings, with the backend initialised once and its log routed."""
    import llama_cpp

    if _backend_done[0]:  # the per-token path: no lock once initialised
        return llama_cpp
    with _backend_ready:
        if not _backend_done[0]:
            route_native_log()
            llama_cpp.llama_backend_init()
            _backend_done[0] = True
    return llama_cpp


class LoadLog(logging.Handler):
    """Collects llama.cpp's log lines (debug included) while a model or context loads."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.lines.append(message)
        if record.levelno >= logging.ERROR:
            self.errors.append(message.strip())


@contextlib.contextmanager
def capture_native_log(level: int = logging.INFO) -> Iterator[LoadLog]:
    """Capture llama.cpp's log lines of ``level`` and up emitted inside the block.

    DEBUG is costly (context creation logs every graph node): only loads that must show
    llama.cpp's per-tensor decisions (buffer overrides) ask for it.
    """
    logger = logging.getLogger(NATIVE_LOGGER)
    handler = LoadLog()
    handler.setLevel(level)
    old_level = logger.level
    if logger.getEffectiveLevel() > level:
        logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@dataclass
class ModelParams:
    """A filled ``llama_model_params`` plus the native buffers it points into (kept alive)."""

    params: Any
    keep: list[Any] = field(default_factory=list)


def model_params(spec: LaunchSpec, progress: Callable[[float], bool] | None) -> ModelParams:
    """Translate a spec into ``llama_model_params`` (overrides and progress included)."""
    lib = llama()
    params = lib.llama_model_default_params()
    keep: list[Any] = []
    params.n_gpu_layers = spec.n_gpu_layers
    params.split_mode = spec.split_mode.id
    params.main_gpu = spec.main_gpu
    params.load_mtp = spec.spec_mode == "mtp"  # the NextN layers, for MTP drafting
    if spec.use_mmap and spec.use_mlock:
        params.load_mode = lib.LLAMA_LOAD_MODE_MMAP_MLOCK
    elif spec.use_mlock:
        params.load_mode = lib.LLAMA_LOAD_MODE_MLOCK
    elif spec.use_mmap:
        params.load_mode = lib.LLAMA_LOAD_MODE_MMAP
    else:
        params.load_mode = lib.LLAMA_LOAD_MODE_NONE
    if spec.tensor_split:
        n_max = int(lib.llama_max_devices())
        split = (ctypes.c_float * n_max)(*spec.tensor_split[:n_max])
        keep.append(split)
        params.tensor_split = split
    if spec.devices:
        devices = device_list(spec.devices, spec.rpc_workers)
        keep.append(devices)
        params.devices = ctypes.cast(devices, ctypes.c_void_p)
    if spec.tensor_overrides:
        overrides = tensor_overrides(spec.tensor_overrides)
        keep.append(overrides)
        params.tensor_buft_overrides = ctypes.cast(overrides, ctypes.c_void_p)
    if progress is not None:
        def _on_progress(value: float, _user: Any) -> bool:
            try:
                return bool(progress(float(value)))
            except Exception:  # an exception must never unwind into C
                log.exception("progress callback failed; cancelling the load")
                return False

        callback = lib.llama_progress_callback(_on_progress)
        keep.append(callback)
        params.progress_callback = callback
    return ModelParams(params=params, keep=keep)


def device_list(names: tuple[str, ...], rpc_workers: tuple[str, ...]) -> ctypes.Array[Any]:
    """A NULL-terminated ``ggml_backend_dev_t`` array of the named devices.

    The devices of ``rpc_workers`` are registered first (a bounded probe of each; an
    unreachable worker raises :class:`engine.rpc.WorkerError`), since llama.cpp only uses
    RPC devices it is handed explicitly.

    Raises:
        ModelLoadError: a named device does not exist in this process.
    """
    from engine.ggml_devices import device_handle, engine_devices
    from engine.rpc import register_worker

    remote: dict[str, list[str]] = {}
    for endpoint in rpc_workers:
        remote[endpoint] = register_worker(endpoint)
    handles = []
    for name in _expand_remote(names, remote):
        dev = device_handle(name)
        if not dev:
            have = ", ".join(d.name for d in engine_devices())
            raise ModelLoadError(f"the engine has no device {name!r} (it has: {have})")
        handles.append(dev)
    return (ctypes.c_void_p * (len(handles) + 1))(*handles, None)


def _expand_remote(names: tuple[str, ...], remote: dict[str, list[str]]) -> list[str]:
    # A worker's devices may be named by its address ("HOST:PORT": all of them,
    # "HOST:PORT#i": its i-th), since llama.cpp numbers RPC devices in registration order.
    out: list[str] = []
    for name in names:
        endpoint, _, index = name.partition("#")
        if endpoint in remote:
            devs = remote[endpoint]
            if index:
                if not index.isdigit() or int(index) >= len(devs):
                    raise ModelLoadError(f"worker {endpoint} has no device #{index}")
                out.append(devs[int(index)])
            else:
                out.extend(devs)
        else:
            out.append(name)
    return out


def tensor_overrides(pairs: tuple[tuple[str, str], ...]) -> ctypes.Array[Any]:
    """A NULL-terminated override array: each regex -> the buffer type of its device.

    The pattern bytes live in the array's ``c_char_p`` fields, which keep the Python bytes
    objects referenced as long as the array lives.

    Raises:
        ModelLoadError: an invalid regex or a device the engine build does not have.
    """
    from engine.ggml_devices import buffer_type

    llama()
    array = (_TensorBuftOverride * (len(pairs) + 1))()
    for i, (pattern, device) in enumerate(pairs):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ModelLoadError(f"tensor override pattern {pattern!r} is invalid: {exc}") from exc
        try:
            buft = buffer_type(device)
        except KeyError as exc:
            raise ModelLoadError(str(exc.args[0])) from exc
        array[i].pattern = pattern.encode()
        array[i].buft = buft
    array[len(pairs)].pattern = None
    array[len(pairs)].buft = None
    return array


def check_model_file(path: str) -> None:
    """Fail early, with a clear message, on a missing file, a folder or a non-GGUF file."""
    p = Path(path)
    if not p.exists():
        raise ModelNotFoundError(f"no such model file: {p}")
    if p.is_dir():
        raise ModelNotFoundError(f"{p} is a folder, not a .gguf file")
    try:
        with open(p, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise ModelNotFoundError(f"cannot read {p}: {exc}") from exc
    if magic != b"GGUF":
        raise CorruptModelError(f"{p} is not a GGUF file (it starts with {magic!r})")


def allocation_error(lines: list[str], what: str) -> AllocationFailedError | None:
    """An out-of-memory error built from the load log, or None when memory was not the cause.

    Reports the size asked (from llama.cpp's message) and the free memory of that device.
    """
    for line in reversed(lines):
        found = _ALLOC_FAILED.search(line)
        unable = _UNABLE.search(line) if found is None else None
        if found is None and unable is None:
            continue
        buft = (found or unable).group(1)  # type: ignore[union-attr]
        asked = int(found.group(2)) if found else None
        device, free = _free_memory(buft)
        asked_text = f"{asked / 2**20:.0f} MiB" if asked is not None else "a buffer"
        free_text = f"{free / 2**20:.0f} MiB free" if free is not None else "free memory unknown"
        return AllocationFailedError(
            f"{what}: out of memory on {device}: asked for {asked_text} ({buft} buffer), "
            f"{free_text}", device=device, asked_bytes=asked, free_bytes=free)
    if any("bad_alloc" in line for line in lines):
        device, free = _free_memory("CPU")
        free_text = f"{free / 2**20:.0f} MiB free" if free is not None else "free memory unknown"
        return AllocationFailedError(f"{what}: out of host memory ({free_text})",
                                     device=device, asked_bytes=None, free_bytes=free)
    return None


def _free_memory(buft_name: str) -> tuple[str, int | None]:
    from engine.ggml_devices import engine_devices

    try:
        devices = engine_devices()
    except Exception:  # diagnostics must not hide the real error
        return buft_name, None
    for dev in devices:
        if buft_name.startswith(dev.name):
            return dev.name, dev.free_bytes
    if buft_name.upper().startswith("CPU"):
        with contextlib.suppress(Exception):
            import psutil

            return "CPU", int(psutil.virtual_memory().available)
    return buft_name, None


class NativeModel:
    """A loaded ``llama_model`` (and its vocab); :meth:`free` releases it."""

    def __init__(self, spec: LaunchSpec,
                 progress: Callable[[float], bool] | None = None) -> None:
        check_model_file(spec.model_path)
        lib = llama()
        cancelled = [False]
        tracked: Callable[[float], bool] | None = None
        if progress is not None:
            user_progress = progress

            def tracked(value: float) -> bool:
                keep_going = bool(user_progress(value))
                cancelled[0] = not keep_going
                return keep_going

        params = model_params(spec, tracked)
        level = logging.DEBUG if spec.tensor_overrides else logging.INFO
        with capture_native_log(level) as captured:
            ptr = lib.llama_model_load_from_file(spec.model_path.encode(), params.params)
        self.load_log: list[str] = captured.lines
        if not ptr:
            if cancelled[0]:
                raise ModelLoadCancelled(f"loading {spec.model_path} was cancelled")
            oom = allocation_error(captured.lines, f"loading {Path(spec.model_path).name}")
            if oom is not None:
                raise oom
            raise ModelLoadError(failure_message(
                captured, f"llama.cpp could not load {spec.model_path}"))
        self.ptr = ptr
        self.vocab = lib.llama_model_get_vocab(ptr)
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.vocab))
        self.n_ctx_train = int(lib.llama_model_n_ctx_train(ptr))

    def meta(self, key: str) -> str | None:
        """A metadata value of the GGUF as text, or None."""
        buf = ctypes.create_string_buffer(4096)
        n = llama().llama_model_meta_val_str(self.ptr, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            llama().llama_model_meta_val_str(self.ptr, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def chat_template(self) -> str | None:
        """The GGUF's ``tokenizer.chat_template``, or None."""
        raw = llama().llama_model_chat_template(self.ptr, None)
        return raw.decode("utf-8", "replace") if raw else None

    def description(self) -> str:
        """llama.cpp's one-line description (architecture, size, type)."""
        buf = ctypes.create_string_buffer(256)
        llama().llama_model_desc(self.ptr, buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def free(self) -> None:
        """Release the model; idempotent."""
        if getattr(self, "ptr", None):
            llama().llama_model_free(self.ptr)
            self.ptr = None


def failure_message(captured: LoadLog, headline: str) -> str:
    """The headline plus llama.cpp's most specific error line, if it logged one."""
    detail = next((e for e in captured.errors if "failed to load model" not in e
                   and "failed to initialize" not in e), "")
    if not detail and captured.errors:
        detail = captured.errors[-1]
    return f"{headline}: {detail}" if detail else headline
