"""The local library: models found in every tool's folder, read-only except Loadout's own."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from engine.hub.errors import LibraryError
from engine.hub.library import Source, default_roots, delete, fit_badges, scan
from engine.hub.recommend import Fit
from engine.paths import paths
from planner.inventory import Inventory
from tests.helpers.hub_server import write_split_llama


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llama_gguf: Path,
            moe_gguf: Path) -> Path:
    """A home folder where Loadout, the hub cache, LM Studio and Ollama each keep models."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))  # Windows's home folder
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(home / ".cache" / "huggingface" / "hub"))
    # Loadout's own download
    own = paths().models / "someone" / "Tiny-GGUF" / "tiny-Q8_0.gguf"
    own.parent.mkdir(parents=True)
    shutil.copy(llama_gguf, own)
    # hub cache: one blob seen through two snapshots
    repo = home / ".cache" / "huggingface" / "hub" / "models--org--MoE-GGUF"
    blob = repo / "blobs" / _sha(moe_gguf)
    blob.parent.mkdir(parents=True)
    shutil.copy(moe_gguf, blob)
    for commit in ("a" * 40, "b" * 40):
        link = repo / "snapshots" / commit / "moe-F16.gguf"
        link.parent.mkdir(parents=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    # LM Studio: a split model
    lms = home / ".lmstudio" / "models" / "pub" / "Split-GGUF"
    lms.mkdir(parents=True)
    write_split_llama(lms / "split-F16.gguf", shards=2)
    (lms / "mmproj-F16.gguf").write_bytes(b"GGUF not a model")
    # Ollama: a blob named by its sha256, found through a manifest
    ollama = home / ".ollama" / "models"
    digest = _sha(llama_gguf)
    (ollama / "blobs").mkdir(parents=True)
    shutil.copy(llama_gguf, ollama / "blobs" / f"sha256-{digest}")
    manifest = ollama / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"layers": [
        {"mediaType": OLLAMA_TEMPLATE, "digest": "sha256:" + "0" * 64, "size": 10},
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
         "size": llama_gguf.stat().st_size}]}))
    # a damaged file in the user's own folder
    (paths().models / "broken-Q4_K_M.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    return home


OLLAMA_TEMPLATE = "application/vnd.ollama.image.template"


def test_finds_models_of_every_tool_once(machine: Path, llama_gguf: Path,
                                         moe_gguf: Path) -> None:
    found = {(e.source, e.name): e for e in scan()}
    assert set(found) == {
        (Source.LOADOUT, "someone/Tiny-GGUF/tiny-Q8_0.gguf"),
        (Source.LOADOUT, "broken-Q4_K_M.gguf"),
        (Source.HF_CACHE, "org/MoE-GGUF/moe-F16.gguf"),
        (Source.LMSTUDIO, "pub/Split-GGUF/split-F16-00001-of-00002.gguf"),
        (Source.OLLAMA, "tiny:latest"),
    }
    moe = found[(Source.HF_CACHE, "org/MoE-GGUF/moe-F16.gguf")]
    assert (moe.architecture, moe.quant, moe.size_bytes) == (
        "qwen3moe", "F16", moe_gguf.stat().st_size)
    split = found[(Source.LMSTUDIO, "pub/Split-GGUF/split-F16-00001-of-00002.gguf")]
    shards = sorted(split.path.parent.glob("split-F16-*.gguf"))
    assert split.shards == 2 and split.size_bytes == sum(p.stat().st_size for p in shards)
    assert split.architecture == "llama" and split.profile is not None
    ollama = found[(Source.OLLAMA, "tiny:latest")]
    assert ollama.architecture == "llama" and ollama.size_bytes == llama_gguf.stat().st_size
    broken = found[(Source.LOADOUT, "broken-Q4_K_M.gguf")]
    assert broken.error and broken.architecture is None and broken.quant == "Q4_K_M"


def test_scanning_changes_nothing(machine: Path) -> None:
    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns)
                for p in machine.rglob("*")}
    before = snapshot()
    scan()
    assert snapshot() == before


def test_only_loadouts_own_files_can_be_deleted(machine: Path) -> None:
    entries = scan()
    others = [e for e in entries if e.source is not Source.LOADOUT]
    assert others and not any(e.deletable for e in others)
    for entry in others:
        with pytest.raises(LibraryError, match="only"):
            delete(entry, confirmed=True)
        assert entry.path.exists()
    own = next(e for e in entries if e.name == "someone/Tiny-GGUF/tiny-Q8_0.gguf")
    with pytest.raises(LibraryError, match="confirmation"):
        delete(own, confirmed=False)
    assert own.path.exists()
    assert delete(own, confirmed=True) == own.size_bytes
    assert not own.path.exists() and not (paths().models / "someone").exists()
    assert paths().models.exists()


def test_default_roots_follow_the_environment(machine: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_MODELS", str(machine / "elsewhere"))
    roots = [(r.source, r.path) for r in default_roots()]
    assert (Source.OLLAMA, machine / "elsewhere") in roots
    assert (Source.OLLAMA, machine / ".ollama" / "models") not in roots
    assert (Source.HF_CACHE, machine / ".cache" / "huggingface" / "hub") in roots
    assert roots[0] == (Source.LOADOUT, paths().models)


def test_fits_badges_come_from_the_planner(machine: Path) -> None:
    host = {"cpu": "test", "cores": 8, "threads": 16, "ram_total_bytes": 16 << 30,
            "ram_available_bytes": 12 << 30, "bandwidth_gbps": 50.0}
    gpu = {"name": "RTX 4090", "vendor": "nvidia", "backend": "cuda",
           "total_bytes": 24 << 30, "bandwidth_gbps": 1008.0}
    cpu_only = Inventory.from_json({"gpus": [], "host": host})
    with_gpu = Inventory.from_json({"gpus": [gpu], "host": host})
    entries = scan()
    on_cpu, on_gpu = fit_badges(entries, cpu_only), fit_badges(entries, with_gpu)
    for e in entries:
        if e.error:
            assert on_cpu[e.path] is None and on_gpu[e.path] is None
        else:
            assert (on_cpu[e.path], on_gpu[e.path]) == (Fit.IN_RAM, Fit.ALL_ON_GPU), e.name
