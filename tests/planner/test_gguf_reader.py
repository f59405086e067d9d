"""The GGUF header reader: what it extracts, and how it refuses bad input."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gguf import GGUFReader

from planner.errors import GGUFError, PlannerError, UnsupportedModelError
from planner.gguf import read_header, read_profile
from planner.profile import LayerKind, ModelProfile, TensorKind
from tests.helpers.gguf_factory import (
    Shape,
    write_gemma3,
    write_llama,
    write_llama_split,
    write_qwen3moe,
    write_qwen35,
)


def reader(data: bytes) -> tuple[Callable[[int, int], bytes], int]:
    """An in-memory ``read_at`` over ``data`` (what a hub range reader looks like)."""
    return (lambda offset, size: data[offset:offset + size]), len(data)


def profile_of(path: Path) -> ModelProfile:
    """The profile of a file, read in memory."""
    return read_profile(*reader(path.read_bytes()))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("reader")
    return {
        "llama": write_llama(d / "llama.gguf", header_only=True),
        "moe": write_qwen3moe(d / "moe.gguf", Shape(n_expert=8, n_expert_used=2, n_ff_exp=64,
                                                     n_shared_ff=0), header_only=True),
        "gemma3": write_gemma3(d / "gemma3.gguf", header_only=True),
        "qwen35": write_qwen35(d / "qwen35.gguf", header_only=True),
        "split": write_llama_split(d / "sp-00001-of-00003.gguf", 3, header_only=True),
    }


# --- what the reader extracts -------------------------------------------------------------

def test_tensor_table_matches_the_gguf_package(files: dict[str, Path]) -> None:
    prof = profile_of(files["moe"])
    ref = GGUFReader(files["moe"])
    assert len(prof.tensors) == len(ref.tensors)
    ours = {t.name: t for t in prof.tensors}
    for t in ref.tensors:
        mine = ours[t.name]
        assert mine.offset == t.data_offset
        assert mine.nbytes == t.n_bytes
        assert mine.shape == tuple(int(x) for x in t.shape)
        assert mine.ggml_type == t.tensor_type.name


def test_llama_geometry_and_byte_groups(files: dict[str, Path]) -> None:
    s = Shape()
    prof = profile_of(files["llama"])
    assert (prof.architecture, prof.n_layers, prof.n_embd) == ("llama", s.n_layers, s.n_embd)
    assert prof.n_vocab == s.n_vocab and prof.n_ctx_train == s.n_ctx_train
    layer = prof.layers[0]
    assert layer.kind == LayerKind.FULL
    assert (layer.n_head, layer.n_head_kv, layer.head_dim_k) == (s.n_head, s.n_head_kv,
                                                                s.head_dim)
    q, kv = s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    attn = 2 * (s.n_embd * q) * 2 + 2 * (s.n_embd * kv) * 2  # F16 q, o, k, v
    assert layer.bytes_of(TensorKind.ATTENTION) == attn
    assert layer.bytes_of(TensorKind.FFN) == 3 * s.n_embd * s.n_ff * 2
    assert layer.bytes_of(TensorKind.NORM) == 2 * s.n_embd * 4
    assert layer.n_ff == s.n_ff
    assert prof.token_embd_bytes == s.n_embd * s.n_vocab * 2
    assert prof.output_bytes == s.n_embd * s.n_vocab * 2 + s.n_embd * 4
    assert prof.weights_bytes == sum(la.total_bytes for la in prof.layers) + \
        prof.token_embd_bytes + prof.output_bytes + prof.other_bytes
    assert prof.chat_template and "messages" in prof.chat_template
    assert dict(prof.quant_bytes)["F16"] > dict(prof.quant_bytes)["F32"] > 0
    assert not prof.tied_output


def test_moe_experts_are_grouped_apart(files: dict[str, Path]) -> None:
    prof = profile_of(files["moe"])
    assert prof.is_moe and (prof.expert_count, prof.expert_used_count) == (8, 2)
    layer = prof.layers[0]
    assert layer.bytes_of(TensorKind.EXPERTS) == 3 * 64 * 64 * 8 * 2
    assert layer.bytes_of(TensorKind.FFN) == 64 * 8 * 4  # the router only
    assert layer.n_ff_exp == 64


def test_gemma3_layers_follow_the_sliding_window_pattern(files: dict[str, Path]) -> None:
    prof = profile_of(files["gemma3"])
    kinds = [la.kind for la in prof.layers]
    assert kinds == [LayerKind.SWA] * 5 + [LayerKind.FULL]
    assert prof.layers[0].swa_window == 256 and prof.layers[5].swa_window == 0
    assert prof.tied_output


def test_qwen35_hybrid_has_recurrent_attention_and_mtp_layers(files: dict[str, Path]) -> None:
    prof = profile_of(files["qwen35"])
    kinds = [la.kind for la in prof.layers]
    assert kinds == [LayerKind.RECURRENT] * 3 + [LayerKind.FULL, LayerKind.NEXTN]
    assert prof.nextn_layers == 1
    rec = prof.layers[0]
    # conv (d_conv-1) x (d_inner + 2 groups x d_state) + ssm d_state x d_inner, f32
    assert rec.n_head_kv == 0 and rec.recurrent_state_bytes == 4 * (3 * (64 + 64) + 16 * 64)
    assert rec.bytes_of(TensorKind.RECURRENT) > 0
    assert prof.layers[4].bytes_of(TensorKind.NEXTN) == prof.layers[4].total_bytes > 0


def test_split_model_reads_as_one(files: dict[str, Path]) -> None:
    first = files["split"]
    shards = sorted(first.parent.glob("sp-*-of-00003.gguf"))
    readers = [reader(p.read_bytes()) for p in shards]
    prof = read_profile(*readers[0], extra_shards=readers[1:])
    whole = profile_of(files["llama"])
    assert prof.shards == 3
    assert sorted(t.name for t in prof.tensors) == sorted(t.name for t in whole.tensors)
    assert prof.weights_bytes == whole.weights_bytes
    assert {t.shard for t in prof.tensors} == {0, 1, 2}


def test_split_model_with_a_missing_shard_is_refused(files: dict[str, Path]) -> None:
    first = files["split"]
    with pytest.raises(GGUFError, match="split model of 3 files"):
        read_profile(*reader(first.read_bytes()))


def test_huge_model_header_reads_without_touching_data(sparse_70b: Path) -> None:
    path = sparse_70b
    calls: list[tuple[int, int]] = []
    with open(path, "rb") as f:
        def read_at(offset: int, size: int) -> bytes:
            calls.append((offset, size))
            f.seek(offset)
            return f.read(size)

        prof = read_profile(read_at, path.stat().st_size)
    assert prof.n_layers == 80 and prof.weights_bytes > 35e9
    last_read = max(o + s for o, s in calls)
    data_start = min(t.offset for t in prof.tensors)
    assert last_read <= data_start + (1 << 20)  # never more than one chunk past the header


# --- bad input ----------------------------------------------------------------------------

def _kv_string(key: str, value: str) -> bytes:
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", 8) + struct.pack("<Q", len(v)) + v


def _header(n_tensors: int, kvs: list[bytes], tensors: list[bytes] = (),
            version: int = 3, magic: bytes = b"GGUF") -> bytes:
    return (magic + struct.pack("<IQQ", version, n_tensors, len(kvs)) + b"".join(kvs)
            + b"".join(tensors))


def _tensor(name: str, shape: tuple[int, ...], type_id: int, offset: int) -> bytes:
    n = name.encode()
    return (struct.pack("<Q", len(n)) + n + struct.pack("<I", len(shape))
            + b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<IQ", type_id, offset))


def _fails(data: bytes, error: type[PlannerError], match: str) -> None:
    start = time.perf_counter()
    with pytest.raises(error, match=match) as info:
        read_profile(*reader(data))
    assert time.perf_counter() - start < 1.0
    assert "\n" not in str(info.value)


def test_wrong_magic_is_not_a_gguf() -> None:
    _fails(_header(0, [], magic=b"GGML") + b"\0" * 64, GGUFError, "not a GGUF")


def test_tiny_file_is_not_a_gguf() -> None:
    _fails(b"GGUF", GGUFError, "not a GGUF")


def test_truncated_header_says_truncated(files: dict[str, Path]) -> None:
    data = files["llama"].read_bytes()
    _fails(data[:3000], GGUFError, "truncated")


def test_absurd_tensor_count_is_refused() -> None:
    _fails(_header(1 << 60, []) + b"\0" * 100, GGUFError, "absurd tensor count")


def test_absurd_array_length_is_refused() -> None:
    key = b"tokenizer.ggml.tokens"
    kv = struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", 9, 8, 1 << 40)
    _fails(_header(0, [kv]) + b"\0" * 100, GGUFError, "array length .* does not fit")


def test_absurd_string_length_is_refused() -> None:
    key = b"general.name"
    kv = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, 1 << 50)
    _fails(_header(0, [kv]) + b"\0" * 100, GGUFError, "string length .* does not fit")


def test_tensor_past_the_end_of_the_file_is_refused() -> None:
    kvs = [_kv_string("general.architecture", "llama")]
    data = _header(1, kvs, [_tensor("token_embd.weight", (64, 32), 0, 0)])
    data += b"\0" * (64 - len(data) % 32)  # data section holds far less than 64x32 f32
    _fails(data, GGUFError, "past the end")


def test_unknown_ggml_type_is_unsupported() -> None:
    kvs = [_kv_string("general.architecture", "llama")]
    data = _header(1, kvs, [_tensor("token_embd.weight", (64, 32), 99, 0)]) + b"\0" * 20000
    _fails(data, UnsupportedModelError, "unknown ggml type 99")


def test_unknown_architecture_is_unsupported() -> None:
    data = _header(0, [_kv_string("general.architecture", "frobnicator")]) + b"\0" * 64
    _fails(data, UnsupportedModelError, "unknown architecture 'frobnicator'")


def test_missing_architecture_is_unsupported() -> None:
    _fails(_header(0, []) + b"\0" * 64, UnsupportedModelError, "no general.architecture")


def test_too_many_dimensions_is_refused() -> None:
    kvs = [_kv_string("general.architecture", "llama")]
    data = _header(1, kvs, [_tensor("x", (1, 1, 1, 1, 1), 0, 0)]) + b"\0" * 64
    _fails(data, GGUFError, "dimensions")


def test_read_header_reports_alignment_and_data_offset(files: dict[str, Path]) -> None:
    data = files["llama"].read_bytes()
    header = read_header(*reader(data))
    assert header.data_offset % 32 == 0
    assert header.version == 3
    assert header.metadata["general.architecture"] == "llama"
