"""The Engine section of the Settings page: the engine build running now and why, and the
build to run from the next start.

A bundle carries several builds of llama.cpp (CPU, CUDA, ROCm, Vulkan, Metal) and
:mod:`engine.engine_select` picks one before ``llama_cpp`` is imported; a process cannot
switch builds after that, so a new choice is saved and applies when Loadout starts again
(the section offers to restart it). Outside a bundle the installed ``llama_cpp`` is the
only build, and the section only describes it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.theme import warning_color
from app.workers import Job, WorkerRunner
from engine import engine_select as es

log = logging.getLogger(__name__)

BACKEND_NAMES = {"cpu": "CPU", "cuda": "CUDA", "hip": "ROCm", "vulkan": "Vulkan",
                 "metal": "Metal"}
# What a start leaves in the environment for its children: a restart must choose afresh.
ENGINE_VARIABLES = (es.ENGINE_ENV, es.ACTIVE_ENV, es.REASON_ENV, "LLAMA_CPP_LIB_PATH",
                    "MTMD_CPP_LIB")
FALLBACK_REASONS = frozenset({"gpu_unusable"})

Launcher = Callable[[list[str], dict[str, str]], None]


def backend_name(backend: str) -> str:
    """How a backend is called on screen (``hip`` is AMD's ROCm)."""
    return BACKEND_NAMES.get(backend, backend)


@dataclass(frozen=True)
class InstalledEngine:
    """The one ``llama_cpp`` of an installation without engine builds.

    ``gpu_offload`` is ``None`` when the library could not be loaded (``error`` says why).
    """

    version: str
    gpu_offload: bool | None
    error: str = ""
    gpus: tuple[str, ...] = ()  # the GPUs it finds here, as llama.cpp names them


def installed_engine(_job: Job | None = None) -> InstalledEngine:
    """Version of the installed ``llama_cpp`` and the GPUs it can offload to here (loads
    the library: run it off the UI thread).

    llama.cpp's own ``llama_supports_gpu_offload`` also says yes for a CPU build with the
    RPC backend (other computers' GPUs), so the devices it finds decide instead.
    """
    try:
        import llama_cpp

        from engine.ggml_devices import engine_devices

        gpus = tuple(d.name for d in engine_devices()
                     if d.kind in ("gpu", "igpu") and not d.name.startswith("RPC"))
        return InstalledEngine(str(getattr(llama_cpp, "__version__", "?")), bool(gpus),
                               gpus=gpus)
    except Exception as exc:  # a broken or missing library is shown, not raised
        log.warning("the installed llama_cpp cannot be loaded: %s", exc)
        return InstalledEngine("?", None, str(exc))


def restart_command(argv: list[str] | None = None, frozen: bool | None = None) -> list[str]:
    """The command that starts this app again, without a one-run ``--engine`` choice.

    A bundle runs its own executable again (its launcher chooses the build); elsewhere
    the launcher script when that started us, else ``python -m loadout``.
    """
    argv = list(sys.argv if argv is None else argv)
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    rest: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        if arg == "--engine":
            next(args, None)
        elif not arg.startswith("--engine="):
            rest.append(arg)
    if frozen:
        return [sys.executable, *rest]
    if argv and Path(argv[0]).name == "launcher.py":
        return [sys.executable, argv[0], *rest]
    return [*es.loadout_command(), *rest]


def restart_environment(environ: Mapping[str, str], frozen: bool | None = None
                        ) -> dict[str, str]:
    """``environ`` without this start's engine build, so the next start uses the saved one.

    A frozen bundle also asks PyInstaller for a fresh instance, not a child of this one.
    """
    env = {k: v for k, v in environ.items() if k not in ENGINE_VARIABLES}
    if bool(getattr(sys, "frozen", False)) if frozen is None else frozen:
        env["PYINSTALLER_RESET_ENVIRONMENT"] = "1"
    return env


def launch_detached(command: list[str], env: dict[str, str]) -> None:
    """Start ``command`` as its own process, which outlives this one."""
    flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
        subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, close_fds=True,
                     start_new_session=sys.platform != "win32", creationflags=flags)


class EngineSection(QGroupBox):
    """The build running now and why; in a bundle, the build for the next start.

    Args:
        runner: runs the look at the installed engine off the UI thread (without one,
            it runs at once).
        launch: starts the restarted app (tests pass their own and check the command).
    """

    def __init__(self, runner: WorkerRunner | None = None,
                 launch: Launcher = launch_detached, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("engineSection")
        self._runner = runner
        self._launch = launch
        root = es.engines_dir()
        self.builds = es.discover(root) if root is not None else []
        self.running = es.active()
        self.saved_at_start = es.load_preference() or es.AUTO
        self.installed: InstalledEngine | None = None
        self._probing = False
        self.current = QLabel()
        self.current.setObjectName("engineCurrent")
        self.current.setWordWrap(True)
        self.warning = QLabel()
        self.warning.setObjectName("engineWarning")
        self.warning.setWordWrap(True)
        self.choice = QComboBox()
        self.choice.setObjectName("engineChoice")
        self.choice_label = QLabel()
        self.note = QLabel()
        self.note.setObjectName("engineRestartNote")
        self.note.setWordWrap(True)
        self.restart_button = QPushButton()
        self.restart_button.clicked.connect(self._on_restart_clicked)
        note_row = QHBoxLayout()
        note_row.setContentsMargins(0, 0, 0, 0)
        note_row.addWidget(self.note, 1)
        note_row.addWidget(self.restart_button)
        self.note_box = QWidget()
        self.note_box.setLayout(note_row)
        self.note_box.setVisible(False)
        form = QFormLayout()
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow(self.choice_label, self.choice)
        self.choice_box = QWidget()
        self.choice_box.setLayout(form)
        self.choice_box.setVisible(bool(self.builds))
        layout = QVBoxLayout(self)
        for widget in (self.current, self.warning, self.choice_box, self.note_box):
            layout.addWidget(widget)
        self.choice.currentIndexChanged.connect(self._on_choice_changed)
        self.retranslate()

    # -- texts ------------------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() == QEvent.Type.PaletteChange:
            self._color_warning()
        super().changeEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self.builds and self.installed is None and not self._probing:
            self._probe_installed()  # only when seen: it loads the library

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.setTitle(self.tr("Engine"))
        self.choice_label.setText(self.tr("Build to use"))
        self.note.setText(self.tr("Takes effect when Loadout starts again."))
        self.restart_button.setText(self.tr("Restart now"))
        self._fill_choices()
        self._show_running()
        self._color_warning()

    def fell_back(self) -> bool:
        """Whether this start runs the CPU build although the computer has a GPU."""
        return self.running is not None and self.running[1] in FALLBACK_REASONS

    def _color_warning(self) -> None:
        color = warning_color()
        self.warning.setStyleSheet(f"color: {color}")
        self.current.setStyleSheet(f"color: {color}" if self.fell_back() else "")

    def reason_text(self, backend: str, reason: str) -> str:
        """Why ``backend`` runs, from the reason code :mod:`engine.engine_select` left."""
        gpus = {"cuda": self.tr("an NVIDIA GPU"), "hip": self.tr("an AMD GPU"),
                "metal": self.tr("an Apple GPU"), "vulkan": self.tr("a GPU Vulkan can drive")}
        texts = {
            "user_choice": self.tr("chosen in Settings"),
            "matches_gpu": self.tr("chosen because {gpu} is present").format(
                gpu=gpus.get(backend, self.tr("a GPU"))),
            "no_gpu": self.tr("no GPU was found"),
            "gpu_unusable": self.tr(
                "a GPU was found, but no engine build here can use it (its driver's "
                "runtime is missing, or Loadout has no build for it), so models run on the "
                "CPU only, much more slowly"),
        }
        return texts.get(reason, reason)

    def _show_running(self) -> None:
        warning = ""
        if self.running is not None:
            backend, reason = self.running
            self.current.setText(self.tr("Running now: {build} — {why}").format(
                build=backend_name(backend), why=self.reason_text(backend, reason)))
            wish = self.saved_at_start
            if wish != es.AUTO and wish != backend and reason != "user_choice":
                warning = self.tr("⚠ The {build} build chosen in Settings cannot run on "
                                  "this computer, so Loadout chose by itself.").format(
                    build=backend_name(wish))
        elif self.builds:
            self.current.setText(self.tr(
                "Running now: the engine installed with Python (this start did not go "
                "through Loadout's launcher, which chooses among the builds)."))
        else:
            self.current.setText(self._installed_text())
        self.warning.setText(warning)
        self.warning.setVisible(bool(warning))

    def _installed_text(self) -> str:
        info = self.installed
        if info is None:
            return self.tr("This installation has one engine build (checking it…).")
        if info.gpu_offload is None:
            return self.tr("This installation has one engine build, and it cannot be "
                           "loaded: {error}").format(error=info.error)
        offload = (self.tr("with GPU offload to {gpus}").format(gpus=", ".join(info.gpus))
                   if info.gpu_offload
                   else self.tr("which finds no GPU here: models run on the CPU"))
        return self.tr("This installation has one engine build: llama.cpp through "
                       "llama-cpp-python {version}, {offload}.").format(
            version=info.version, offload=offload)

    def _fill_choices(self) -> None:
        selected = self.choice.currentData() if self.choice.count() else None
        wanted = selected or self.saved_at_start
        self.choice.blockSignals(True)
        try:
            self.choice.clear()
            self.choice.addItem(self.tr("Automatic (matches this computer's GPUs)"), es.AUTO)
            for build in self.builds:
                self.choice.addItem(backend_name(build.backend), build.backend)
                if build.cmake_args:
                    self.choice.setItemData(self.choice.count() - 1, build.cmake_args,
                                            Qt.ItemDataRole.ToolTipRole)
            self.choice.setCurrentIndex(max(0, self.choice.findData(wanted)))
        finally:
            self.choice.blockSignals(False)

    # -- installed engine -------------------------------------------------------------
    def _probe_installed(self) -> None:
        if self._runner is None:
            self._on_installed_probed(installed_engine())
            return
        self._probing = True
        self._runner.submit("engine_build", installed_engine, self._on_installed_probed)

    def _on_installed_probed(self, info: InstalledEngine) -> None:
        self._probing = False
        self.installed = info
        self._show_running()

    # -- events -----------------------------------------------------------------------
    def chosen(self) -> str:
        """The backend chosen in the list, or ``auto``."""
        return str(self.choice.currentData() or es.AUTO)

    def _on_choice_changed(self, _index: int) -> None:
        backend = self.chosen()
        es.save_preference(backend)
        log.info("engine build for the next start: %s", backend)
        self.note_box.setVisible(backend != self.saved_at_start)

    def _on_restart_clicked(self) -> None:
        command = restart_command()
        env = restart_environment(os.environ)
        log.info("restarting for the %s engine build: %s", self.chosen(), command)
        self._launch(command, env)  # first: a failure is reported while the window is up
        self.window().close()  # shuts the engine and the workers down
