"""Journey 6: switch to Simplified, then Traditional Chinese while a model is loaded: no
English word left on any page or dialog; then back to English."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.journeys.harness import ROOT, App, current_page, engine_status

PAGES = ("Home", "Models", "Plan", "Chat", "Server", "Settings")
# what stays as it is in every language: names, units, file types, code, numbers
KEEP = re.compile(
    r"GeForce|RTX|Ryzen|SmolLM2|Instruct|GiB|MiB|KiB|GB/s|t/s|GGUF|gguf|KV|GPU|CPU|NVMe|"
    r"MTP|DFlash|RoPE|OpenAI|API|MoE|Loadout|loadout|chat|serve|worker|MODEL|token|curl|"
    r"Python|JavaScript|llama\.cpp|llama-cpp-python|Flash Attention|LM Studio|Ollama|"
    r"Hugging Face|Ctrl|RAM|VRAM|TTFT|top-p|Top-p|"
    r"f16|q8_0|q4_0|ms|[A-Za-z]:?/[^ ]*|/[^ ]*|\S+\.gguf|\S+\.json|English|sk-loadout-\S*|"
    r"https?://\S+|<[^>]+>|&\w+;")

pytestmark = pytest.mark.slow  # a real app, engine and X server each


def _cpu_name() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def _translated(lang: str, context: str, source: str) -> str:
    root = ET.parse(ROOT / "i18n" / f"loadout_{lang}.ts").getroot()
    for ctx in root:
        if ctx.findtext("name") == context:
            for message in ctx.findall("message"):
                if message.findtext("source") == source:
                    return message.findtext("translation") or source
    return source


def _english_left(app: App, hardware: tuple[str, ...], gpu_catalog: str = "") -> list[str]:
    left = []
    for widget in app.texts():
        if gpu_catalog and widget["name"] == gpu_catalog:
            continue  # GPU product names
        if widget["class"] in ("QPlainTextEdit", "QTextEdit", "QTextBrowser", "QLineEdit",
                               "QSpinBox", "QDoubleSpinBox"):
            continue  # what a person typed, code examples, numbers
        for text in (widget["text"], widget["tooltip"], *widget["items"]):
            for name in hardware:
                text = text.replace(name, " ")
            words = re.findall(r"[A-Za-z]{3,}", KEEP.sub(" ", text))
            if words:
                left.append(f"{widget['class']}: {text!r}")
    return sorted(set(left))


def _choose_language(app: App, combo_name: str, language: str) -> None:
    combo = app.wait_control(combo_name)
    items = [i["text"] for i in combo["items"]]
    moves = items.index(language) - items.index(combo["text"])
    app.click(combo_name)  # the list opens on the current language
    app.wait_for(lambda: len(app.windows()) > 1, "the list of languages", 10)
    app.key(*(["Down"] * moves if moves > 0 else ["Up"] * -moves), "Return")
    app.wait_for(lambda: app.windows() and len(app.windows()) == 1, "the list to close", 10)


def test_chinese_while_a_model_is_loaded_leaves_no_english_word_then_back(
        start_app: Callable[..., App]) -> None:
    app = start_app()
    app.wait_for(lambda: engine_status(app) == "Engine: ready", "the model to load", 180)
    hardware = tuple(n for n in (_cpu_name(),) if n)
    app.key("ctrl+6")
    combo_name = "Language"
    for lang, name in (("zh_CN", "简体中文"), ("zh_TW", "繁體中文")):
        _choose_language(app, combo_name, name)
        combo_name = _translated(lang, "SettingsPage", "Language")
        sidebar = _translated(lang, "MainWindow", "Settings")
        app.wait_for(lambda sidebar=sidebar: current_page(app) == sidebar,
                     f"the sidebar in {name}", 30)
        leftovers: dict[str, list[str]] = {}
        for number in range(1, len(PAGES) + 1):
            app.key(f"ctrl+{number}")
            page = _translated(lang, "MainWindow", PAGES[number - 1])
            app.wait_for(lambda page=page: current_page(app) == page, f"page {number}", 10)
            app.screenshot(f"{lang}-{PAGES[number - 1]}")
            found = _english_left(app, hardware)
            if found:
                leftovers[PAGES[number - 1]] = found
        app.key("ctrl+3")  # the what-if dialog of the Plan page
        app.click(_translated(lang, "PlanPage", "What if…"))
        app.wait_for(lambda: len(app.windows()) == 2, "the what-if dialog", 30)
        app.screenshot(f"{lang}-whatif")
        found = _english_left(app, hardware, _translated(lang, "WhatIfDialog", "GPU to add"))
        if found:
            leftovers["what-if dialog"] = found
        app.key("Escape")
        app.wait_for(lambda: len(app.windows()) == 1, "the dialog to close", 30)
        app.focus_window()  # what a window manager does when a dialog closes
        assert not leftovers, f"{lang}: English left: {leftovers}"
        app.key("ctrl+6")
    _choose_language(app, combo_name, "English")
    app.wait_for(lambda: current_page(app) == "Settings", "the sidebar in English", 30)
    app.screenshot("english-again")
    assert engine_status(app) == "Engine: ready"  # the model stayed loaded throughout
