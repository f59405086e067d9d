"""Headers that are well-formed GGUF but say impossible things, and layouts llama.cpp refuses:
each one is refused with a one-line planner error naming what is wrong."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGUFWriter

from planner.errors import GGUFError, PlannerError, UnsupportedModelError
from planner.gguf import read_profile
from planner.profile import ModelProfile
from tests.helpers.gguf_factory import Shape, write_llama

Fill = Callable[[GGUFWriter], None]


def _read(path: Path) -> ModelProfile:
    with open(path, "rb") as f:
        def read_at(offset: int, size: int) -> bytes:
            f.seek(offset)
            return f.read(size)

        return read_profile(read_at, path.stat().st_size)


def _write(path: Path, fill: Fill) -> Path:
    w = GGUFWriter(str(path), "llama")
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _refused(path: Path, error: type[PlannerError], match: str) -> str:
    with pytest.raises(error, match=match) as info:
        _read(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def _q(w: GGUFWriter, layers: int = 1) -> None:
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_q.weight", np.zeros((4, 32), dtype=np.float32))


def _good(w: GGUFWriter, **override: Any) -> None:
    """A complete small llama header; ``override`` replaces (or, as None, drops) keys."""
    keys: dict[str, Any] = {"block_count": 2, "embedding_length": 32, "head_count": 4,
                            "head_count_kv": 2, "context_length": 4096}
    keys.update(override)
    for name, value in keys.items():
        key = f"llama.{name}" if name in ("block_count", "embedding_length",
                                          "context_length") else f"llama.attention.{name}"
        if value is None:
            continue
        if isinstance(value, list):
            w.add_array(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        elif value < 0:
            w.add_int32(key, value)
        else:
            w.add_uint32(key, value)
    _q(w, 2)


def test_the_baseline_header_reads(tmp_path: Path) -> None:
    prof = _read(_write(tmp_path / "ok.gguf", _good))
    assert prof.n_layers == 2 and prof.layers[0].n_head_kv == 2


# --- NaN and infinities -------------------------------------------------------------------

@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_block_count_is_refused(tmp_path: Path, value: float) -> None:
    path = _write(tmp_path / "nan.gguf", lambda w: _good(w, block_count=value))
    assert "llama.block_count" in _refused(path, GGUFError, "not a finite number")


@pytest.mark.parametrize("key", ["head_count", "head_count_kv"])
def test_non_finite_head_count_in_an_array_is_refused(tmp_path: Path, key: str) -> None:
    path = _write(tmp_path / "nan.gguf", lambda w: _good(w, **{key: [float("nan")] * 2}))
    assert f"llama.attention.{key}" in _refused(path, GGUFError, "not a finite number")


# --- missing, zero and negative key facts -------------------------------------------------

def test_zero_blocks_is_refused(tmp_path: Path) -> None:
    def fill(w: GGUFWriter) -> None:
        _good(w, block_count=0)

    _refused(_write(tmp_path / "z.gguf", fill), UnsupportedModelError, "block_count")


@pytest.mark.parametrize("value", [None, 0])
def test_missing_or_zero_embedding_length_is_refused(tmp_path: Path, value: int | None
                                                     ) -> None:
    path = _write(tmp_path / "e.gguf", lambda w: _good(w, embedding_length=value))
    _refused(path, UnsupportedModelError, "embedding_length missing or zero")


def test_missing_head_count_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.gguf", lambda w: _good(w, head_count=None, head_count_kv=None))
    _refused(path, UnsupportedModelError, "head_count missing")


@pytest.mark.parametrize("key", ["head_count", "head_count_kv", "context_length"])
def test_negative_counts_are_refused(tmp_path: Path, key: str) -> None:
    path = _write(tmp_path / "n.gguf", lambda w: _good(w, **{key: -4}))
    assert key in _refused(path, UnsupportedModelError, "negative")


def test_negative_per_layer_head_count_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "n.gguf", lambda w: _good(w, head_count_kv=[2, -2]))
    _refused(path, UnsupportedModelError, "head_count_kv' is negative")


def test_negative_nextn_layers_is_refused(tmp_path: Path) -> None:
    def fill(w: GGUFWriter) -> None:
        _good(w)
        w.add_int32("llama.nextn_predict_layers", -1)

    _refused(_write(tmp_path / "m.gguf", fill), UnsupportedModelError, "nextn_predict_layers")


# --- header layout ------------------------------------------------------------------------

def test_truncated_header_with_plausible_counts_says_truncated(tmp_path: Path) -> None:
    data = write_llama(tmp_path / "l.gguf", header_only=True).read_bytes()[:200]
    with pytest.raises(GGUFError) as info:
        read_profile(lambda o, s: data[o:o + s], len(data))
    assert str(info.value).startswith("truncated GGUF: ")
    assert "absurd" not in str(info.value) and "bytes left" in str(info.value)


def test_truncated_metadata_count_says_truncated() -> None:
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 50) + b"\0" * 100
    with pytest.raises(GGUFError, match="truncated GGUF: 50 metadata entries"):
        read_profile(lambda o, s: data[o:o + s], len(data))


@pytest.mark.parametrize("version", [2, 3])
def test_big_endian_gguf_is_named(version: int) -> None:
    data = b"GGUF" + struct.pack(">IQQ", version, 1, 1) + b"\0" * 100
    with pytest.raises(GGUFError, match="big-endian GGUF is not supported"):
        read_profile(lambda o, s: data[o:o + s], len(data))


def test_duplicate_metadata_key_is_refused(tmp_path: Path) -> None:
    def fill(w: GGUFWriter) -> None:
        w.add_uint32("llama.x_a", 1)
        w.add_uint32("llama.x_b", 2)
        _good(w)

    data = _write(tmp_path / "d.gguf", fill).read_bytes()
    assert read_profile(lambda o, s: data[o:o + s], len(data)).n_layers == 2
    twin = data.replace(b"llama.x_b", b"llama.x_a")  # same length: the layout still holds
    with pytest.raises(GGUFError, match=r"duplicate metadata key 'llama\.x_a'"):
        read_profile(lambda o, s: twin[o:o + s], len(twin))


def _with_offsets(tmp_path: Path, offsets: tuple[int, int]) -> bytes:
    """A two-tensor file whose tensor-table offsets are rewritten to ``offsets``."""
    data = bytearray(_write(tmp_path / "t.gguf", _good).read_bytes())
    for i, name in enumerate((b"blk.0.attn_q.weight", b"blk.1.attn_q.weight")):
        at = data.index(name) + len(name) + 4 + 2 * 8 + 4  # n_dims, two dims, type
        data[at:at + 8] = struct.pack("<Q", offsets[i])
    return bytes(data)


def test_the_unmodified_offsets_read(tmp_path: Path) -> None:
    data = _with_offsets(tmp_path, (0, 512))
    assert read_profile(lambda o, s: data[o:o + s], len(data)).n_layers == 2


def test_unaligned_tensor_data_is_refused(tmp_path: Path) -> None:
    data = _with_offsets(tmp_path, (0, 520))
    with pytest.raises(GGUFError, match="not a multiple of the alignment 32"):
        read_profile(lambda o, s: data[o:o + s], len(data))


def test_overlapping_tensors_are_refused(tmp_path: Path) -> None:
    data = _with_offsets(tmp_path, (0, 256))  # the first tensor holds 512 bytes
    with pytest.raises(GGUFError, match="overlaps"):
        read_profile(lambda o, s: data[o:o + s], len(data))


@pytest.mark.parametrize("alignment", [0, 48, -32])
def test_alignment_must_be_a_power_of_two_integer(tmp_path: Path, alignment: int) -> None:
    def fill(w: GGUFWriter) -> None:
        w.add_int32("general.alignment", alignment)
        _good(w)

    _refused(_write(tmp_path / "a.gguf", fill), GGUFError, "power-of-two")


def test_float_alignment_is_refused(tmp_path: Path) -> None:
    def fill(w: GGUFWriter) -> None:
        w.add_float32("general.alignment", 32.0)
        _good(w)

    _refused(_write(tmp_path / "a.gguf", fill), GGUFError, "power-of-two")


# --- the test factory labels quantization truthfully --------------------------------------

def test_factory_file_type_matches_the_weight_type(tmp_path: Path, sparse_70b: Path) -> None:
    sparse = _read(sparse_70b)
    assert sparse.file_type == "Q4_K_M"
    f16 = _read(write_llama(tmp_path / "f16.gguf", Shape(weight_type="F16"), header_only=True))
    assert f16.file_type == "F16"
    q8 = _read(write_llama(tmp_path / "q8.gguf", Shape(weight_type="Q8_0"), header_only=True))
    assert q8.file_type == "Q8_0"
