"""Pooling GPUs of several computers through llama.cpp's own RPC backend (ggml-rpc).

Two sides:
- the *worker* (``loadout worker``) serves this machine's devices with
  ``ggml_backend_rpc_start_server`` from the engine build's ggml-rpc library;
- the *main* side probes each worker with a bounded, pure-Python conversation in the same
  wire protocol (HELLO, DEVICE_COUNT, GET_DEVICE_MEMORY), so an unreachable or busy worker
  is reported within a timeout instead of hanging inside C, and only then registers the
  worker's devices with ggml (``ggml_backend_rpc_add_server``).

The RPC protocol has no authentication and no encryption: LAN only.
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import socket
import struct
import time
from dataclasses import dataclass
from functools import cache
from typing import Any

from engine.errors import EngineError

log = logging.getLogger(__name__)

DEFAULT_PORT = 50052
# Wire protocol (ggml-rpc.cpp): request = cmd u8 | size u64 | data; reply = size u64 | data.
_CMD_GET_DEVICE_MEMORY = 11
_CMD_HELLO = 14
_CMD_DEVICE_COUNT = 15
_CAPS_SIZE = 24
_PROTO_MAJOR = 7


class WorkerError(EngineError, ConnectionError):
    """A worker that cannot be used: unreachable, busy, wrong version, or it went away."""


class RemoteBindRefused(EngineError, PermissionError):
    """A worker asked to listen on a non-loopback address without the explicit flag."""


@dataclass(frozen=True)
class RemoteDevice:
    """One device a worker serves, as the main side sees it."""

    endpoint: str
    index: int
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class WorkerProbe:
    """What a bounded probe of one worker found."""

    endpoint: str
    reachable: bool
    latency_s: float | None = None
    version: str | None = None
    devices: tuple[RemoteDevice, ...] = ()
    reason: str | None = None        # code: refused | timeout | busy | version | protocol


def parse_endpoint(text: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[v6]:PORT`` too); the port defaults to 50052.

    Raises:
        ValueError: an empty host or a port outside 1..65535.
    """
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.lstrip(":")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    port = int(port_text) if port_text else DEFAULT_PORT
    if not host or not 0 < port < 65536:
        raise ValueError(f"not a worker address: {text!r} (expected HOST:PORT)")
    return host, port


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the worker closed the connection")
        data += chunk
    return bytes(data)


def _call(sock: socket.socket, cmd: int, payload: bytes, reply_size: int) -> bytes:
    sock.sendall(struct.pack("<BQ", cmd, len(payload)) + payload)
    (size,) = struct.unpack("<Q", _recv_exact(sock, 8))
    if size != reply_size:
        raise ValueError(f"unexpected reply size {size} (expected {reply_size})")
    return _recv_exact(sock, size)


def probe_worker(endpoint: str, timeout_s: float = 3.0) -> WorkerProbe:
    """Talk to a worker for at most about ``timeout_s`` seconds and report what it serves.

    A worker serves one client at a time, so a worker in use by another main answers
    nothing: that is reported as ``busy``.
    """
    host, port = parse_endpoint(endpoint)
    started = time.perf_counter()
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except ConnectionRefusedError:
        return WorkerProbe(endpoint, False, reason="refused")
    except TimeoutError:
        return WorkerProbe(endpoint, False, reason="timeout")
    except OSError as exc:
        return WorkerProbe(endpoint, False, reason=f"unreachable: {exc.strerror or exc}")
    with sock:
        sock.settimeout(timeout_s)
        try:
            hello = _call(sock, _CMD_HELLO, bytes(_CAPS_SIZE), 4 + _CAPS_SIZE)
            major, minor, patch = hello[0], hello[1], hello[2]
            version = f"{major}.{minor}.{patch}"
            if major != _PROTO_MAJOR:
                return WorkerProbe(endpoint, True, version=version, reason="version")
            t0 = time.perf_counter()
            (count,) = struct.unpack("<I", _call(sock, _CMD_DEVICE_COUNT, b"", 4))
            latency = time.perf_counter() - t0
            devices = []
            for index in range(min(count, 16)):
                free, total = struct.unpack(
                    "<QQ", _call(sock, _CMD_GET_DEVICE_MEMORY, struct.pack("<I", index), 16))
                devices.append(RemoteDevice(endpoint, index, free, total))
        except TimeoutError:
            return WorkerProbe(endpoint, False, reason="busy")
        except (ConnectionError, ValueError, struct.error) as exc:
            log.warning("worker %s answered oddly: %s", endpoint, exc)
            return WorkerProbe(endpoint, False, reason="protocol")
    log.info("worker %s: protocol %s, %d device(s), %.1f ms round trip (%.0f ms total)",
             endpoint, version, len(devices), latency * 1e3,
             (time.perf_counter() - started) * 1e3)
    return WorkerProbe(endpoint, True, latency_s=latency, version=version,
                       devices=tuple(devices))


@cache
def _rpc_lib() -> Any:
    import llama_cpp  # noqa: F401  (loads ggml and its backends)
    from llama_cpp._ctypes_extensions import load_shared_library
    from llama_cpp._ggml import libggml_base_path

    lib = load_shared_library("ggml-rpc", libggml_base_path)
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
        _rpc_lib()
    except (OSError, FileNotFoundError, RuntimeError, AttributeError):
        return False
    return True


def register_worker(endpoint: str, timeout_s: float = 3.0) -> list[str]:
    """Probe ``endpoint``, then add its devices to this process's engine device list.

    Returns the llama.cpp names of the new devices (``RPC0``, ``RPC1`` ...), which model
    loads then use like local GPUs.

    Raises:
        WorkerError: the worker is unreachable, busy, of another protocol version, or the
            engine build has no RPC backend.
    """
    probe = probe_worker(endpoint, timeout_s)
    if not probe.reachable or probe.reason:
        raise WorkerError(f"worker {endpoint} cannot be used: {probe.reason}")
    if not engine_has_rpc():
        raise WorkerError("this engine build has no RPC backend (build with -DGGML_RPC=ON)")
    from llama_cpp._ggml import libggml

    host, port = parse_endpoint(endpoint)
    reg = _rpc_lib().ggml_backend_rpc_add_server(f"{host}:{port}".encode())
    if not reg:
        raise WorkerError(f"worker {endpoint} serves no device")
    libggml.ggml_backend_register.argtypes = [ctypes.c_void_p]
    libggml.ggml_backend_register.restype = None
    libggml.ggml_backend_register(ctypes.c_void_p(reg))
    from engine.ggml_devices import engine_devices

    return [d.name for d in engine_devices()
            if d.name.startswith("RPC") and d.description == f"{host}:{port}"]


def serve_worker(host: str, port: int, device_names: list[str] | None = None,
                 threads: int | None = None, cache_dir: str | None = None,
                 allow_remote: bool = False) -> None:
    """Serve this machine's devices to mains over RPC. Blocks until the process ends.

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
    from engine.ggml_devices import _lib as ggml_lib
    from engine.ggml_devices import engine_devices

    lib = ggml_lib()
    available = engine_devices()
    # by default every GPU, or the CPU when there is none
    gpus = [d.name for d in available if d.kind in ("gpu", "igpu")]
    wanted = device_names or gpus or ["CPU"]
    handles = []
    for name in wanted:
        dev = lib.ggml_backend_dev_by_name(name.encode())
        if not dev:
            names = ", ".join(d.name for d in available)
            raise WorkerError(f"no device {name!r} here (this machine has: {names})")
        handles.append(dev)
    array = (ctypes.c_void_p * len(handles))(*handles)
    endpoint = f"{host}:{port}".encode()
    n_threads = threads or 0
    if not n_threads:
        import os

        n_threads = os.cpu_count() or 1
    log.warning("RPC worker on %s:%d serving %s — the protocol is unauthenticated: LAN only",
                host, port, ", ".join(wanted))
    _rpc_lib().ggml_backend_rpc_start_server(
        endpoint, cache_dir.encode() if cache_dir else None, n_threads, len(handles), array)
