"""Each page builds and shows the state it is given; settings, models and what-if work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.error_report import readable_message
from app.main import PAGES
from app.pages.models import find_models
from app.pages.whatif_dialog import WhatIfDialog
from app.services import read_rig, write_rig
from app.settings_store import AppSettings, load_settings, settings_file
from engine.errors import ModelNotFoundError
from planner.errors import GGUFError, InventoryError
from planner.inventory import Inventory
from tests.app.conftest import GIB
from tests.helpers.gguf_factory import write_llama


def test_every_page_builds_and_shows(make_window: Any, rig: Inventory) -> None:
    window = make_window(rig)
    assert window.sidebar.count() == len(PAGES) == 6
    for key in PAGES:
        window.show_page(key)
        assert window.current_page() == key
        assert window.pages[key].isVisible()
    texts = [window.sidebar.item(i).text() for i in range(window.sidebar.count())]
    assert texts == ["Home", "Models", "Plan", "Chat", "Server", "Settings"]


def test_home_lists_the_machine_and_shows_detection_progress(make_window: Any,
                                                              two_gpu_rig: Inventory) -> None:
    window = make_window()
    home = window.home
    home.set_detecting(True)
    home.set_progress("gpu_bandwidth", 0.55)
    assert home.progress.isVisible() and home.progress.value() == 55
    assert "GPU bandwidth" in home.status.text()
    window.set_detected(two_gpu_rig)
    assert not home.progress.isVisible()
    assert home.gpu_table.rowCount() == 2
    assert home.gpu_table.item(1, 0).text() == "GeForce RTX 3090"
    assert "24.0 GiB" in home.gpu_table.item(1, 1).text()
    assert "64.0 GiB" in home.host_label.text()
    assert home.disk_table.item(0, 1).text() == "NVMe SSD"
    assert "VRAM in use" in window.status_vram.text()


def test_settings_page_saves_what_it_edits(make_window: Any, rig: Inventory) -> None:
    window = make_window(rig)
    page = window.settings_page
    page.gpu_reserve.setValue(2048)
    page.host_reserve.setValue(8.0)
    page.task.setCurrentIndex(page.task.findData("code"))
    saved = load_settings(settings_file())
    assert saved.gpu_reserve_bytes == 2048 << 20
    assert saved.host_reserve_bytes == 8 * GIB
    assert saved.default_task == "code"
    assert window.state.settings == saved
    assert str(settings_file().parent.parent / "logs") in page.log_link.text()


def test_models_page_lists_the_demo_and_gguf_files_in_model_folders(
        make_window: Any, rig: Inventory, tmp_path: Path, demo_model: Path,
        qtbot: Any) -> None:
    (tmp_path / "sub").mkdir()
    write_llama(tmp_path / "sub" / "tiny.gguf", header_only=True)
    (tmp_path / "notes.txt").write_text("not a model")
    assert find_models((str(tmp_path),)) == [tmp_path / "sub" / "tiny.gguf"]
    (tmp_path / "zz-garbage.gguf").write_bytes(b"\x13N\xdc\xa3" * 100)
    window = make_window(rig, AppSettings(model_folders=(str(tmp_path),),
                                          scan_other_apps=False))
    qtbot.waitUntil(lambda: window.models.list.count() == 3, timeout=10000)
    items = [window.models.list.item(i) for i in range(window.models.list.count())]
    assert items[0].text().startswith("Demo model")
    assert "sub/tiny.gguf · F16" in items[1].text() and "your folder" in items[1].text()
    assert "cannot be read" not in items[1].text()
    # a file that is not a model is listed, marked before anyone picks it, with why
    assert items[2].text().startswith("zz-garbage.gguf")
    assert items[2].text().endswith("⚠ cannot be read as a model")
    assert "GGUF" in items[2].toolTip()


def test_a_broken_model_file_reaches_the_error_handler(make_window: Any, rig: Inventory,
                                                       tmp_path: Path, qtbot: Any) -> None:
    window = make_window(rig)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\xff" * 60)
    window.select_model(broken)
    qtbot.waitUntil(lambda: bool(window.errors.last_message), timeout=10000)
    assert "broken.gguf cannot be read as a GGUF model" in window.errors.last_message
    from engine.paths import paths  # and the box says where the details are

    assert str(paths().logs) in window.errors._box.informativeText()
    assert window.state.profile is None


def test_error_messages_are_sentences_for_each_kind_of_failure() -> None:
    assert readable_message(ModelNotFoundError("x.gguf")).startswith("The model file could")
    assert readable_message(GGUFError("bad")).startswith("This file is not a GGUF")
    assert readable_message(InventoryError("k")).startswith("The rig file is not valid")
    assert "ZeroDivisionError" in readable_message(ZeroDivisionError("boom"))


def test_whatif_edits_gpus_and_ram_and_rig_files_round_trip(
        make_window: Any, rig: Inventory, tmp_path: Path) -> None:
    window = make_window(rig)
    dialog = WhatIfDialog(rig, rig, window)
    dialog.add_gpu("rtx 3090")
    assert [g.name for g in dialog.rig.gpus] == ["GeForce RTX 4090", "GeForce RTX 3090"]
    assert dialog.rig.gpus[1].index == 1 and dialog.rig.gpus[1].total_bytes == 24 * GIB
    dialog.set_ram(int(23.5 * GIB))
    assert dialog.ram.text() == "23.5 GiB"  # as much as the machine has, not 24
    dialog.set_ram(128 * GIB)
    assert dialog.rig.host.ram_total_bytes == 128 * GIB
    assert dialog.rig.host.ram_available_bytes == 120 * GIB  # 8 GiB stay in use
    dialog.remove_gpu(0)
    assert [g.name for g in dialog.rig.gpus] == ["GeForce RTX 3090"]
    path = write_rig(dialog.rig, tmp_path / "rig.json")
    assert read_rig(path) == dialog.rig
    dialog.accept()
    assert window.state.whatif is None  # the Plan page connects it, not this bare dialog
    window.plan.open_whatif()
    window.plan.whatif_dialog.add_gpu("rtx 4060 ti 16gb")
    window.plan.whatif_dialog.accept()
    machine = window.state.machine()
    assert machine is not None and len(machine.gpus) == 2
    assert window.plan.machine_label.text() == "For: what-if rig"
    assert window.state.detected == rig


def test_choosing_dark_in_settings_darkens_the_window(make_window: Any, rig: Inventory) -> None:
    from app.theme import is_dark

    window = make_window(rig)
    light = window.palette().window().color().lightness()
    combo = window.settings_page.theme
    combo.setCurrentIndex(combo.findData("dark"))
    assert is_dark()
    assert window.palette().window().color().lightness() < light - 100


def test_a_model_opened_from_elsewhere_is_listed_on_the_models_page(
        make_window: Any, rig: Inventory, tmp_path: Path, qtbot: Any) -> None:
    (tmp_path / "elsewhere").mkdir()
    opened = write_llama(tmp_path / "elsewhere" / "mine.gguf", header_only=True)
    window = make_window(rig)
    qtbot.waitUntil(lambda: not window.models._scanning, timeout=10000)
    with qtbot.waitSignal(window.state.sig_model_changed, timeout=20000):
        window.select_model(opened)  # what "Open a .gguf file…" does
    texts = [window.models.list.item(i).text() for i in range(window.models.list.count())]
    assert texts[-1].startswith("mine.gguf") and f"opened from {opened.parent}" in texts[-1]
    assert window.models.list.currentItem().text() == texts[-1]
    window.models.scan()  # looking again keeps it
    qtbot.waitUntil(lambda: not window.models._scanning, timeout=10000)
    assert window.models.list.item(window.models.list.count() - 1).text() == texts[-1]
