"""A model finds its vision projector in its folder, and only one that goes with it."""

from __future__ import annotations

from pathlib import Path

from engine.models import paired_projector


def touch(folder: Path, *names: str) -> None:
    for name in names:
        (folder / name).write_bytes(b"GGUF")


def test_a_projector_named_after_the_model_pairs_with_it(tmp_path: Path) -> None:
    touch(tmp_path, "gemma-3-4b-it-Q4_K_M.gguf", "mmproj-gemma-3-4b-it-F16.gguf",
          "mmproj-gemma-3-4b-it-F32.gguf", "llama-3-8b-Q4_K_M.gguf")
    assert paired_projector(tmp_path / "gemma-3-4b-it-Q4_K_M.gguf") == \
        tmp_path / "mmproj-gemma-3-4b-it-F16.gguf"
    assert paired_projector(tmp_path / "llama-3-8b-Q4_K_M.gguf") is None


def test_a_generic_projector_pairs_only_in_a_one_model_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    touch(repo, "Qwen2.5-VL-7B-Q4_K_M.gguf", "Qwen2.5-VL-7B-Q8_0.gguf", "mmproj-F16.gguf")
    assert paired_projector(repo / "Qwen2.5-VL-7B-Q8_0.gguf") == repo / "mmproj-F16.gguf"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    touch(mixed, "a-Q4_K_M.gguf", "b-Q4_K_M.gguf", "mmproj-F16.gguf")
    assert paired_projector(mixed / "a-Q4_K_M.gguf") is None
