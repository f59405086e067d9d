"""A bounded probe of one worker: is it there, which protocol, which devices, how far."""

from __future__ import annotations

import logging
import socket
import struct
import time
from dataclasses import dataclass

from engine.rpc import wire
from engine.rpc.endpoint import parse_endpoint

log = logging.getLogger(__name__)


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
            major, minor, patch = wire.hello(sock)
            version = f"{major}.{minor}.{patch}"
            if major != wire.PROTO_MAJOR:
                return WorkerProbe(endpoint, True, version=version, reason="version")
            (count,) = struct.unpack("<I", wire.call(sock, wire.CMD_DEVICE_COUNT, b"", 4))
            latency = min(wire.timed_sync(sock) for _ in range(3))  # the least disturbed
            devices = [_device(sock, endpoint, index) for index in range(min(count, 16))]
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


def _device(sock: socket.socket, endpoint: str, index: int) -> RemoteDevice:
    dev = struct.pack("<I", index)
    free, total = struct.unpack("<QQ", wire.call(sock, wire.CMD_GET_DEVICE_MEMORY, dev, 16))
    (align,) = struct.unpack("<Q", wire.call(sock, wire.CMD_GET_ALIGNMENT, dev, 8))
    (max_size,) = struct.unpack("<Q", wire.call(sock, wire.CMD_GET_MAX_SIZE, dev, 8))
    return RemoteDevice(endpoint, index, free, total, align, max_size)
