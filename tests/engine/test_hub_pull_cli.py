"""``loadout pull``: the command line over the download API."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from engine.paths import paths
from loadout.cli import main
from tests.engine.hub_fixtures import go_offline, hub_fixture  # noqa: F401
from tests.helpers.hub_server import HubServer


def test_pull_downloads_and_prints_one_json_document(
        hub: HubServer, llama_gguf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hub.add_file("org/Tiny-GGUF", "tiny-Q8_0.gguf", llama_gguf)
    assert main(["pull", "org/Tiny-GGUF:Q8_0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "complete"
    got = Path(doc["model_path"])
    assert got == paths().models / "org" / "Tiny-GGUF" / "tiny-Q8_0.gguf"
    assert hashlib.sha256(got.read_bytes()).digest() == \
        hashlib.sha256(llama_gguf.read_bytes()).digest()


def test_pull_offline_fails_fast_with_a_message(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    go_offline(monkeypatch)
    started = time.monotonic()
    assert main(["pull", "org/Tiny-GGUF:Q8_0"]) == 1
    assert time.monotonic() - started < 5
    captured = capsys.readouterr()
    assert "offline" in captured.err and captured.out == ""


def test_pull_pending_lists_paused_downloads(
        hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import threading

    from engine.hub.downloads import download

    big = tmp_path / "big-Q4_K_M.gguf"
    big.write_bytes(os.urandom(4 << 20))
    hub.add_file("org/Big-GGUF", big.name, big)
    stop = threading.Event()
    download("org/Big-GGUF:Q4_K_M", progress=lambda p: stop.set(), cancel=stop)
    assert main(["pull", "--pending", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["downloads"]
    assert entry["spec"] == "hf:org/Big-GGUF/big-Q4_K_M.gguf"
    assert 0 < entry["have_bytes"] < entry["size"] == big.stat().st_size
    assert main(["pull", entry["spec"], "--json"]) == 0  # resumes
    assert json.loads(capsys.readouterr().out)["bytes_downloaded"] == \
        entry["size"] - entry["have_bytes"]
