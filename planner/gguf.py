"""GGUF header reader: metadata and tensor table, never the tensor data.

The reader is pure: it pulls bytes through ``read_at(offset, size) -> bytes``, so one parser
serves a local file, the shards of a split model and ranged HTTP reads. It reads in bounded
chunks and checks every length against what is left of the file, so a truncated or hostile
header fails fast with a :class:`~planner.errors.GGUFError` (one line naming the problem),
never with a hang or a huge allocation.

:func:`read_profile` turns headers into a :class:`~planner.profile.ModelProfile`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from planner.errors import GGUFError, UnsupportedModelError
from planner.ggml_types import GGML_TYPES
from planner.gguf_header import ArrayInfo, GGUFHeader, RawTensor, printable
from planner.profile import ModelProfile
from planner.profile_builder import build_profile

ReadAt = Callable[[int, int], bytes]

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
CHUNK = 1 << 20                 # bytes fetched per read_at call
MAX_STRING = 64 << 20           # longest single string we accept (chat templates are ~100 KB)
MAX_ARRAY = 1 << 22             # longest array we walk (vocabularies are < 300K entries)
MAX_KEPT_ARRAY = 1 << 16        # numeric arrays longer than this are skipped, not kept
MAX_TENSORS = 1 << 20
MAX_KV = 1 << 20
MAX_DIMS = 4                    # GGML_MAX_DIMS

# GGUF value types: id -> (struct format, size); 8 = string, 9 = array.
_SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4),
    6: ("<f", 4), 7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8),
}
_STRING, _ARRAY = 8, 9
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
# versions 2 and 3 as a big-endian writer stores them, read little-endian
_SWAPPED_VERSIONS = frozenset({2 << 24, 3 << 24})
_MIN_TENSOR_ENTRY = 28          # name length, one dimension, type, offset
_MIN_KV_ENTRY = 13              # key length, value type, one byte


class _Cursor:
    """Sequential reads over ``read_at`` through a bounded buffer."""

    def __init__(self, read_at: ReadAt, file_size: int) -> None:
        self._read_at = read_at
        self.size = file_size
        self.pos = 0
        self._buf = b""
        self._buf_start = 0

    def remaining(self) -> int:
        """Bytes of the file after the read position."""
        return self.size - self.pos

    def _fill(self, n: int) -> tuple[bytes, int]:
        """Make ``n`` bytes at ``pos`` available; return (buffer, index of pos in it)."""
        start = self.pos - self._buf_start
        if start >= 0 and start + n <= len(self._buf):
            return self._buf, start
        if n > self.remaining():
            raise GGUFError(f"truncated GGUF: needed {n} bytes at offset {self.pos}, "
                            f"file has {self.size}")
        want = min(max(n, CHUNK), self.remaining())
        try:
            data = self._read_at(self.pos, want)
        except OSError as exc:
            raise GGUFError(f"cannot read GGUF at offset {self.pos}: {exc}") from exc
        if len(data) < n:
            raise GGUFError(f"truncated GGUF: short read at offset {self.pos}")
        self._buf, self._buf_start = data, self.pos
        return data, 0

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes."""
        buf, i = self._fill(n)
        self.pos += n
        return buf[i:i + n]

    def u32(self) -> int:
        """The next little-endian u32."""
        buf, i = self._fill(4)
        self.pos += 4
        return int(_U32.unpack_from(buf, i)[0])

    def u64(self) -> int:
        """The next little-endian u64."""
        buf, i = self._fill(8)
        self.pos += 8
        return int(_U64.unpack_from(buf, i)[0])

    def scalar(self, fmt: str, size: int) -> Any:
        """The next value of struct format ``fmt`` (``size`` bytes)."""
        buf, i = self._fill(size)
        self.pos += size
        return struct.unpack_from(fmt, buf, i)[0]

    def skip(self, n: int) -> None:
        """Move past ``n`` bytes without reading them."""
        if n > self.remaining():
            raise GGUFError(f"truncated GGUF: {n} bytes needed at offset {self.pos}")
        self.pos += n

    def string(self, what: str) -> str:
        """The next length-prefixed string (``what`` names it in errors)."""
        n = self.u64()
        if n > MAX_STRING or n > self.remaining():
            raise GGUFError(f"{printable(what)}: string length {n} does not fit in the "
                            f"{self.remaining()} bytes left (truncated or corrupt file)")
        return self.take(n).decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` length-prefixed strings (token lists) without decoding them."""
        unpack = _U64.unpack_from
        left = count
        while left:
            buf, i = self._fill(8)
            last = len(buf) - 8          # a length prefix must start at or before this
            pos = i
            while left and pos <= last:
                nxt = pos + 8 + unpack(buf, pos)[0]
                if nxt > last + 8:       # the string runs past this buffer
                    break
                pos = nxt
                left -= 1
            if pos == i and left:        # one string larger than the buffer
                n = self.u64()
                if n > MAX_STRING:
                    raise GGUFError(f"string of {n} bytes in an array at offset {self.pos}")
                self.skip(n)
                left -= 1
            else:
                self.pos += pos - i


def _read_value(cur: _Cursor, vtype: int, key: str) -> Any:
    if vtype in _SCALARS:
        fmt, size = _SCALARS[vtype]
        return cur.scalar(fmt, size)
    if vtype == _STRING:
        return cur.string(key)
    if vtype == _ARRAY:
        item = cur.u32()
        count = cur.u64()
        min_size = 8 if item == _STRING else _SCALARS.get(item, ("", 0))[1]
        if item not in _SCALARS and item != _STRING:
            raise GGUFError(f"metadata '{printable(key)}': array of unknown value type "
                            f"{item}")
        if count > MAX_ARRAY or count * min_size > cur.remaining():
            raise GGUFError(f"metadata '{printable(key)}': array length {count} does not fit "
                            f"in the {cur.remaining()} bytes left (truncated or corrupt file)")
        if item == _STRING:
            cur.skip_strings(count)
            return ArrayInfo(item, count)
        fmt, size = _SCALARS[item]
        if count > MAX_KEPT_ARRAY:
            cur.skip(count * size)
            return ArrayInfo(item, count)
        raw = cur.take(count * size)
        return list(struct.unpack(f"<{count}{fmt[1]}", raw))
    raise GGUFError(f"metadata '{printable(key)}': unknown value type {vtype}")


def read_header(read_at: ReadAt, file_size: int) -> GGUFHeader:
    """Parse the header of one GGUF file (metadata and tensor table).

    Args:
        read_at: returns ``size`` bytes of the file from ``offset`` (fewer only at its end).
        file_size: the file's size in bytes.

    Raises:
        GGUFError: not a GGUF, truncated, or absurd counts, lengths or offsets.
        UnsupportedModelError: a tensor of a ggml type this reader does not know.
    """
    cur = _Cursor(read_at, file_size)
    if file_size < 24:
        raise GGUFError(f"not a GGUF file: only {file_size} bytes")
    magic = cur.take(4)
    if magic != GGUF_MAGIC:
        raise GGUFError(f"not a GGUF file: magic {magic!r} instead of b'GGUF'")
    version = cur.u32()
    if version in _SWAPPED_VERSIONS:
        raise GGUFError("big-endian GGUF is not supported (convert it to little-endian)")
    if version not in (2, 3):
        raise GGUFError(f"unsupported GGUF version {version} (2 and 3 are read)")
    n_tensors, n_kv = cur.u64(), cur.u64()
    _check_counts(n_tensors, n_kv, cur.remaining(), file_size)
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string("metadata key")
        if key in metadata:
            raise GGUFError(f"duplicate metadata key '{printable(key)}'")
        metadata[key] = _read_value(cur, cur.u32(), key)
    raw: list[tuple[str, tuple[int, ...], int, int]] = []
    for _ in range(n_tensors):
        name = cur.string("tensor name")
        n_dims = cur.u32()
        if not 1 <= n_dims <= MAX_DIMS:
            raise GGUFError(f"tensor '{printable(name)}': {n_dims} dimensions "
                            f"(1 to {MAX_DIMS} allowed)")
        shape = tuple(cur.u64() for _ in range(n_dims))
        raw.append((name, shape, cur.u32(), cur.u64()))
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0
            or alignment & (alignment - 1)):
        raise GGUFError(f"general.alignment {printable(repr(alignment))} is not a power-of-two "
                        f"integer")
    data_offset = (cur.pos + alignment - 1) // alignment * alignment
    tensors = tuple(_check_tensor(t, data_offset, file_size, alignment) for t in raw)
    _check_layout(tensors)
    return GGUFHeader(version, metadata, tensors, data_offset, file_size)


def _check_counts(n_tensors: int, n_kv: int, remaining: int, file_size: int) -> None:
    """Refuse counts no file could hold (absurd) or this file cannot (truncated)."""
    if n_tensors > MAX_TENSORS:
        raise GGUFError(f"absurd tensor count {n_tensors} for a {file_size}-byte file")
    if n_kv > MAX_KV:
        raise GGUFError(f"absurd metadata count {n_kv} for a {file_size}-byte file")
    if n_tensors * _MIN_TENSOR_ENTRY > remaining:
        raise GGUFError(f"truncated GGUF: {n_tensors} tensors cannot fit in the {remaining} "
                        f"bytes left")
    if n_tensors * _MIN_TENSOR_ENTRY + n_kv * _MIN_KV_ENTRY > remaining:
        raise GGUFError(f"truncated GGUF: {n_kv} metadata entries and {n_tensors} tensors "
                        f"cannot fit in the {remaining} bytes left")


def _check_layout(tensors: tuple[RawTensor, ...]) -> None:
    """Refuse duplicate tensor names and tensors whose data overlap."""
    names: set[str] = set()
    for t in tensors:
        if t.name in names:
            raise GGUFError(f"duplicate tensor '{printable(t.name)}'")
        names.add(t.name)
    end, last = 0, ""
    for t in sorted(tensors, key=lambda t: t.offset):
        if t.offset < end:
            raise GGUFError(f"tensor '{printable(t.name)}' overlaps the data of "
                            f"'{printable(last)}'")
        if t.offset + t.nbytes > end:
            end, last = t.offset + t.nbytes, t.name


def _check_tensor(entry: tuple[str, tuple[int, ...], int, int], data_offset: int,
                  file_size: int, alignment: int) -> RawTensor:
    name, shape, type_id, offset = entry
    if offset % alignment:
        raise GGUFError(f"tensor '{printable(name)}': data offset {offset} is not a multiple "
                        f"of the alignment {alignment}")
    gtype = GGML_TYPES.get(type_id)
    if gtype is None:
        raise UnsupportedModelError(f"tensor '{printable(name)}' has unknown ggml type {type_id}")
    n = 1
    for dim in shape:
        if dim <= 0 or dim > 1 << 40:
            raise GGUFError(f"tensor '{printable(name)}': absurd dimension {dim}")
        n *= dim
        if n > 1 << 48:
            raise GGUFError(f"tensor '{printable(name)}': absurd element count")
    if shape[0] % gtype.block_size:
        raise GGUFError(f"tensor '{printable(name)}': row of {shape[0]} is not a multiple of "
                        f"{gtype.name}'s block of {gtype.block_size}")
    nbytes = gtype.row_bytes(n)
    if data_offset + offset + nbytes > file_size:
        end = data_offset + offset + nbytes
        raise GGUFError(f"tensor '{printable(name)}': data ends at {end}, "
                        f"past the end of the file ({file_size} bytes)")
    return RawTensor(name, shape, type_id, offset, nbytes)


def read_profile(read_at: ReadAt, file_size: int, *,
                 extra_shards: Sequence[tuple[ReadAt, int]] = ()) -> ModelProfile:
    """Read a model's profile from its GGUF header(s) alone.

    Args:
        read_at: reads the first (or only) file: ``read_at(offset, size) -> bytes``.
        file_size: size of that file.
        extra_shards: ``(read_at, size)`` of the other files of a split model, in order.

    Returns:
        The :class:`ModelProfile` of the whole model.

    Raises:
        GGUFError: a header that cannot be read (truncated, hostile, not a GGUF).
        UnsupportedModelError: unknown architecture or tensor type, or missing key facts.
    """
    headers = [read_header(read_at, file_size)]
    headers += [read_header(r, s) for r, s in extra_shards]
    expected = headers[0].metadata.get("split.count")
    if isinstance(expected, int) and expected > 1 and expected != len(headers):
        raise GGUFError(f"split model of {expected} files, but {len(headers)} were given")
    return build_profile(headers)


__all__ = ["ArrayInfo", "GGUFHeader", "RawTensor", "read_header", "read_profile"]

