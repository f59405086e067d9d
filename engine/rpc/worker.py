"""The worker side (``loadout worker``): serve this machine's devices to mains over RPC."""

from __future__ import annotations

import ctypes
import logging
import os
from pathlib import Path

from engine.ggml_devices import device_handle, engine_devices
from engine.rpc.endpoint import is_loopback
from engine.rpc.errors import RemoteBindRefused, WorkerError
from engine.rpc.library import engine_has_rpc, rpc_library
from engine.rpc.tensor_cache import DEFAULT_CACHE_MAX_BYTES, keep_cache_bounded

log = logging.getLogger(__name__)


def serve_worker(host: str, port: int, device_names: list[str] | None = None,
                 threads: int | None = None, cache_dir: str | None = None,
                 allow_remote: bool = False,
                 cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES) -> None:
    """Serve this machine's devices to mains over RPC. Blocks until the process ends.

    ``cache_dir``: keep received tensors there (so a main that loads the same model again
    sends only their hashes), at most ``cache_max_bytes`` of them.

    Raises:
        RemoteBindRefused: ``host`` is not loopback and ``allow_remote`` is False.
        WorkerError: a named device does not exist, or the build has no RPC backend.
    """
    if not is_loopback(host) and not allow_remote:
        raise RemoteBindRefused(
            f"refusing to listen on {host}: the RPC protocol has no authentication, so "
            "anyone who can reach this port can run code on your devices; pass "
            "--allow-remote to serve a trusted LAN")
    if not engine_has_rpc():
        raise WorkerError("this engine build has no RPC backend (build with -DGGML_RPC=ON)")
    available = engine_devices()
    # by default every GPU, or the CPU when there is none
    gpus = [d.name for d in available if d.kind in ("gpu", "igpu")]
    wanted = device_names or gpus or ["CPU"]
    handles = []
    for name in wanted:
        dev = device_handle(name)
        if not dev:
            names = ", ".join(d.name for d in available)
            raise WorkerError(f"no device {name!r} here (this machine has: {names})")
        handles.append(dev)
    array = (ctypes.c_void_p * len(handles))(*handles)
    endpoint = f"{host}:{port}".encode()
    n_threads = threads or os.cpu_count() or 1
    log.warning("RPC worker on %s:%d serving %s — the protocol is unauthenticated: LAN only",
                host, port, ", ".join(wanted))
    if cache_dir:
        keep_cache_bounded(Path(cache_dir), cache_max_bytes)
    rpc_library().ggml_backend_rpc_start_server(
        endpoint, cache_dir.encode() if cache_dir else None, n_threads, len(handles), array)
