"""Reading profiles of files on disk: the demo model, split models, errors, the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gguf import GGUFReader

from engine import gguf_file
from engine.errors import ModelNotFoundError
from engine.gguf_file import load_profile, split_shards
from planner.errors import GGUFError
from planner.profile import LayerKind
from tests.helpers.gguf_factory import write_llama, write_llama_split


def test_demo_model_profile(demo_model: Path) -> None:
    prof = load_profile(demo_model)
    ref = GGUFReader(demo_model)
    assert prof.architecture == "llama" and prof.n_layers == 30
    assert prof.n_vocab == 49152 and prof.n_embd == 576 and prof.n_ctx_train == 8192
    assert prof.file_type == "Q4_1" and prof.tied_output
    assert all(la.kind == LayerKind.FULL and la.n_head_kv == 3 for la in prof.layers)
    assert prof.weights_bytes == sum(int(t.n_bytes) for t in ref.tensors)
    assert prof.chat_template and "im_start" in prof.chat_template
    assert 130e6 < prof.n_params < 140e6


def test_split_model_is_found_from_its_first_file(tmp_path: Path) -> None:
    first = write_llama_split(tmp_path / "m-00001-of-00002.gguf", 2)
    whole = write_llama(tmp_path / "whole.gguf")
    assert [p.name for p in split_shards(first)] == ["m-00001-of-00002.gguf",
                                                     "m-00002-of-00002.gguf"]
    prof = load_profile(first)
    assert prof.shards == 2 and prof.weights_bytes == load_profile(whole).weights_bytes
    assert prof.file_bytes == sum(p.stat().st_size for p in split_shards(first))


def test_split_model_with_a_missing_shard_names_it(tmp_path: Path) -> None:
    first = write_llama_split(tmp_path / "m-00001-of-00002.gguf", 2)
    (tmp_path / "m-00002-of-00002.gguf").unlink()
    with pytest.raises(ModelNotFoundError, match=r"m-00002-of-00002\.gguf"):
        load_profile(first)


def test_missing_file_is_model_not_found(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no such model file"):
        load_profile(tmp_path / "nope.gguf")


def test_a_text_file_is_a_gguf_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.gguf"
    path.write_text("these are not weights\n" * 10)
    with pytest.raises(GGUFError, match="not a GGUF"):
        load_profile(path)


def test_profiles_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = write_llama(tmp_path / "a.gguf", header_only=True)
    gguf_file._cache.clear()
    first = load_profile(path)
    assert load_profile(path) is first
    write_llama(tmp_path / "a.gguf", header_only=True, seed=1)
    os.utime(path, ns=(1, 1))  # a different modification time
    assert load_profile(path) is not first
