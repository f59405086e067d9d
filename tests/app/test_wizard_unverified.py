"""The wizard refuses a download the hub gives no sha256 for, unless the person ticks the
box that names the risk; then it says the file is unverified.

The hub is the hostile test hub (``tests/helpers/hostile_hub.py``) listing the demo model
without an LFS id and without ``X-Linked-Etag``: the download is real and complete, the
downloader records it unverified, and the wizard must not call it verified.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.hub.verification import verification_of
from tests.app import test_wizard as wizard_tests
from tests.app.test_wizard import DEMO_FILE, _to_choices, _to_download, small_rig
from tests.engine.hub_fixtures import use_hub
from tests.helpers.hostile_hub import HostileHub
from tests.helpers.hub_server import sha256_of

catalog = wizard_tests.catalog            # the wizard tests' fixtures, served by the
demo_sha256 = wizard_tests.demo_sha256    # hostile hub below


@pytest.fixture(name="hub")
def hostile_hub_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[HostileHub]:
    """The hostile hub as ``HF_ENDPOINT``, serving files it gives no hash for."""
    server = HostileHub().start()
    use_hub(monkeypatch, server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
def test_a_download_the_hub_gives_no_hash_for_is_said_to_be_unverified(
        make_window: Any, catalog: Path, hub: HostileHub, demo_sha256: str,
        qtbot: Any) -> None:
    hub.no_hash.add(DEMO_FILE)
    window = make_window(small_rig())
    wizard = window.models.open_wizard(catalog)
    _to_choices(qtbot, wizard)
    step = _to_download(qtbot, wizard)
    assert step.stage == "ready"
    assert not step.allow_unverified_box.isChecked()  # refused unless the person says so
    step.start_button.click()
    qtbot.waitUntil(lambda: step.stage == "failed", timeout=60000)
    assert "no checksum" in step.message.text() and "substituted" in step.message.text()
    assert step.plan is not None and not step.plan.items[0].target.exists()
    assert "risky" in step.allow_unverified_box.text()
    step.allow_unverified_box.setChecked(True)
    step.retry_button.click()
    qtbot.waitUntil(lambda: step.stage == "ready", timeout=60000)
    with qtbot.waitSignal(wizard.sig_download_finished, timeout=60000) as done:
        step.start_button.click()
    path = Path(done.args[0])
    assert sha256_of(path) == demo_sha256  # the bytes are right ...
    record = verification_of(path)
    assert record is not None and not record.verified  # ... but nothing vouched for them
    assert step.unverified and "not verified" in step.message.text()
    assert "verified" in step.message.text() and "Downloaded and verified" not in \
        step.message.text()
    assert wizard.current_step() == "done"
    message = wizard.done_step.message.text()
    assert "not verified" in message and "sha256" in message
