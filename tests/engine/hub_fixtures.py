"""Fixtures shared by the hub tests: a local hub reached through ``HF_ENDPOINT``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.hub_server import HubServer


def use_hub(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Point the hub client at ``url`` (``HF_ENDPOINT``) with offline mode off."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

@pytest.fixture(name="hub")
def hub_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """A started local hub; ``HF_ENDPOINT`` points at it and offline mode is off."""
    server = HubServer().start()
    use_hub(monkeypatch, server.url)
    try:
        yield server
    finally:
        server.stop()


def go_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the hub client to offline mode (as ``HF_HUB_OFFLINE=1`` does)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
