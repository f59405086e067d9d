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
from app.pages.chat_page import answer_decode_tps
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
    # the chart shows the router's one figure of all requests, over every loaded model
    everyone = status["engine"]["decode_tps_all_requests"]
    assert everyone == sum(m["engine"]["decode_tps_all_requests"]
                           for m in status["engine"]["models"].values() if "engine" in m)
    assert page.throughput.values() == (everyone,)
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


def test_speeds_are_the_engines_and_chat_reads_its_own_answers_slot() -> None:
    slots = [{"model": "a", "request_id": "chatcmpl-1", "decode_tps": 10.0},
             {"model": "b", "request_id": "chatcmpl-2", "decode_tps": 30.0}]
    status = {"engine": {"decode_tps_all_requests": 37.5, "slots": slots, "models": {
        "a": {"engine": {"slots": slots[:1]}}, "b": {"engine": {"slots": slots[1:]}}}}}
    assert aggregate_decode_tps(status) == 37.5  # the engine's, not a sum of the slots
    assert answer_decode_tps(status, "chatcmpl-2") == 30.0
    assert answer_decode_tps(status, "chatcmpl-3") is None
    assert answer_decode_tps(status, None) is None
    assert aggregate_decode_tps({"engine": {"slots": slots}}) is None
