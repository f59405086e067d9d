"""The network link to a worker: bandwidth and round trip, timed in its own protocol."""

from __future__ import annotations

import logging
import math
import socket
import struct
import time
from dataclasses import dataclass

from engine.rpc import wire
from engine.rpc.endpoint import parse_endpoint

log = logging.getLogger(__name__)


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
            if wire.hello(sock)[0] != wire.PROTO_MAJOR:
                return None
            rtt = min(wire.timed_sync(sock) for _ in range(3))
            ptr, got = struct.unpack("<QQ", wire.call(
                sock, wire.CMD_ALLOC_BUFFER, struct.pack("<IQ", device, size_bytes), 16))
            if not ptr or got < size_bytes:
                return None
            try:
                best = _best_copy(sock, ptr, size_bytes, rounds)
            finally:
                sock.sendall(struct.pack("<BQ", wire.CMD_FREE_BUFFER, 8)
                             + struct.pack("<Q", ptr))
                wire.timed_sync(sock)
        except (TimeoutError, ConnectionError, ValueError, struct.error) as exc:
            log.info("link to worker %s not measured: %s", endpoint, exc)
            return None
    seconds = max(best - rtt, 1e-6)
    return LinkMeasure(endpoint, size_bytes / seconds / 1e9, rtt, size_bytes)


def _best_copy(sock: socket.socket, ptr: int, size_bytes: int, rounds: int) -> float:
    """Seconds of the fastest of ``rounds`` copies into the worker's buffer ``ptr``."""
    (base,) = struct.unpack("<Q", wire.call(sock, wire.CMD_BUFFER_GET_BASE,
                                            struct.pack("<Q", ptr), 8))
    payload = wire.set_tensor_payload(ptr, base, size_bytes)
    best = math.inf
    for _ in range(max(1, rounds)):
        t0 = time.perf_counter()
        sock.sendall(struct.pack("<BQ", wire.CMD_SET_TENSOR, len(payload)))
        sock.sendall(payload)
        wire.timed_sync(sock)
        best = min(best, time.perf_counter() - t0)
    return best
