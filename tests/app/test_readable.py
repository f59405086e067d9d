"""What a person meets in the window: nothing cut off at the usual or the smallest size, in
every language, and a clear sentence (why, and what to do) when something cannot be done."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractButton, QLabel, QLineEdit, QScrollArea

from app.main import PAGES
from app.widgets.elided_label import ElidedLabel
from app.widgets.table_headers import title_room, wrap_title
from planner.inventory import Inventory
from tests.app.conftest import pump

LANGS = ("en", "zh_CN", "zh_TW")
SIZES = (QSize(1400, 900), None)  # None: the smallest the window allows


def _sizes(window: Any) -> list[QSize]:
    return [size or window.minimumSize() for size in SIZES]


def _header_problems(table: Any, titles: tuple[str, ...]) -> list[str]:
    """Column titles of ``table`` cut at its current width (or missing words)."""
    header = table.horizontalHeader()
    metrics = header.fontMetrics()
    problems = []
    for col, title in enumerate(titles):
        text = table.horizontalHeaderItem(col).text()
        lines = text.split("\n")
        room = title_room(header, col)
        if "".join(text.split()) != "".join(title.split()):
            problems.append(f"{title!r} shown as {text!r}")
        for line in lines:
            if metrics.horizontalAdvance(line) > room:
                problems.append(f"{title!r}: {line!r} wider than its column ({room}px)")
        if header.height() < metrics.lineSpacing() * len(lines):
            problems.append(f"{title!r}: {len(lines)} lines in a {header.height()}px header")
    return problems


@pytest.mark.parametrize("lang", LANGS)
def test_every_column_title_of_the_server_tables_reads_whole(
        make_window: Any, rig: Inventory, translations: Path, lang: str) -> None:
    window = make_window(rig)
    window.switcher.set_language(lang)
    page = window.server
    page.models_box.setVisible(True)  # shown while the server runs many models
    window.show_page("server")
    fitted = ((page.requests, page.requests_header), (page.memory, page.memory_header),
              (page.models, page.models_header))
    for size in _sizes(window):
        window.resize(size)
        pump(50)
        for table, header in fitted:
            assert _header_problems(table, header.titles) == [], (lang, size)
    tips = [page.requests.horizontalHeaderItem(c).toolTip() for c in range(5)]
    assert all(tips) and page.requests_header.titles[4] in tips[4]


def test_a_title_is_broken_at_spaces_or_between_chinese_characters(qapp: Any) -> None:
    metrics = QFontMetrics(qapp.font())
    one = metrics.horizontalAdvance("decode t/s,")
    assert wrap_title("decode t/s, its answer", one + 2, metrics) == "decode t/s,\nits answer"
    assert wrap_title("Slot", 1, metrics) == "Slot"  # one word: whole on its line
    lines = wrap_title("该回答的解码 t/s", metrics.horizontalAdvance("该回答的") + 2, metrics)
    assert lines.split("\n")[0] == "该回答的" and "".join(lines.split()) == "该回答的解码t/s"


def _cut_texts(window: Any) -> list[str]:
    """Visible one-line labels and buttons of the page shown narrower than their text."""
    cut = []
    page = window.stack.currentWidget()
    for w in page.findChildren(QLabel) + page.findChildren(QAbstractButton):
        if not w.isVisible() or not w.text() or w.width() <= 0:
            continue
        if isinstance(w, ElidedLabel):  # cut on purpose: then its tooltip is the text
            if w.shown_text() != w.text() and w.toolTip() != w.text():
                cut.append(f"ElidedLabel {w.text()!r} cut without its tooltip")
            continue
        if isinstance(w, QLabel):
            if w.wordWrap() or (w.textFormat() != w.textFormat().PlainText and "<" in w.text()):
                continue
            widest = max(w.fontMetrics().horizontalAdvance(line)
                         for line in w.text().split("\n"))
            if widest > w.contentsRect().width() - w.indent() * (w.indent() > 0):
                cut.append(f"{type(w).__name__} {w.text()!r}: {w.contentsRect().width()}px")
        elif w.width() < w.minimumSizeHint().width():
            cut.append(f"{type(w).__name__} {w.text()!r}: {w.width()}px < "
                       f"{w.minimumSizeHint().width()}px")
    for edit in page.findChildren(QLineEdit):  # a hint in an empty field, read whole
        hint = edit.placeholderText()
        if edit.isVisible() and hint and not edit.text() and \
                edit.fontMetrics().horizontalAdvance(hint) > edit.contentsRect().width() - 8:
            cut.append(f"QLineEdit hint {hint!r}: {edit.contentsRect().width()}px")
    for area in page.findChildren(QScrollArea):  # wider than the window: its right side
        bar = area.horizontalScrollBar()        # (buttons, figures) is out of sight
        if area.isVisible() and bar.maximum() > 0:
            cut.append(f"the page scrolls sideways by {bar.maximum()}px")
    return cut


@pytest.mark.parametrize("lang", LANGS)
def test_no_label_or_button_is_cut_off_on_any_page(
        make_window: Any, rig: Inventory, demo_model: Path, translations: Path, qtbot: Any,
        lang: str) -> None:
    window = make_window(rig)
    with qtbot.waitSignal(window.plan.sig_plan_shown, timeout=60000):
        window.select_model(demo_model, show=False)
    window.switcher.set_language(lang)
    found = {}
    for size in _sizes(window):
        window.resize(size)
        for key in PAGES:
            window.show_page(key)
            pump(30)
            cut = _cut_texts(window)
            if cut:
                found[f"{key} at {size.width()}x{size.height()}"] = cut
    assert found == {}


def _bigger_than_memory(folder: Path, inventory: Inventory) -> Path:
    """A header-only llama (70B's layers, as many as it takes) four times larger than all
    of this machine's RAM and VRAM together."""
    from tests.helpers.gguf_factory import LLAMA_70B, Shape, write_llama

    memory = inventory.host.ram_total_bytes + sum(g.total_bytes for g in inventory.gpus)
    layers = max(LLAMA_70B.n_layers, math.ceil(4 * memory / 0.48e9))
    shape = Shape(**{**LLAMA_70B.__dict__, "n_layers": layers})
    path = write_llama(folder / "huge-llama-Q4_K.gguf", shape, header_only=True)
    assert path.stat().st_size > 3 * memory
    return path


def test_a_question_for_a_model_too_big_for_this_machine_says_why_it_is_not_loaded(
        make_window: Any, tmp_path: Path, qtbot: Any) -> None:
    from engine import hardware

    inventory = hardware.detect(model_dirs=[tmp_path], measure=False)  # this machine
    big = _bigger_than_memory(tmp_path, inventory)
    window = make_window(inventory)
    with qtbot.waitSignal(window.plan.sig_plan_shown, timeout=120000):
        window.select_model(big, show=False)
    assert window.plan.last_plan.fits is False  # the planner's own verdict, on this machine
    window.show_page("chat")
    with qtbot.waitSignal(window.control.sig_load_refused, timeout=120000) as refused:
        assert window.chat.send("Hello?")  # asks for a load: the model selected
    assert refused.args == ["does_not_fit"]
    assert window.engine.spec is None and window.engine.state == "unloaded"  # none started
    note = window.chat.transcript_text()
    assert big.name in note and "does not fit in this machine's memory" in note
    assert "smaller model or quantization on the Models page" in note
    assert "as soon as the model is ready" not in note  # no load is on its way
    assert "Not loaded" in window.chat.engine_label.text()
    assert "Preparing" not in window.status_engine.text()
    assert window.statusBar().currentMessage().startswith(big.name)
    assert "Models page" in window.statusBar().toolTip()
    window.resize(window.minimumSize())  # cut again to the room left: never under the figures
    pump(50)
    bar, metrics = window.statusBar(), window.statusBar().fontMetrics()
    figures = sum(w.width() for w in (window.status_engine, window.status_model,
                                      window.status_decode, window.status_vram,
                                      window.status_ram))
    assert bar.currentMessage().startswith(big.name)
    assert metrics.horizontalAdvance(bar.currentMessage()) + figures <= bar.width()
    assert window.current_page() == "plan"
    assert "cannot be loaded" in window.plan.fit_label.text()
    assert not window.load_progress.isVisible()


def test_load_is_refused_with_a_reason_when_nothing_is_planned(make_window: Any,
                                                                rig: Inventory) -> None:
    window = make_window(rig)
    window.models.demo_path = None  # no demo, no model chosen
    assert window.chat.send("Anyone there?")
    assert "No model to load yet" in window.chat.transcript_text()
    assert "Models page" in window.statusBar().toolTip()


@pytest.mark.parametrize("content", [b"\x13N\xdc\xa3" * 1000, None])
def test_a_garbage_or_cut_short_model_file_names_itself_and_says_what_to_do(
        make_window: Any, rig: Inventory, sparse_70b: Path, tmp_path: Path, qtbot: Any,
        content: bytes | None) -> None:
    window = make_window(rig)
    window.resize(window.minimumSize())
    bad = tmp_path / "half-downloaded.gguf"
    if content is None:  # a download cut short: its header ends half way
        with sparse_70b.open("rb") as whole:
            content = whole.read(100_000)
    bad.write_bytes(content)
    window.select_model(bad)
    qtbot.waitUntil(lambda: bool(window.errors.last_message), timeout=20000)
    message = window.errors.last_message
    assert message.startswith("half-downloaded.gguf cannot be read as a GGUF model")
    assert "download it again" in message and "open a .gguf model file" in message
    if content[:4] == b"GGUF":
        assert "truncated" in message
    bar = window.statusBar()  # the status line shows it without running into the figures
    shown = bar.currentMessage()
    assert shown.startswith("half-downloaded.gguf") and bar.toolTip() == message
    figures = sum(w.width() for w in (window.status_engine, window.status_model,
                                      window.status_decode, window.status_vram,
                                      window.status_ram))
    assert bar.fontMetrics().horizontalAdvance(shown) + figures <= bar.width()
    window.errors.close()


def test_the_calibration_line_says_one_run_not_1_runs(make_window: Any, rig: Inventory,
                                                      demo_model: Path, qtbot: Any) -> None:
    import dataclasses

    from planner.plan_types import MachineCorrection

    window = make_window(rig)
    with qtbot.waitSignal(window.plan.sig_plan_shown, timeout=60000):
        window.select_model(demo_model)
    plan = window.plan.last_plan
    for runs, words in ((1, "Calibrated on one run on this machine"),
                        (2, "Calibrated on 2 runs on this machine")):
        window.plan._show_calibration(dataclasses.replace(
            plan, calibration=MachineCorrection(runs=runs, scope="model"),
            raw_predicted=plan.predicted))
        assert window.plan.calibration_label.text().startswith(words)


def test_a_new_api_key_is_shown_from_its_start(make_window: Any, rig: Inventory) -> None:
    window = make_window(rig)
    window.resize(window.minimumSize())
    window.show_page("server")
    page = window.server
    page.lan.setChecked(True)  # other devices: a key is made at once
    assert page.key.text().startswith("sk-loadout-") and page.key.cursorPosition() == 0
    page.new_key_button.click()
    assert page.key.cursorPosition() == 0
