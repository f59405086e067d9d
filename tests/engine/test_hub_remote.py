"""Remote profiles: a hub GGUF planned from ranged reads of its header, never its weights."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.hub.errors import BadSpecError, HubNotFoundError, HubOfflineError
from engine.hub.remote import parse_spec, read_remote, shard_names
from planner.gguf import read_profile
from planner.profile import ModelProfile
from tests.engine.hub_fixtures import go_offline, hub_fixture  # noqa: F401
from tests.helpers.hub_server import HubServer, write_split_llama

REPO = "someone/Llama-70B-GGUF"


def _local_reader(path: Path) -> Callable[[int, int], bytes]:
    def read_at(offset: int, size: int) -> bytes:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(size)
    return read_at


def _local_profile(*files: Path) -> ModelProfile:
    first, *rest = files
    return read_profile(_local_reader(first), first.stat().st_size,
                        extra_shards=[(_local_reader(p), p.stat().st_size) for p in rest])


def test_remote_plan_reads_under_5_percent_and_matches_the_local_profile(
        hub: HubServer, sparse_70b: Path) -> None:
    hub.add_file(REPO, "llama-70b-Q4_K.gguf", sparse_70b, sha256="ab" * 32)
    result = read_remote(f"hf:{REPO}/llama-70b-Q4_K.gguf")
    size = sparse_70b.stat().st_size
    assert result.file_bytes == size
    assert result.bytes_fetched == hub.served("llama-70b-Q4_K.gguf")
    assert result.bytes_fetched < 0.05 * size
    assert result.profile == _local_profile(sparse_70b)
    assert result.profile.n_layers == 80


def test_split_model_is_read_across_all_shards(hub: HubServer, tmp_path: Path) -> None:
    shards = write_split_llama(tmp_path / "tiny.gguf", shards=3)
    for path in shards:
        hub.add_file("someone/Tiny-GGUF", f"Q8_0/{path.name}", path)
    # any shard of the split names the whole model
    result = read_remote(f"hf:someone/Tiny-GGUF/Q8_0/{shards[1].name}")
    assert result.shards == tuple(f"Q8_0/{p.name}" for p in shards)
    assert result.profile.shards == 3
    assert result.profile.file_bytes == sum(p.stat().st_size for p in shards)
    assert result.profile == _local_profile(*shards)


def test_second_read_comes_from_the_cache_even_offline(
        hub: HubServer, sparse_70b: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub.add_file(REPO, "llama-70b-Q4_K.gguf", sparse_70b, sha256="ab" * 32)
    first = read_remote(f"hf:{REPO}/llama-70b-Q4_K.gguf")
    requests = len(hub.requests)
    go_offline(monkeypatch)
    again = read_remote(f"hf:{REPO}/llama-70b-Q4_K.gguf")
    assert again.profile == first.profile
    assert again.bytes_fetched == 0
    assert len(hub.requests) == requests


def test_a_file_replaced_on_the_hub_is_read_again_once_the_cache_is_old(
        hub: HubServer, llama_gguf: Path, moe_gguf: Path) -> None:
    hub.add_file("someone/Tiny-GGUF", "tiny-F16.gguf", llama_gguf)
    assert read_remote("hf:someone/Tiny-GGUF/tiny-F16.gguf").profile.architecture == "llama"
    hub.add_file("someone/Tiny-GGUF", "tiny-F16.gguf", moe_gguf)  # re-uploaded
    recent = read_remote("hf:someone/Tiny-GGUF/tiny-F16.gguf")
    assert recent.profile.architecture == "llama" and recent.bytes_fetched == 0
    checked = read_remote("hf:someone/Tiny-GGUF/tiny-F16.gguf", max_age_s=0)
    assert checked.profile.architecture == "qwen3moe"
    assert checked.profile == _local_profile(moe_gguf)
    asked = len(hub.requests)  # unchanged: one HEAD confirms the cache, no bytes move
    again = read_remote("hf:someone/Tiny-GGUF/tiny-F16.gguf", max_age_s=0)
    assert again.bytes_fetched == 0 and len(hub.requests) == asked + 1


def test_offline_with_nothing_cached_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    go_offline(monkeypatch)
    with pytest.raises(HubOfflineError, match="offline"):
        read_remote("hf:someone/Other-GGUF/model-Q4_K_M.gguf")


def test_unreachable_hub_fails_fast_with_a_clear_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # a socket that accepts connections and never answers: only a timeout ends the wait
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        started = time.monotonic()
        with pytest.raises(HubOfflineError, match="did not answer in time"):
            read_remote("hf:someone/Other-GGUF/model-Q4_K_M.gguf", timeout=1.0)
        assert time.monotonic() - started < 5.0
    finally:
        silent.close()


def test_refused_connection_is_reported_as_unreachable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(HubOfflineError, match="cannot reach the hub"):
        read_remote("hf:someone/Other-GGUF/model-Q4_K_M.gguf", timeout=2.0)


def test_missing_repo_and_missing_file_are_not_found(hub: HubServer, llama_gguf: Path) -> None:
    hub.add_file("someone/Tiny-GGUF", "tiny.gguf", llama_gguf)
    with pytest.raises(HubNotFoundError):
        read_remote("hf:someone/Nope-GGUF/tiny.gguf")
    with pytest.raises(HubNotFoundError):
        read_remote("hf:someone/Tiny-GGUF/other.gguf")


def test_spec_parsing() -> None:
    spec = parse_spec("hf:bartowski/Qwen_Qwen3-8B-GGUF/Qwen_Qwen3-8B-Q4_K_M.gguf@abc123")
    assert (spec.repo, spec.filename, spec.revision) == (
        "bartowski/Qwen_Qwen3-8B-GGUF", "Qwen_Qwen3-8B-Q4_K_M.gguf", "abc123")
    for bad in ("hf:just-a-name.gguf", "hf:owner/repo", "hf:owner/repo/README.md",
                "hf:owner/../x/y.gguf"):
        with pytest.raises(BadSpecError):
            parse_spec(bad)
    assert shard_names("Q4/m-00002-of-00003.gguf") == (
        "Q4/m-00001-of-00003.gguf", "Q4/m-00002-of-00003.gguf", "Q4/m-00003-of-00003.gguf")
    assert shard_names("m.gguf") == ("m.gguf",)


def test_loadout_plan_accepts_a_hub_model_without_downloading_it(
        hub: HubServer, sparse_70b: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from loadout.cli import main

    hub.add_file(REPO, "llama-70b-Q4_K.gguf", sparse_70b, sha256="ab" * 32)
    rig = tmp_path / "rig.json"
    rig.write_text(json.dumps({"schema": "loadout.inventory/1", "gpus": [
        {"name": "RTX 3090", "vendor": "nvidia", "backend": "cuda", "total_bytes": 24 << 30,
         "bandwidth_gbps": 936.0}] * 2, "host": {"cpu": "x", "cores": 16,
                                                 "ram_total_bytes": 128 << 30,
                                                 "bandwidth_gbps": 80.0}}))
    assert main(["plan", f"hf:{REPO}/llama-70b-Q4_K.gguf", "--rig", str(rig), "--json",
                 "--no-advice"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "loadout.plan/1" and doc["fits"]
    assert hub.served("llama-70b-Q4_K.gguf") < 0.05 * sparse_70b.stat().st_size
