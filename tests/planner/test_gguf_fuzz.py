"""Fuzzing the header reader: any bytes give a profile or a one-line PlannerError, fast."""

from __future__ import annotations

import functools
import struct
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import PlannerError
from planner.gguf import read_profile
from planner.profile import ModelProfile
from tests.helpers.gguf_factory import Shape, write_qwen3moe


@functools.cache
def seed_bytes() -> bytes:
    """A small, valid qwen3moe header (data left as a hole)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_qwen3moe(Path(tmp) / "seed.gguf",
                              Shape(n_layers=1, n_vocab=300, n_expert=4, n_expert_used=2,
                                    n_ff_exp=32), header_only=True)
        return path.read_bytes()


def _read(data: bytes) -> ModelProfile | PlannerError:
    start = time.perf_counter()
    try:
        result: ModelProfile | PlannerError = read_profile(
            lambda offset, size: data[offset:offset + size], len(data))
    except PlannerError as exc:
        assert "\n" not in str(exc) and str(exc)
        result = exc
    assert time.perf_counter() - start < 1.0
    return result


_settings = settings(max_examples=150, deadline=2000)


@_settings
@given(st.data())
def test_mutated_headers_fail_cleanly(data: st.DataObject) -> None:
    buf = bytearray(seed_bytes())
    header_end = min(len(buf), 16000)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, header_end - 8))
        kind = data.draw(st.sampled_from(["byte", "u64", "u32"]))
        if kind == "byte":
            buf[pos] = data.draw(st.integers(0, 255))
        elif kind == "u64":
            buf[pos:pos + 8] = struct.pack("<Q", data.draw(st.integers(0, 2**64 - 1)))
        else:
            buf[pos:pos + 4] = struct.pack("<I", data.draw(st.integers(0, 2**32 - 1)))
    _read(bytes(buf))


@_settings
@given(cut=st.integers(0, 20000))
def test_truncated_headers_fail_cleanly(cut: int) -> None:
    seed = seed_bytes()
    result = _read(seed[:cut % len(seed)])
    assert isinstance(result, PlannerError)


@_settings
@given(st.binary(min_size=0, max_size=4096))
def test_random_bytes_fail_cleanly(blob: bytes) -> None:
    assert isinstance(_read(blob), PlannerError)


@_settings
@given(st.binary(min_size=20, max_size=400))
def test_random_bytes_after_a_valid_prefix_fail_cleanly(blob: bytes) -> None:
    _read(b"GGUF" + struct.pack("<I", 3) + blob)


def test_hostile_header_allocates_little() -> None:
    # a 2 GB "file" whose header claims a 1.9 GB string: refused without reading it
    big = 2_000_000_000
    key = b"general.name"
    head = (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
            + struct.pack("<IQ", 8, big - 100))

    def read_at(offset: int, size: int) -> bytes:
        chunk = head[offset:offset + size]
        return chunk + b"\0" * (min(size, big - offset) - len(chunk))

    tracemalloc.start()
    try:
        with pytest.raises(PlannerError):
            read_profile(read_at, big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_seed_itself_reads() -> None:
    result = _read(seed_bytes())
    assert isinstance(result, ModelProfile) and result.architecture == "qwen3moe"


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    k = key.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", vtype) + payload


_NUMERIC_KEYS = ("llama.block_count", "llama.embedding_length", "llama.context_length",
                 "llama.attention.head_count", "llama.attention.head_count_kv",
                 "llama.attention.key_length", "llama.attention.sliding_window",
                 "llama.expert_count", "llama.nextn_predict_layers", "llama.vocab_size")
_ODD_FLOATS = st.sampled_from([float("nan"), float("inf"), float("-inf"), -1.0, -0.5, 0.0,
                               1e300, 3.5]) | st.floats()


@_settings
@given(key=st.sampled_from(_NUMERIC_KEYS), value=_ODD_FLOATS,
       form=st.sampled_from(["f32", "f64", "array_f32", "array_f64", "i32", "i64"]))
def test_odd_numeric_metadata_fails_cleanly(key: str, value: float, form: str) -> None:
    """NaN, infinities, negatives and huge values in any count: a model or a planner error."""
    base = {"llama.block_count": 1, "llama.embedding_length": 32, "llama.context_length": 64,
            "llama.attention.head_count": 4, "llama.attention.head_count_kv": 4}
    kvs = [_kv("general.architecture", 8, struct.pack("<Q", 5) + b"llama")]
    for k, v in base.items():
        if k != key:
            kvs.append(_kv(k, 4, struct.pack("<I", v)))
    if form in ("i32", "i64"):
        whole = int(max(-2**31, min(2**31 - 1, value))) if value == value else -1
        kvs.append(_kv(key, 5, struct.pack("<i", whole)) if form == "i32"
                   else _kv(key, 11, struct.pack("<q", whole)))
    elif form.startswith("array"):
        fmt, code = ("<f", 6) if form == "array_f32" else ("<d", 12)
        packed = struct.pack(fmt, value) if fmt == "<d" or abs(value) < 3e38 or value != value \
            else struct.pack(fmt, float("inf"))
        kvs.append(_kv(key, 9, struct.pack("<IQ", code, 1) + packed))
    else:
        fmt, code = ("<f", 6) if form == "f32" else ("<d", 12)
        packed = struct.pack(fmt, value) if fmt == "<d" or abs(value) < 3e38 or value != value \
            else struct.pack(fmt, float("inf"))
        kvs.append(_kv(key, code, packed))
    name = b"blk.0.attn_q.weight"
    tensor = (struct.pack("<Q", len(name)) + name + struct.pack("<IQQ", 2, 32, 4)
              + struct.pack("<IQ", 0, 0))
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kvs)) + b"".join(kvs) + tensor
    data = head + b"\0" * (-len(head) % 32) + b"\0" * 512
    result = _read(data)
    if isinstance(result, ModelProfile):
        assert result.n_layers >= 1 and result.n_embd > 0
        assert all(la.n_head >= 0 and la.n_head_kv >= 0 for la in result.layers)
