"""The Engine section of Settings: the build running and why, the build for the next start.

Builds are staged in a temporary engines folder (a manifest and a ``llama_cpp`` package
each, as the bundle has them); the build "running" is what ``engine_select`` leaves in
the environment at start, produced here by its own ``choose`` for a given machine.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.pages.engine_section import (
    EngineSection,
    restart_command,
    restart_environment,
)
from app.settings_store import AppSettings
from app.widgets.engine_banner import EngineBanner
from app.workers import WorkerRunner
from engine import engine_select as es
from planner.inventory import Vendor

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"


def _stage(root: Path, backend: str, **meta: Any) -> None:
    folder = root / backend
    (folder / "llama_cpp").mkdir(parents=True)
    (folder / "llama_cpp" / "__init__.py").write_text("")
    (folder / es.MANIFEST).write_text(json.dumps({"backend": backend, **meta}))


@pytest.fixture
def engines(loadout_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundle's engines folder with a CPU and a CUDA build; no build activated yet."""
    root = tmp_path / "engines"
    _stage(root, "cpu", cmake_args="-DGGML_NATIVE=OFF")
    _stage(root, "cuda", cmake_args="-DGGML_CUDA=ON")
    (root / "half-copied").mkdir()  # no manifest: not a build
    monkeypatch.setenv(es.ENGINES_DIR_ENV, str(root))
    for name in (es.ENGINE_ENV, es.ACTIVE_ENV, es.REASON_ENV):
        monkeypatch.delenv(name, raising=False)
    return root


def _started_on(monkeypatch: pytest.MonkeyPatch, root: Path, *vendors: Vendor,
                runtimes: tuple[str, ...] = (), wanted: str | None = None) -> es.EngineChoice:
    """Leave in the environment what a start on this machine leaves (see select_and_activate)."""
    machine = es.Machine(vendors=vendors, runtimes=frozenset(runtimes))
    choice = es.choose(es.discover(root), machine, wanted)
    monkeypatch.setenv(es.ACTIVE_ENV, choice.backend)
    monkeypatch.setenv(es.REASON_ENV, choice.reason)
    monkeypatch.setenv(es.ENGINE_ENV, choice.backend)
    return choice


class Launches:
    """Stands in for starting a process: records each command and its environment."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], dict[str, str]]] = []

    def __call__(self, command: list[str], env: dict[str, str]) -> None:
        self.calls.append((command, env))


def _section(qtbot: Any, **kwargs: Any) -> EngineSection:
    section = EngineSection(**kwargs)
    qtbot.addWidget(section)
    section.show()
    return section


def _items(section: EngineSection) -> list[tuple[str, str]]:
    combo = section.choice
    return [(combo.itemData(i), combo.itemText(i)) for i in range(combo.count())]


def test_lists_exactly_the_builds_in_the_engines_folder(engines: Path, qtbot: Any) -> None:
    section = _section(qtbot)
    assert [data for data, _ in _items(section)] == ["auto", "cuda", "cpu"]
    assert [text for _, text in _items(section)][1:] == ["CUDA", "CPU"]
    assert _items(section)[0][1].startswith("Automatic")
    assert section.choice.itemData(1, Qt.ItemDataRole.ToolTipRole) == "-DGGML_CUDA=ON"
    assert section.chosen() == "auto" and section.choice_box.isVisibleTo(section)


def test_choosing_cuda_saves_it_and_says_when_it_applies(engines: Path, qtbot: Any) -> None:
    section = _section(qtbot)
    assert not section.note_box.isVisibleTo(section)
    section.choice.setCurrentIndex(section.choice.findData("cuda"))
    assert es.load_preference() == "cuda"
    assert section.note_box.isVisible()
    assert section.note.text() == "Takes effect when Loadout starts again."
    assert section.restart_button.text() == "Restart now"


def test_automatic_saves_auto(engines: Path, loadout_home: Path, qtbot: Any) -> None:
    es.save_preference("cpu")
    section = _section(qtbot)
    assert section.chosen() == "cpu"  # preselected from the saved preference
    assert not section.note_box.isVisibleTo(section)
    section.choice.setCurrentIndex(0)
    assert es.load_preference() is None
    saved = json.loads((loadout_home / "config" / es.PREFERENCE_FILE).read_text())
    assert saved == {"engine": "auto"}
    assert section.note_box.isVisible()


def test_retranslating_keeps_the_choice_and_saves_nothing(engines: Path, loadout_home: Path,
                                                          qtbot: Any) -> None:
    section = _section(qtbot)
    section.choice.setCurrentIndex(section.choice.findData("cpu"))
    (loadout_home / "config" / es.PREFERENCE_FILE).unlink()
    section.retranslate()
    assert section.chosen() == "cpu" and section.choice.count() == 3
    assert not (loadout_home / "config" / es.PREFERENCE_FILE).exists()


def test_restart_now_starts_loadout_again_on_the_chosen_build(
        engines: Path, qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _started_on(monkeypatch, engines, runtimes=("cuda",))  # no GPU seen: CPU build
    monkeypatch.setattr(sys, "argv", ["/x/loadout/__main__.py", "--engine", "cpu", "gui"])
    launches = Launches()
    section = _section(qtbot, launch=launches)
    section.choice.setCurrentIndex(section.choice.findData("cuda"))
    section.restart_button.click()
    assert not section.isVisible()  # this window closed
    [(command, env)] = launches.calls
    assert command == [sys.executable, "-m", "loadout", "gui"]  # this start's --engine dropped
    # The new process, started with that environment, runs the build chosen here.
    script = ("from engine import engine_select as es; from planner.inventory import Vendor\n"
              "c = es.select_and_activate(machine=es.Machine((Vendor.NVIDIA,), "
              "frozenset({'cuda'})))\nprint(c.backend, c.reason)")
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["cuda", "user_choice"]


def test_restarting_a_bundle_runs_its_own_executable_afresh() -> None:
    command = restart_command(["/opt/Loadout/Loadout", "--engine=hip", "--verbose"],
                              frozen=True)
    assert command == [sys.executable, "--verbose"]
    env = restart_environment({"PATH": "/bin", es.ENGINE_ENV: "hip", "MTMD_CPP_LIB": "/e"},
                              frozen=True)
    assert env == {"PATH": "/bin", "PYINSTALLER_RESET_ENVIRONMENT": "1"}
    launcher = restart_command(["packaging/launcher.py", "--engine", "cpu"], frozen=False)
    assert launcher == [sys.executable, "packaging/launcher.py"]


def test_shows_the_build_running_and_why(engines: Path, qtbot: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _started_on(monkeypatch, engines, Vendor.NVIDIA, runtimes=("cuda",))
    section = _section(qtbot)
    assert section.current.text() == (
        "Running now: CUDA — chosen because an NVIDIA GPU is present")
    assert not section.fell_back() and not section.warning.isVisibleTo(section)


def test_a_gpu_fallback_is_shown_in_the_warning_colour(engines: Path, qtbot: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    choice = _started_on(monkeypatch, engines, Vendor.AMD, runtimes=("hip",))
    assert (choice.backend, choice.reason) == ("cpu", "gpu_unusable")
    section = _section(qtbot)
    text = section.current.text()
    assert text.startswith("Running now: CPU — a GPU was found, but no engine build here")
    assert section.fell_back() and "color" in section.current.styleSheet()
    banner = EngineBanner()
    qtbot.addWidget(banner)
    banner.show_engine_fallback(es.active())
    assert banner.isVisible() and banner.fallback
    assert "runs its CPU engine build" in banner.message.text()
    assert not banner.retry_button.isVisibleTo(banner)


def test_a_saved_build_that_cannot_run_is_said(engines: Path, qtbot: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    es.save_preference("cuda")
    _started_on(monkeypatch, engines, wanted="cuda")  # no CUDA driver: automatic, CPU
    section = _section(qtbot)
    assert section.warning.isVisible()
    assert "The CUDA build chosen in Settings cannot run" in section.warning.text()


def test_no_banner_when_the_build_matches_the_gpu(engines: Path, qtbot: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _started_on(monkeypatch, engines, Vendor.NVIDIA, runtimes=("cuda",))
    banner = EngineBanner()
    qtbot.addWidget(banner)
    banner.show_engine_fallback(es.active())
    assert banner.isHidden() and not banner.fallback


def test_the_window_says_the_fallback_at_start(engines: Path, make_window: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _started_on(monkeypatch, engines, Vendor.AMD, runtimes=("hip",))
    window = make_window(settings=AppSettings(scan_other_apps=False))
    assert window.banner.isVisible() and window.banner.fallback


def test_outside_a_bundle_the_one_installed_build_is_described(
        loadout_home: Path, qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(es.ENGINES_DIR_ENV, raising=False)
    monkeypatch.delenv(es.ACTIVE_ENV, raising=False)
    runner = WorkerRunner(lambda exc: pytest.fail(str(exc)))
    try:
        section = _section(qtbot, runner=runner)
        qtbot.waitUntil(lambda: section.installed is not None, timeout=30000)
    finally:
        runner.shutdown()
    from engine.ggml_devices import engine_devices

    version = importlib.metadata.version("llama_cpp_python")
    gpus = [d.name for d in engine_devices() if d.kind in ("gpu", "igpu")
            and not d.name.startswith("RPC")]  # a CPU build with RPC is not "GPU offload"
    offload = (f"with GPU offload to {', '.join(gpus)}" if gpus
               else "which finds no GPU here: models run on the CPU")
    assert section.current.text() == (
        f"This installation has one engine build: llama.cpp through llama-cpp-python "
        f"{version}, {offload}.")
    assert not section.choice_box.isVisibleTo(section)
    assert not section.note_box.isVisibleTo(section)


def test_screenshot_of_the_engine_section(engines: Path, make_window: Any, rig: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _started_on(monkeypatch, engines, Vendor.NVIDIA)  # no CUDA driver yet: CPU
    window = make_window(rig)
    window.resize(1280, 800)
    window.show_page("settings")
    section = window.settings_page.engine
    section.choice.setCurrentIndex(section.choice.findData("cuda"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(SCREENSHOTS / "engine-section.png"))
    bottom = section.mapTo(window, section.rect().bottomLeft()).y()
    assert section.isVisible() and bottom < window.height()
    assert os.path.getsize(SCREENSHOTS / "engine-section.png") > 10_000
