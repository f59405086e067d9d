"""``loadout plan`` speaks the app's language: the same translation source as the Plan
page (``app.texts``, the .qm files), for the time the text is made and no longer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QTranslator

from app.i18n import qm_file
from app.settings_store import AppSettings, save_settings
from app.texts import CODE_SENTENCES, CTX
from loadout.cli import main
from tests.planner.rigs import rig


def test_plan_text_is_in_the_apps_language_and_json_keeps_the_codes(
        tmp_path: Path, translations: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rig_file = tmp_path / "rig.json"
    rig_file.write_text(json.dumps(rig(ram_gib=16).to_json()), encoding="utf-8")
    argv = ["plan", "demo", "--rig", str(rig_file), "--task", "creative"]
    save_settings(AppSettings(language="zh_CN"))
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "spec_off_creative" in [d["code"] for d in doc["decisions"]]  # codes in JSON
    assert main(argv) == 0
    text = capsys.readouterr().out
    chinese = QTranslator()
    assert chinese.load(str(qm_file("zh_CN")))
    source = CODE_SENTENCES["spec_off_creative"]
    translated = chinese.translate(CTX, source)
    assert translated and translated != source
    assert translated in text and source not in text
    # the language was the command's only: the process is back in English
    assert QCoreApplication.translate(CTX, source) == source
    save_settings(AppSettings(language="en"))
    assert main(argv) == 0
    assert source in capsys.readouterr().out
