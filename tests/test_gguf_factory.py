"""The synthetic GGUF writer that the other tests rely on."""

from __future__ import annotations

from pathlib import Path

from gguf import GGUFReader

from tests.helpers.gguf_factory import disk_usage


def test_sparse_70b_is_full_size_but_occupies_little_disk(sparse_70b: Path) -> None:
    assert sparse_70b.stat().st_size > 35_000_000_000
    assert disk_usage(sparse_70b) < 64_000_000
    reader = GGUFReader(sparse_70b)
    last = max(reader.tensors, key=lambda t: t.data_offset)
    assert last.data_offset + last.n_bytes == sparse_70b.stat().st_size
    assert len(reader.tensors) == 2 + 80 * 9 + 1


def test_tiny_llama_loads_and_generates(llama_gguf: Path) -> None:
    from llama_cpp import Llama

    model = Llama(str(llama_gguf), n_ctx=128, verbose=False)
    out = model.create_completion("a b", max_tokens=4, temperature=0.0)
    assert out["usage"]["completion_tokens"] >= 1
