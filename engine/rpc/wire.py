"""The ggml-rpc wire protocol, spoken from Python for the few calls the main side needs.

Request = cmd u8 | size u64 | data; reply = size u64 | data (ggml-rpc.cpp). Every call
runs on a socket with a timeout, so a silent worker costs a timeout, never a hang in C.
"""

from __future__ import annotations

import ctypes
import socket
import struct
import time

CMD_ALLOC_BUFFER = 0
CMD_GET_ALIGNMENT = 1
CMD_GET_MAX_SIZE = 2
CMD_BUFFER_GET_BASE = 3
CMD_FREE_BUFFER = 4
CMD_SET_TENSOR = 6
CMD_GET_DEVICE_MEMORY = 11
CMD_HELLO = 14
CMD_DEVICE_COUNT = 15
CAPS_SIZE = 24
PROTO_MAJOR = 7


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock``.

    Raises:
        ConnectionError: the worker closed the connection first.
    """
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the worker closed the connection")
        data += chunk
    return bytes(data)


def call(sock: socket.socket, cmd: int, payload: bytes, reply_size: int) -> bytes:
    """Send one command and return its reply of ``reply_size`` bytes.

    Raises:
        ValueError: the reply has another size (another protocol, or not a worker).
    """
    sock.sendall(struct.pack("<BQ", cmd, len(payload)) + payload)
    (size,) = struct.unpack("<Q", recv_exact(sock, 8))
    if size != reply_size:
        raise ValueError(f"unexpected reply size {size} (expected {reply_size})")
    return recv_exact(sock, size)


def hello(sock: socket.socket) -> tuple[int, int, int]:
    """The worker's protocol version (major, minor, patch)."""
    reply = call(sock, CMD_HELLO, bytes(CAPS_SIZE), 4 + CAPS_SIZE)
    return reply[0], reply[1], reply[2]


def timed_sync(sock: socket.socket) -> float:
    """One DEVICE_COUNT round trip (the worker answers in order: everything sent before
    it has been handled when it returns); its seconds."""
    t0 = time.perf_counter()
    call(sock, CMD_DEVICE_COUNT, b"", 4)
    return time.perf_counter() - t0


class RpcTensor(ctypes.Structure):
    """``rpc_tensor`` of ggml-rpc.cpp (packed; GGML_MAX_DIMS 4, MAX_SRC 10, MAX_NAME 64)."""

    _pack_ = 1
    _fields_ = [("id", ctypes.c_uint64), ("type", ctypes.c_uint32),
                ("buffer", ctypes.c_uint64), ("ne", ctypes.c_uint32 * 4),
                ("nb", ctypes.c_uint32 * 4), ("op", ctypes.c_uint32),
                ("op_params", ctypes.c_int32 * 16), ("flags", ctypes.c_int32),
                ("src", ctypes.c_uint64 * 10), ("view_src", ctypes.c_uint64),
                ("view_offs", ctypes.c_uint64), ("data", ctypes.c_uint64),
                ("name", ctypes.c_char * 64), ("use_count", ctypes.c_int32)]


def set_tensor_payload(buffer: int, base: int, size: int) -> bytes:
    """``rpc_tensor | cache_flag u8 | offset u64 | data``: an f32 vector filling the buffer."""
    t = RpcTensor()
    t.id = 1
    t.type = 0  # GGML_TYPE_F32
    t.buffer = buffer
    n = size // 4
    t.ne[:] = [n, 1, 1, 1]
    t.nb[:] = [4, size, size, size]
    t.data = base
    t.name = b"loadout_link_probe"
    return bytes(t) + struct.pack("<BQ", 0, 0) + bytes(size)
