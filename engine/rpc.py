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
import math
import socket
import struct
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from engine.errors import EngineError

log = logging.getLogger(__name__)

DEFAULT_PORT = 50052
# Wire protocol (ggml-rpc.cpp): request = cmd u8 | size u64 | data; reply = size u64 | data.
_CMD_ALLOC_BUFFER = 0
_CMD_GET_ALIGNMENT = 1
_CMD_GET_MAX_SIZE = 2
_CMD_BUFFER_GET_BASE = 3
_CMD_FREE_BUFFER = 4
_CMD_SET_TENSOR = 6
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
    alignment: int = 0       # of its buffers (a CPU's are 32 bytes, CUDA's 128)
    max_size: int = 0        # largest buffer (a CPU's is unlimited: 2^64 - 1)

    @property
    def looks_like_cpu(self) -> bool:
        """True when the worker serves a CPU (32-byte alignment, unlimited buffers)."""
        return self.alignment == 32 and self.max_size >= (1 << 63)


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
    """Split ``HOST:PORT``; the port defaults to 50052.

    Raises:
        ValueError: an empty host, a port outside 1..65535, or an IPv6 literal (llama.cpp's
            RPC client splits its address at the first colon: name the host instead).
    """
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.lstrip(":")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if ":" in host:
        raise ValueError(f"{text!r}: llama.cpp's RPC backend cannot reach an IPv6 address; "
                         "use the worker's host name or IPv4 address")
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
            (count,) = struct.unpack("<I", _call(sock, _CMD_DEVICE_COUNT, b"", 4))
            latency = min(_timed_sync(sock) for _ in range(3))  # the least disturbed
            devices = []
            for index in range(min(count, 16)):
                dev = struct.pack("<I", index)
                free, total = struct.unpack(
                    "<QQ", _call(sock, _CMD_GET_DEVICE_MEMORY, dev, 16))
                (align,) = struct.unpack("<Q", _call(sock, _CMD_GET_ALIGNMENT, dev, 8))
                (max_size,) = struct.unpack("<Q", _call(sock, _CMD_GET_MAX_SIZE, dev, 8))
                devices.append(RemoteDevice(endpoint, index, free, total, align, max_size))
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


class _RpcTensor(ctypes.Structure):
    """``rpc_tensor`` of ggml-rpc.cpp (packed; GGML_MAX_DIMS 4, MAX_SRC 10, MAX_NAME 64)."""

    _pack_ = 1
    _fields_ = [("id", ctypes.c_uint64), ("type", ctypes.c_uint32),
                ("buffer", ctypes.c_uint64), ("ne", ctypes.c_uint32 * 4),
                ("nb", ctypes.c_uint32 * 4), ("op", ctypes.c_uint32),
                ("op_params", ctypes.c_int32 * 16), ("flags", ctypes.c_int32),
                ("src", ctypes.c_uint64 * 10), ("view_src", ctypes.c_uint64),
                ("view_offs", ctypes.c_uint64), ("data", ctypes.c_uint64),
                ("name", ctypes.c_char * 64), ("use_count", ctypes.c_int32)]


@dataclass(frozen=True)
class LinkMeasure:
    """Bandwidth and round trip to a worker, measured with the worker's own protocol."""

    endpoint: str
    gbps: float          # 10^9 bytes per second, one way (main -> worker)
    round_trip_s: float
    bytes_sent: int


def measure_link(endpoint: str, device: int = 0, size_bytes: int = 4 << 20,
                 rounds: int = 3, timeout_s: float = 3.0) -> LinkMeasure | None:
    """Time copies of ``size_bytes`` into a scratch buffer on one of the worker's devices.

    The buffer is allocated, written ``rounds`` times (SET_TENSOR, then a small
    synchronous call so the copy is known to have arrived) and freed; the best round
    counts. Bounded by ``timeout_s`` per call; returns None when the worker does not
    take part (busy, refused, too little memory, another protocol version).
    """
    host, port = parse_endpoint(endpoint)
    size_bytes = max(4096, size_bytes // 4 * 4)
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return None
    with sock:
        sock.settimeout(timeout_s)
        try:
            hello = _call(sock, _CMD_HELLO, bytes(_CAPS_SIZE), 4 + _CAPS_SIZE)
            if hello[0] != _PROTO_MAJOR:
                return None
            rtt = min(_timed_sync(sock) for _ in range(3))
            ptr, got = struct.unpack("<QQ", _call(
                sock, _CMD_ALLOC_BUFFER, struct.pack("<IQ", device, size_bytes), 16))
            if not ptr or got < size_bytes:
                return None
            try:
                (base,) = struct.unpack("<Q", _call(sock, _CMD_BUFFER_GET_BASE,
                                                    struct.pack("<Q", ptr), 8))
                payload = _set_tensor_payload(ptr, base, size_bytes)
                best = math.inf
                for _ in range(max(1, rounds)):
                    t0 = time.perf_counter()
                    sock.sendall(struct.pack("<BQ", _CMD_SET_TENSOR, len(payload)))
                    sock.sendall(payload)
                    _timed_sync(sock)
                    best = min(best, time.perf_counter() - t0)
            finally:
                sock.sendall(struct.pack("<BQ", _CMD_FREE_BUFFER, 8) + struct.pack("<Q", ptr))
                _timed_sync(sock)
        except (TimeoutError, ConnectionError, ValueError, struct.error) as exc:
            log.info("link to worker %s not measured: %s", endpoint, exc)
            return None
    seconds = max(best - rtt, 1e-6)
    return LinkMeasure(endpoint, size_bytes / seconds / 1e9, rtt, size_bytes)


def _timed_sync(sock: socket.socket) -> float:
    """One DEVICE_COUNT round trip (the worker answers in order: everything sent before
    it has been handled when it returns); its seconds."""
    t0 = time.perf_counter()
    _call(sock, _CMD_DEVICE_COUNT, b"", 4)
    return time.perf_counter() - t0


def _set_tensor_payload(buffer: int, base: int, size: int) -> bytes:
    """``rpc_tensor | cache_flag u8 | offset u64 | data``: an f32 vector filling the buffer."""
    t = _RpcTensor()
    t.id = 1
    t.type = 0  # GGML_TYPE_F32
    t.buffer = buffer
    n = size // 4
    t.ne[:] = [n, 1, 1, 1]
    t.nb[:] = [4, size, size, size]
    t.data = base
    t.name = b"loadout_link_probe"
    return bytes(t) + struct.pack("<BQ", 0, 0) + bytes(size)


@cache
def _rpc_lib() -> Any:
    from engine.ggml_devices import linked_library

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
        _rpc_lib()
    except (OSError, FileNotFoundError, RuntimeError, AttributeError):
        return False
    return True


def register_worker(endpoint: str, timeout_s: float = 3.0) -> list[str]:
    """Probe ``endpoint``, then connect its devices for loads that name them.

    Returns the llama.cpp names of the new devices (``RPC0``, ``RPC1`` ...): a load whose
    ``LaunchSpec.devices`` lists them places layers there like on local GPUs.

    Raises:
        WorkerError: the worker is unreachable, busy, of another protocol version, or the
            engine build has no RPC backend.
    """
    probe = probe_worker(endpoint, timeout_s)
    if not probe.reachable or probe.reason:
        raise WorkerError(f"worker {endpoint} cannot be used: {probe.reason}")
    if not engine_has_rpc():
        raise WorkerError("this engine build has no RPC backend (build with -DGGML_RPC=ON)")
    from engine.ggml_devices import _lib as ggml_lib

    host, port = parse_endpoint(endpoint)
    reg = _rpc_lib().ggml_backend_rpc_add_server(f"{host}:{port}".encode())
    if not reg:
        raise WorkerError(f"worker {endpoint} serves no device")
    # The devices are deliberately NOT added to ggml's global registry: llama.cpp would
    # then hand them to every later load of this process and abort once the worker has
    # gone. Loads that want them name them (LaunchSpec.devices) and get these handles.
    lib = ggml_lib()
    lib.ggml_backend_reg_dev_count.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_dev_get.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.ggml_backend_reg_dev_get.restype = ctypes.c_void_p
    names = []
    for i in range(int(lib.ggml_backend_reg_dev_count(ctypes.c_void_p(reg)))):
        dev = lib.ggml_backend_reg_dev_get(ctypes.c_void_p(reg), i)
        name = (lib.ggml_backend_dev_name(dev) or b"").decode()
        _REMOTE_DEVICES[name] = int(dev)
        names.append(name)
    if endpoint not in _REGISTERED:
        _REGISTERED.append(endpoint)
    # a worker that vanishes later ends this process inside ggml-rpc: have it say why
    announce_lost_workers(list(_REGISTERED))
    return names


_REMOTE_DEVICES: dict[str, int] = {}
_REGISTERED: list[str] = []  # endpoints of the workers registered in this process


def remote_device(name: str) -> int | None:
    """The ``ggml_backend_dev_t`` of a registered worker's device (``RPC0`` ...), if any."""
    return _REMOTE_DEVICES.get(name)


DEFAULT_CACHE_MAX_BYTES = 20 << 30
CACHE_PRUNE_EVERY_S = 2.0


def prune_cache(folder: Path, max_bytes: int) -> int:
    """Remove the least recently used files of ``folder`` until it holds at most
    ``max_bytes``. Returns the bytes removed.

    The RPC server keeps every large tensor a main sends in its cache folder, without any
    bound; a file removed here is simply sent again by the next main that needs it.
    """
    entries = []
    for path in folder.rglob("*"):
        try:
            st = path.stat()
        except OSError:
            continue
        if path.is_file():
            entries.append((max(st.st_atime, st.st_mtime), st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, path in sorted(entries):
        if total - removed <= max_bytes:
            break
        try:
            path.unlink()
        except OSError:
            continue
        removed += size
    if removed:
        log.info("RPC cache: removed %d bytes to stay under %d", removed, max_bytes)
    return removed


def _keep_cache_bounded(folder: Path, max_bytes: int) -> None:
    """Prune ``folder`` now and then every few seconds, on a daemon thread."""
    import threading

    def loop() -> None:
        while True:
            try:
                prune_cache(folder, max_bytes)
            except OSError:
                log.warning("RPC cache: could not prune %s", folder, exc_info=True)
            time.sleep(CACHE_PRUNE_EVERY_S)

    folder.mkdir(parents=True, exist_ok=True)
    prune_cache(folder, max_bytes)
    threading.Thread(target=loop, name="loadout-rpc-cache", daemon=True).start()


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
    if cache_dir:
        _keep_cache_bounded(Path(cache_dir), cache_max_bytes)
    _rpc_lib().ggml_backend_rpc_start_server(
        endpoint, cache_dir.encode() if cache_dir else None, n_threads, len(handles), array)


# What the engine build prints before aborting when a worker vanishes mid-request.
_LOST_MARKERS = ("Remote RPC server crashed or returned malformed response",
                 "RPC transport initialization failed", "RPC handshake failed")


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


_ABORT_CALLBACK: list[Any] = []  # the installed ctypes callback (kept alive)


def _accepts(endpoint: str, timeout_s: float = 0.5) -> bool:
    """Whether something still accepts connections at ``endpoint`` (a worker serving
    another client still does: its listening socket queues us)."""
    try:
        host, port = parse_endpoint(endpoint)
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def announce_lost_workers(rpc_workers: list[str], stream: Any = None) -> bool:
    """Have ggml say, before it aborts this process over a vanished worker, which workers
    it was using and what to do (ggml-rpc cannot fail a request: it ends the process).

    Returns False when this engine build has no abort hook (the abort then speaks alone).
    """
    from engine.ggml_devices import linked_library

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
            gone = [w for w in rpc_workers if not _accepts(w)]
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


def device_handles(names: list[str]) -> Any:
    """A NULL-terminated ``ggml_backend_dev_t`` array of these devices, for
    ``llama_model_params.devices`` (keep it alive as long as the load uses it).

    llama.cpp uses a worker's registered devices only when a load names them this way.

    Raises:
        WorkerError: a name the engine does not know (a worker not registered yet).
    """
    from engine.ggml_devices import _lib as ggml_lib

    lib = ggml_lib()
    handles = []
    for name in names:
        dev = remote_device(name) or lib.ggml_backend_dev_by_name(name.encode())
        if not dev:
            raise WorkerError(f"no engine device {name!r} (is its worker registered?)")
        handles.append(dev)
    return (ctypes.c_void_p * (len(handles) + 1))(*handles, None)
