"""Journey 7: the model wizard with no network.

The hub is an address on this machine where nothing listens, and nothing was ever listed:
the wizard says the hub is unreachable and still shows the catalog's models, each with an
estimated size and a predicted speed on this machine, marked as needing the internet, and
its download button is disabled with that reason.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

from tests.journeys.harness import App

pytestmark = pytest.mark.slow  # a real app and X server


def _closed_port() -> str:
    with socket.socket() as s:  # bound, never listening, closed: connections are refused
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _choices(app: App) -> list[dict[str, Any]]:
    found = app.object("wizardChoices") or {}
    return list(found.get("items", []))


def test_offline_wizard_lists_the_catalog_with_estimates_and_cannot_download(
        start_app: Callable[..., App]) -> None:
    app = start_app(HF_ENDPOINT=_closed_port(), HF_HUB_OFFLINE="0")
    app.key("ctrl+2")  # Models
    app.click("Find a model for this machine…")
    app.wait_for(lambda: len(app.windows()) == 2, "the wizard", 30)
    app.screenshot("wizard-opened")
    app.click("Next")            # this machine, as detected
    app.click("Chat")
    app.screenshot("task-chosen")
    app.click("Show recommendations")
    rows = app.wait_for(lambda: _choices(app), "the catalog's models", 120)
    app.screenshot("offline-choices")

    shown = " ".join(t["text"] for t in app.texts())
    assert "The model hub cannot be reached." in shown
    assert "estimated sizes and predicted speeds on this machine" in shown
    assert len(rows) > 10
    for row in rows:  # name | quant | size | fits | decode t/s | context
        name, _quant, size, _fits, decode, _context = row["text"].split(" | ")
        assert name.endswith("(needs the internet to download)"), name
        assert size.startswith("≈ ") and size.endswith("(estimate)"), size
        assert float(decode.split()[0]) > 0, decode
    assert rows[0]["selected"]
    assert "Estimated offline" in shown  # the first choice's details

    download = app.find("Download this model")
    assert download is not None and not download["enabled"]
    assert download["tooltip"] == ("Downloading needs the internet: the model hub cannot "
                                   "be reached.")
    retry = app.find("Retry")
    assert retry is not None and retry["enabled"]

    last = rows[-1]  # another choice: its own details, still not downloadable
    app.click_at(last["x"] + 40, last["y"] + last["h"] // 2)
    app.wait_for(lambda: _choices(app)[-1]["selected"], "the last choice selected", 30)
    app.screenshot("last-choice-selected")
    download = app.find("Download this model")
    assert download is not None and not download["enabled"]
