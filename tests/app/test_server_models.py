"""The Server page lists the models of a server that runs many (``loadout serve
--models DIR``): each with its state, planned memory and predicted speed, from the real
router's live status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from PySide6.QtWidgets import QApplication

from app.engine_process import EngineProcess
from app.pages.chat_page import live_decode_tps
from app.pages.server_page import ServerPage, aggregate_decode_tps
from tests.engine.server_fixtures import ServerProcess
from tests.engine.test_router import COMMON, write_models

pytestmark = pytest.mark.slow

def _rows(page: ServerPage) -> dict[str, list[str]]:
    table = page.models
    return {table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, 4)]
            for r in range(table.rowCount())}


def test_the_server_page_lists_every_model_with_state_and_memory(
        qapp: QApplication, tmp_path: Path) -> None:
    folder = write_models(tmp_path / "models")
    proc = ServerProcess("--models", str(folder), *COMMON, home=tmp_path).start()
    try:
        client = openai.OpenAI(base_url=proc.base_url, api_key="none", max_retries=0)
        client.chat.completions.create(model="smol-b", max_tokens=2,
                                       messages=[{"role": "user", "content": "hi"}])
        status: dict[str, Any] = proc.get_json("/v1/loadout/status")
    finally:
        proc.stop()
    engine = EngineProcess()
    page = ServerPage(engine)
    assert not page.models_box.isVisibleTo(page)  # one model: no list
    page._on_engine_status(status)
    assert page.models_box.isVisibleTo(page)
    rows = _rows(page)
    assert set(rows) == {"smol-a", "smol-b", "smol-c", "demo-smollm"}
    assert rows["smol-b"][0] == "loaded" and rows["smol-b"][1].endswith("MiB")
    assert rows["smol-a"][:2] == ["on disk", "—"]
    # the loaded model's slots, named, and the machine's memory with what the models plan
    assert {page.requests.item(r, 0).text() for r in range(page.requests.rowCount())
            } == {"#0 smol-b", "#1 smol-b"}
    assert page.memory.rowCount() > 0 and page.memory.item(0, 2).text().endswith("GiB")
    assert page.planned_label.isVisibleTo(page)
    assert page.planned_label.text() == f"Planned for the loaded models: RAM {rows['smol-b'][1]}"
    page._on_engine_status({"state": "ready", "engine": {"slots": []}})
    assert not page.models_box.isVisibleTo(page) and not page.planned_label.isVisibleTo(page)
    page.deleteLater()
    engine.deleteLater()


def test_speeds_are_counted_once_and_chat_reads_its_own_models_slots() -> None:
    slots = [{"model": "a", "decode_tps": 10.0}, {"model": "b", "decode_tps": 30.0}]
    status = {"engine": {"slots": slots, "models": {
        "a": {"engine": {"slots": slots[:1]}}, "b": {"engine": {"slots": slots[1:]}}}}}
    assert aggregate_decode_tps(status) == 40.0
    assert live_decode_tps(status, "a") == 10.0 and live_decode_tps(status) == 20.0
    single = {"engine": {"slots": [{"seq": 0, "decode_tps": 12.0}]}}
    assert live_decode_tps(single, "demo") == 12.0 == aggregate_decode_tps(single)
