"""Fixtures of the desktop app tests (pytest-qt, offscreen)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEventLoop, QThreadPool, QTimer
from PySide6.QtWidgets import QApplication

from planner.inventory import Inventory

GIB = 1 << 30


def rig_doc(gpus: list[tuple[str, int, float]] | None = None) -> dict[str, Any]:
    """A rig document: GPUs as (name, GiB, GB/s), 64 GiB of DDR5, one NVMe disk."""
    gpus = [("GeForce RTX 4090", 24, 1008.0)] if gpus is None else gpus
    return {
        "schema": "loadout.inventory/1",
        "gpus": [{"index": i, "name": n, "vendor": "nvidia", "backend": "cuda",
                  "total_bytes": g * GIB, "free_bytes": g * GIB - GIB // 2,
                  "bandwidth_gbps": bw, "pcie_gbps": 31.5, "tflops_fp16": 150.0}
                 for i, (n, g, bw) in enumerate(gpus)],
        "host": {"cpu": "Ryzen 9 7950X", "cores": 16, "threads": 32,
                 "ram_total_bytes": 64 * GIB, "ram_available_bytes": 56 * GIB,
                 "bandwidth_gbps": 80.0},
        "disks": [{"path": "/models", "kind": "nvme", "read_gbps": 6.5}],
    }


@pytest.fixture
def rig() -> Inventory:
    """One RTX 4090, 64 GiB RAM, an NVMe disk."""
    return Inventory.from_json(rig_doc())


@pytest.fixture
def two_gpu_rig() -> Inventory:
    """An RTX 4090 and an RTX 3090."""
    return Inventory.from_json(rig_doc([("GeForce RTX 4090", 24, 1008.0),
                                        ("GeForce RTX 3090", 24, 936.0)]))


@pytest.fixture(scope="session")
def translations() -> Path:
    """The compiled .qm files (built from the .ts sources when missing or older)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "i18n_build", Path(__file__).resolve().parents[2] / "i18n" / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    for lang in build.LANGUAGES:
        ts, qm = build.ts_path(lang), build.qm_path(lang)
        if not qm.exists() or qm.stat().st_mtime < ts.stat().st_mtime:
            build.compile_all()
            break
    return Path(build.HERE)


@pytest.fixture(autouse=True)
def light_theme(qapp: QApplication) -> Iterator[None]:
    """Every test starts in the light theme and English, whatever the last one left."""
    from app.theme import apply_theme

    apply_theme(qapp, "light")
    yield


def pump(ms: int = 20) -> None:
    """Run the event loop for ``ms`` milliseconds."""
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


@pytest.fixture
def make_window(qtbot: Any) -> Iterator[Any]:
    """Build main windows (no hardware detection); each is shut down and its workers
    waited for at teardown, and the test fails if a worker thread is left running."""
    from app.i18n import LanguageSwitcher
    from app.main import MainWindow
    from app.settings_store import AppSettings

    windows: list[MainWindow] = []
    switcher = LanguageSwitcher()

    def build(inventory: Inventory | None = None, settings: AppSettings | None = None
              ) -> MainWindow:
        # Other apps' model folders are the developer's own: never listed in tests.
        window = MainWindow(settings or AppSettings(scan_other_apps=False), switcher,
                            detect=False)
        qtbot.addWidget(window)
        if inventory is not None:
            window.set_detected(inventory)
        window.show()
        windows.append(window)
        return window

    yield build
    switcher.set_language("en")
    for window in windows:
        window.shutdown()
        assert window.runner.active_threads() == 0, "a worker thread leaked"
    assert QThreadPool.globalInstance().activeThreadCount() == 0
