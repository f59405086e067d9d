"""Three languages, complete and current, switchable at runtime."""

from __future__ import annotations

import importlib.util
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QGroupBox,
    QLabel,
    QListWidget,
    QTableWidget,
    QWidget,
)

from app.main import PAGES
from app.texts import CODE_SENTENCES, code_sentence
from planner.codes import Code
from planner.inventory import Inventory

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("zh_CN", "zh_TW")


def _build_module() -> Any:
    spec = importlib.util.spec_from_file_location("i18n_build", ROOT / "i18n" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _messages(ts: Path) -> dict[tuple[str, str], tuple[str | None, str]]:
    out = {}
    for ctx in ET.parse(ts).getroot():
        name = ctx.findtext("name") or ""
        for msg in ctx.findall("message"):
            tr = msg.find("translation")
            assert tr is not None
            out[(name, msg.findtext("source") or "")] = (tr.get("type"), tr.text or "")
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_ts_sources_are_current_and_complete(lang: str, tmp_path: Path) -> None:
    build = _build_module()
    ts = build.ts_path(lang)
    copy = tmp_path / ts.name
    shutil.copy(ts, copy)
    build.update([copy])  # what lupdate finds in app/ now
    committed, current = _messages(ts), _messages(copy)
    assert set(current) == set(committed), (
        "i18n/*.ts is stale: run `python i18n/build.py --update` and translate; new: "
        f"{sorted(set(current) - set(committed))[:5]}, gone: "
        f"{sorted(set(committed) - set(current))[:5]}")
    unfinished = [k for k, (kind, text) in committed.items() if kind or not text.strip()]
    assert unfinished == [], f"untranslated in {ts.name}: {unfinished[:5]}"
    for (_ctx, source), (_kind, text) in committed.items():  # placeholders survive
        assert sorted(re.findall(r"\{[^}]*\}", source)) == sorted(
            re.findall(r"\{[^}]*\}", text)), source


def test_every_planner_code_has_a_sentence() -> None:
    assert {c.value for c in Code} <= set(CODE_SENTENCES)
    assert code_sentence("main_largest").startswith("It has the most free VRAM")
    assert "32K" in code_sentence("context_from_budget", {"context": 32768})


def _visible_texts(root: QWidget) -> dict[str, str]:
    """Every visible text under ``root``, keyed by where it is."""
    texts: dict[str, str] = {}
    for i, w in enumerate(root.findChildren(QWidget)):
        if not w.isVisible():
            continue
        key = f"{type(w).__name__}#{w.objectName() or i}"
        if isinstance(w, QLabel | QAbstractButton):
            texts[key] = w.text()
        elif isinstance(w, QGroupBox):
            texts[key] = w.title()
        elif isinstance(w, QComboBox):
            texts[key] = w.currentText()
        elif isinstance(w, QListWidget):
            for r in range(w.count()):
                texts[f"{key}:r{r}"] = w.item(r).text()
        elif isinstance(w, QTableWidget):
            for c in range(w.columnCount()):
                item = w.horizontalHeaderItem(c)
                texts[f"{key}:h{c}"] = item.text() if item else ""
        if w.toolTip():
            texts[key + ":tip"] = w.toolTip()
    return texts


# Words that stay as they are in every language: names, units, file types, code.
KEEP = re.compile(r"GeForce|RTX|Ryzen|SmolLM2|Instruct|GiB|MiB|KiB|GB/s|t/s|GGUF|gguf|KV|"
                  r"GPU|CPU|NVMe|MTP|RoPE|OpenAI|API|MoE|Loadout|loadout|chat|serve|MODEL|token|"
                  r"LM Studio|Ollama|Hugging Face|"
                  r"f16|q8_0|q4_0|ms|[A-Za-z]:?/[^ ]*|/[^ ]*|\S+\.gguf|Auto\b(?=$)|"
                  r"English|<[^>]+>|&\w+;")


def _english_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{3,}", KEEP.sub(" ", text))


def test_switching_language_retranslates_every_visible_widget(
        make_window: Any, two_gpu_rig: Inventory, demo_model: Path, qtbot: Any,
        translations: Path) -> None:
    window = make_window(two_gpu_rig)
    with qtbot.waitSignal(window.plan.sig_advice_shown, timeout=30000):
        window.select_model(demo_model)
    english = {}
    for key in PAGES:
        window.show_page(key)
        english[key] = _visible_texts(window)
    for lang in LANGS:
        assert window.switcher.set_language(lang)
        for key in PAGES:
            window.show_page(key)
            texts = _visible_texts(window)
            assert texts.keys() == english[key].keys()
            leftovers = {k: v for k, v in texts.items() if _english_words(v)}
            assert leftovers == {}, f"{lang} {key}: untranslated {leftovers}"
        assert window.sidebar.item(0).text() in ("主页", "首頁")
    window.switcher.set_language("en")
    for key in PAGES:
        window.show_page(key)
        back = _visible_texts(window)
        ram = "QLabel#statusRam"  # live figure: changes by itself
        assert back.pop(ram).startswith("RAM in use") and english[key].pop(ram)
        assert back == english[key]


def test_choosing_a_language_in_settings_switches_at_once_and_is_saved(
        make_window: Any, two_gpu_rig: Inventory, translations: Path) -> None:
    from app.settings_store import load_settings

    window = make_window(two_gpu_rig)
    combo = window.settings_page.language
    combo.setCurrentIndex(combo.findData("zh_TW"))
    assert window.sidebar.item(5).text() == "設定"
    assert window.settings_page.title.text() == "設定"
    assert combo.currentText() == "繁體中文"
    assert load_settings().language == "zh_TW"
    combo.setCurrentIndex(combo.findData("en"))
    assert window.sidebar.item(5).text() == "Settings"
