"""The model wizard: machine → task → recommendations → download → load and chat.

The hub is the local test hub (``HF_ENDPOINT``) serving a two-model catalog: the demo
model's real bytes (SmolLM2-135M Q4_1) and a header-only 70B file (~40 GB), so the
recommendations are the real recommender's and the real planner's, the download is a
real one (resumable, sha256-checked), and the last test chats with what was downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from app.formatting import fmt_bytes, fmt_tps
from app.settings_store import AppSettings
from engine.hub.downloads import pending_downloads
from engine.paths import paths
from planner.inventory import Inventory
from tests.app.conftest import GIB, rig_doc
from tests.app.engine_window import cpu_rig, wait_until
from tests.engine.hub_fixtures import hub_fixture  # noqa: F401
from tests.helpers.hub_server import HubServer, sha256_of

DEMO_REPO = "test/SmolLM2-135M-Instruct-GGUF"
DEMO_FILE = "SmolLM2-135M-Instruct-Q4_1.gguf"
BIG_REPO = "test/Big-70B-GGUF"
BIG_FILE = "Big-70B-Q4_K_M.gguf"
STALL_AT = 16 << 20   # the hub goes quiet after this many bytes (a download to pause)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
TASKS = {"chat": 2, "code": 1, "agent": 1, "math": 1, "creative": 2}


def small_rig(disks: bool = True) -> Inventory:
    """A 6 GB GPU and 16 GB of RAM (with or without a disk to read weights from)."""
    doc = rig_doc([("GeForce RTX 3050", 6, 224.0)])
    doc["host"].update(ram_total_bytes=16 * GIB, ram_available_bytes=12 * GIB)
    if not disks:
        doc["disks"] = []
    return Inventory.from_json(doc)


@pytest.fixture(scope="session")
def demo_sha256(demo_model: Path) -> str:
    return sha256_of(demo_model)


@pytest.fixture
def catalog(hub: HubServer, demo_model: Path, demo_sha256: str, sparse_70b: Path,
            tmp_path: Path) -> Path:
    """The hub serves the demo model and a 70B file; the catalog file names both."""
    hub.add_file(DEMO_REPO, DEMO_FILE, demo_model, sha256=demo_sha256)
    hub.add_file(BIG_REPO, BIG_FILE, sparse_70b, sha256="0" * 64)
    models = [
        {"id": "smollm2-135m", "name": "SmolLM2 135M Instruct", "repo": DEMO_REPO,
         "kind": "dense", "licence": "apache-2.0", "tasks": TASKS, "quants": ["Q4_1"]},
        {"id": "big-70b", "name": "Big 70B", "repo": BIG_REPO, "kind": "dense",
         "licence": "llama3", "tasks": {**TASKS, "chat": 3}, "quants": ["Q4_K_M"]},
    ]
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"schema": "loadout.catalog/1", "models": models}))
    return path


def _to_choices(qtbot: Any, wizard: Any, task: str = "chat") -> Any:
    """Machine → task → the ranked choices (waits for the ranking)."""
    assert wizard.current_step() == "machine"
    wizard.next_button.click()
    assert wizard.current_step() == "task"
    wizard.task_step.buttons[task].click()
    with qtbot.waitSignal(wizard.choose_step.sig_recommendations_listed, timeout=30000) as got:
        wizard.next_button.click()
    assert wizard.current_step() == "choose"
    return got.args[0]


def _rows(wizard: Any) -> list[list[str]]:
    tree = wizard.choose_step.tree
    return [[tree.topLevelItem(r).text(c) for c in range(tree.columnCount())]
            for r in range(tree.topLevelItemCount())]


def _to_download(qtbot: Any, wizard: Any) -> Any:
    """Choose the demo model (first row) and wait until its download is planned."""
    wizard.choose_step.tree.setCurrentItem(wizard.choose_step.tree.topLevelItem(0))
    wizard.next_button.click()
    step = wizard.download_step
    assert wizard.current_step() == "download"
    wait_until(lambda: step.stage != "checking", 30, "the download plan")
    return step


def _start_stalled(hub: HubServer, step: Any, seen: list[Any],
                   until: Callable[[Any], bool] = lambda p: True) -> None:
    """Start a download the hub will stall at STALL_AT bytes; wait for its progress."""
    hub.stall_after[DEMO_FILE] = STALL_AT
    hub.stall_s = 2.0
    step.sig_download_progressed.connect(seen.append)
    step.start_button.click()
    assert step.stage == "downloading" and step.pause_button.isVisible()
    wait_until(lambda: seen and until(seen[-1]), 30, "download progress")


def _save(widget: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    assert widget.grab().save(str(path)) and path.stat().st_size > 10_000


def test_choices_reflect_the_rig_and_show_the_selected_ones_memory_map(
        make_window: Any, catalog: Path, qtbot: Any) -> None:
    window = make_window(small_rig(), AppSettings(scan_other_apps=False, default_task="code"))
    window.show_page("models")
    wizard = window.models.open_wizard(catalog)
    machine = wizard.machine_step
    assert "GeForce RTX 3050" in machine.gpu_value.text()
    assert "6.0 GiB" in machine.gpu_value.text()
    assert machine.ram_value.text().startswith("12.0 GiB available of 16.0 GiB")
    assert str(paths().models) in machine.disk_value.text()
    assert wizard.task_step.task() == "code"  # the default task of the settings
    outcome = _to_choices(qtbot, wizard, "chat")
    assert outcome.problem is None and outcome.task == "chat"
    demo, big = outcome.result.items
    assert (demo.name, big.name) == ("SmolLM2 135M Instruct", "Big 70B")
    rows = _rows(wizard)
    assert rows[0][:4] == ["SmolLM2 135M Instruct", "Q4_1", fmt_bytes(98362432), "All on GPU"]
    assert rows[0][4] == fmt_tps(demo.decode_tps) and demo.decode_tps > 50
    # 40 GB on a 6 GB GPU with 16 GB of RAM: only by reading weights from disk
    assert rows[1][:4] == ["Big 70B", "Q4_K_M", fmt_bytes(big.download_bytes),
                           "Reads from disk (slow)"]
    assert big.tier > demo.tier and big.decode_tps < 1.0
    # the first choice is selected, and its memory map is the plan's
    bars = {b.device_id: b for b in wizard.choose_step.memory_map.bars()}
    assert bars["gpu0"].name == "GeForce RTX 3050" and bars["gpu0"].bytes_of("weights") > 50e6
    assert "decode " + fmt_tps(demo.decode_tps) in wizard.choose_step.details.text()
    assert wizard.next_button.isEnabled() and wizard.next_button.text() == "Download this model"
    wizard.resize(1000, 720)
    qtbot.wait(50)
    _save(wizard, "wizard-recommendations.png")
    wizard.choose_step.tree.setCurrentItem(wizard.choose_step.tree.topLevelItem(1))
    bars = {b.device_id: b for b in wizard.choose_step.memory_map.bars()}
    assert bars["disk"].bytes_of("weights") > 10 * GIB
    assert "Big 70B · Q4_K_M" in wizard.choose_step.details_box.title()

    # a rig file without a disk to stream from: the 70B does not fit, and cannot be taken
    with qtbot.waitSignal(wizard.choose_step.sig_recommendations_listed, timeout=30000):
        window.state.set_whatif(small_rig(disks=False))
    rows = _rows(wizard)
    assert rows[1][0] == "Big 70B" and rows[1][3] == "Does not fit"
    wizard.choose_step.tree.setCurrentItem(wizard.choose_step.tree.topLevelItem(1))
    assert not wizard.next_button.isEnabled()
    assert "does not fit this machine" in wizard.choose_step.details.text()
    wizard.back()
    assert wizard.current_step() == "task"


def test_download_shows_progress_pauses_keeping_the_partial_and_resumes_verified(
        make_window: Any, catalog: Path, hub: HubServer, demo_sha256: str,
        qtbot: Any) -> None:
    window = make_window(small_rig())
    wizard = window.models.open_wizard(catalog)
    _to_choices(qtbot, wizard)
    step = _to_download(qtbot, wizard)
    assert step.stage == "ready" and step.start_button.isVisible()
    assert fmt_bytes(98362432) in step.info.text() and "sha256" in step.info.text()
    assert not wizard.next_button.isEnabled()
    seen: list[Any] = []
    _start_stalled(hub, step, seen, lambda p: p.done_bytes > STALL_AT // 2)
    assert not wizard.back_button.isEnabled()  # no leaving a running download
    assert " of " in step.stats.text() and "/s" in step.stats.text() \
        and "left" in step.stats.text()
    assert 0 < step.bar.value() < step.bar.maximum()
    wizard.resize(1000, 720)
    qtbot.wait(50)
    _save(wizard, "wizard-download.png")

    step.pause_button.click()
    assert step.stage == "pausing" and not step.pause_button.isEnabled()
    wait_until(lambda: step.stage == "paused", 30, "the pause")
    (partial,) = pending_downloads()
    assert 0 < partial.have_bytes <= STALL_AT and partial.size == 98362432
    assert partial.partial.stat().st_size == partial.have_bytes  # the partial file stays
    assert step.resume_button.isVisible() and "Paused at" in step.message.text()

    del hub.stall_after[DEMO_FILE]
    with qtbot.waitSignal(wizard.sig_download_finished, timeout=60000) as done:
        step.resume_button.click()
    path = Path(done.args[0])
    assert path == paths().models / DEMO_REPO / DEMO_FILE
    assert sha256_of(path) == demo_sha256
    ranges = [r for m, p, r in hub.requests  # downloads ask for the rest of the file
              if m == "GET" and p.endswith(DEMO_FILE) and r.endswith("-")]
    assert ranges[0] == "bytes=0-" and ranges[-1] == f"bytes={partial.have_bytes}-"
    done_bytes = [p.done_bytes for p in seen]
    assert done_bytes == sorted(done_bytes) and done_bytes[-1] == seen[-1].total_bytes
    assert not pending_downloads() and not list(path.parent.glob("*.part"))
    assert wizard.current_step() == "done"
    assert "downloaded and verified" in wizard.done_step.message.text()
    # the Models page lists it now
    wait_until(lambda: any(e.path == path for e in window.models.entries), 30, "the list")


def test_cancel_removes_the_partial_and_a_full_disk_is_said_before_starting(
        make_window: Any, catalog: Path, hub: HubServer, qtbot: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    window = make_window(small_rig())
    wizard = window.models.open_wizard(catalog)
    _to_choices(qtbot, wizard)
    step = _to_download(qtbot, wizard)
    _start_stalled(hub, step, [])
    step.cancel_button.click()
    wait_until(lambda: step.stage == "ready", 30, "the cancel")
    assert "Cancelled: the partial download was removed." in step.message.text()
    assert not pending_downloads()
    assert not list((paths().models / DEMO_REPO).glob("*.part"))
    assert step.start_button.isVisible() and not step.cancel_button.isVisible()

    # the disk fills up: the step says so before any byte moves (the disk is faked)
    free = {"bytes": 50 << 20}
    real = shutil.disk_usage

    def disk_usage(path: Any) -> Any:
        usage = real(path)
        return type(usage)(usage.total, usage.total - free["bytes"], free["bytes"])

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    served = hub.served(DEMO_FILE)
    wizard.back()
    wizard.next_button.click()
    wait_until(lambda: step.stage != "checking", 30, "the download plan")
    assert step.stage == "failed" and not step.start_button.isVisible()
    assert "Not enough free disk space" in step.message.text()
    assert "50 MiB is free" in step.message.text()
    assert step.retry_button.isVisible() and step.retry_button.text() == "Check again"
    assert hub.served(DEMO_FILE) == served
    free["bytes"] = 100 * GIB
    step.retry_button.click()
    wait_until(lambda: step.stage != "checking", 30, "the download plan")
    assert step.stage == "ready" and step.start_button.isVisible()


def test_unreachable_hub_says_what_to_do_and_retry_works_once_it_is_back(
        make_window: Any, catalog: Path, hub: HubServer, qtbot: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", dead)
    window = make_window(small_rig())
    wizard = window.models.open_wizard(catalog)
    outcome = _to_choices(qtbot, wizard)
    choose = wizard.choose_step
    assert outcome.problem == "offline" and not _rows(wizard)
    assert choose.error_box.isVisible() and choose.retry_button.isEnabled()
    assert "cannot be reached" in choose.error_label.text()
    assert "press Retry" in choose.error_label.text()
    assert not wizard.next_button.isEnabled()
    assert window.errors.last_message == ""  # an expected outcome, not an error box

    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    with qtbot.waitSignal(choose.sig_recommendations_listed, timeout=30000) as got:
        choose.retry_button.click()
    assert got.args[0].problem is None and len(_rows(wizard)) == 2
    assert not choose.error_box.isVisible() and choose.tree.isVisible()
    assert wizard.next_button.isEnabled()


def test_models_page_button_opens_the_wizard_and_offline_the_bundled_catalog_is_estimated(
        make_window: Any, qtbot: Any) -> None:
    window = make_window(small_rig())
    window.show_page("models")
    assert window.models.wizard_button.text() == "Find a model for this machine…"
    window.models.wizard_button.click()
    wizard = window.models.wizard
    assert wizard is not None and wizard.isVisible() and wizard.current_step() == "machine"
    assert wizard.progress_label.text().count("›") == 4
    outcome = _to_choices(qtbot, wizard)  # HF_HUB_OFFLINE=1 in every test
    choose = wizard.choose_step
    # offline, never listed: the catalog's models, sized and planned from their shapes
    assert outcome.problem is None and outcome.estimated and choose.error_box.isVisible()
    assert "cannot be reached" in choose.error_label.text()
    rows = _rows(wizard)
    assert len(rows) == len(outcome.result.items) > 10
    assert all("needs the internet to download" in r[0] and r[2].startswith("≈ ")
               and r[2].endswith("(estimate)") for r in rows)
    first = outcome.result.items[0]
    assert rows[0][4] == fmt_tps(first.decode_tps) and first.decode_tps > 0
    item = choose.tree.topLevelItem(0)  # a name the column cuts is whole in its tooltip
    assert item.toolTip(0).split("\n") == [item.text(0), first.repo]
    assert "Estimated offline" in choose.details.text()
    assert f"≈ {fmt_bytes(first.download_bytes)} to download" in choose.details.text()
    assert not wizard.next_button.isEnabled()  # nothing to download from
    assert "needs the internet" in wizard.next_button.toolTip()
    wizard.close_button.click()
    assert not wizard.isVisible()
    window.models.wizard_button.click()  # the same wizard again, where it was
    assert window.models.wizard is wizard and wizard.current_step() == "choose"


@pytest.mark.slow
def test_load_and_chat_loads_the_downloaded_model_and_an_answer_arrives(
        make_window: Any, catalog: Path, qtbot: Any, qapp: QApplication) -> None:
    window = make_window(cpu_rig())
    wizard = window.models.open_wizard(catalog)
    outcome = _to_choices(qtbot, wizard)
    assert outcome.result.items[0].fit.value == "in_ram"  # no GPU here
    step = _to_download(qtbot, wizard)
    with qtbot.waitSignal(wizard.sig_download_finished, timeout=60000) as done:
        step.start_button.click()
    path = Path(done.args[0])
    assert wizard.current_step() == "done"
    wizard.done_step.load_button.click()
    assert not wizard.isVisible()
    wait_until(lambda: window.engine.state in ("ready", "crashed"), 120, "the engine")
    assert window.engine.state == "ready", window.engine.log_text()
    assert window.state.model_path == path and window.current_page() == "chat"
    assert Path(window.engine.spec.model_path) == path
    chat = window.chat
    chat.temperature.setValue(0.0)
    chat.max_tokens.setValue(32)
    answers: list[Any] = []
    chat.sig_answer_finished.connect(answers.append)
    chat.input.setPlainText("What is the capital of France? Answer briefly.")
    chat.send_button.click()
    wait_until(lambda: answers, 120, "the answer")
    assert chat.last_error == "" and "Paris" in answers[0].text
    assert os.path.exists(path)
