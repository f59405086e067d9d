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
