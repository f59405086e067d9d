"""A screenshot of every page, in both themes and all three languages.

Saved under ``$LOADOUT_SCREENSHOTS_DIR`` when set (``docs/screenshots/`` keeps the English
light ones), else in the test's temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from app.main import PAGES
from app.theme import apply_theme
from planner.inventory import Inventory


def _mean_luminance(image: QImage) -> float:
    small = image.scaled(64, 40)
    total = 0.0
    for y in range(small.height()):
        for x in range(small.width()):
            c = small.pixelColor(x, y)
            total += 0.2126 * c.red() + 0.7152 * c.green() + 0.0722 * c.blue()
    return total / (small.width() * small.height())


def test_screenshot_every_page_in_both_themes_and_three_languages(
        make_window: Any, two_gpu_rig: Inventory, sparse_70b: Path, qtbot: Any,
        qapp: QApplication, tmp_path: Path, translations: Path) -> None:
    out = Path(os.environ.get("LOADOUT_SCREENSHOTS_DIR", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    window = make_window(two_gpu_rig)
    window.resize(1280, 800)
    with qtbot.waitSignal(window.plan.sig_advice_shown, timeout=30000):
        window.select_model(sparse_70b)
    luminance: dict[tuple[str, str, str], float] = {}
    for theme in ("light", "dark"):
        apply_theme(qapp, theme)
        qtbot.wait(50)  # palette changes reach the widgets through the event loop
        for lang in ("en", "zh_CN", "zh_TW"):
            assert window.switcher.set_language(lang)
            for page in PAGES:
                window.show_page(page)
                qtbot.wait(20)  # let the layouts settle on the new texts
                image = window.grab().toImage()
                assert image.width() >= 1280 and image.height() >= 800
                path = out / f"{page}-{theme}-{lang}.png"
                assert image.save(str(path)) and path.stat().st_size > 10_000
                luminance[(theme, lang, page)] = _mean_luminance(image)
    for (theme, lang, page), value in luminance.items():
        if theme == "dark":
            assert value < luminance[("light", lang, page)] - 60, (lang, page)
