"""The desktop app's entry point and its main window (a thin shell wiring the pages)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, cast

import psutil
from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QIcon, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QProgressBar,
    QStackedWidget,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from app import services
from app.accessible import name_controls, set_name
from app.cluster_control import ClusterControl
from app.engine_control import EngineControl
from app.engine_launch import Binding
from app.error_report import ErrorReporter
from app.errors import ModelFileError
from app.formatting import fmt_bytes, fmt_tps
from app.i18n import LanguageSwitcher, system_language
from app.load_refusal import refusal_text
from app.pages.chat_page import ChatPage
from app.pages.home import HomePage
from app.pages.models import ModelsPage
from app.pages.plan_page import PlanPage
from app.pages.server_page import ServerPage
from app.pages.settings_page import SettingsPage
from app.settings_store import AppSettings, load_settings
from app.state import AppState
from app.status_message import StatusMessage
from app.termination import quit_on_termination
from app.theme import apply_theme
from app.ui_probe import start_if_asked
from app.widgets.elided_label import ElidedLabel
from app.widgets.engine_banner import EngineBanner
from app.workers import Job, WorkerRunner
from engine import engine_select
from planner.errors import GGUFError
from planner.inventory import Inventory
from planner.plan_types import Plan
from planner.profile import ModelProfile
from planner.projector import ProjectorProfile

log = logging.getLogger(__name__)

REFINE_DELAY_MS = 60_000  # the daily background measuring waits this long after start

ICON = Path(__file__).resolve().parent.parent / "assets" / "loadout.svg"
PAGES: tuple[str, ...] = ("home", "models", "plan", "chat", "server", "settings")
_ICONS = {
    "home": QStyle.StandardPixmap.SP_ComputerIcon,
    "models": QStyle.StandardPixmap.SP_DirIcon,
    "plan": QStyle.StandardPixmap.SP_FileDialogDetailedView,
    "chat": QStyle.StandardPixmap.SP_MessageBoxInformation,
    "server": QStyle.StandardPixmap.SP_DriveNetIcon,
    "settings": QStyle.StandardPixmap.SP_FileDialogContentsView,
}


def _demo_path() -> Path | None:
    from engine.demo import demo_model_path
    from engine.errors import DemoModelMissingError

    try:
        return demo_model_path()
    except DemoModelMissingError:
        log.warning("the demo model is not installed")
        return None


class MainWindow(QMainWindow):
    """Sidebar (Home, Models, Plan, Chat, Server, Settings), pages, status bar.

    Args:
        settings: the settings to start with (default: the saved ones).
        switcher: the language switcher (one per application).
        detect: detect this machine's hardware as soon as the window exists.
    """

    def __init__(self, settings: AppSettings | None = None,
                 switcher: LanguageSwitcher | None = None, detect: bool = True) -> None:
        super().__init__()
        services.warm_up()
        self.state = AppState(settings if settings is not None else load_settings(), self)
        self.errors = ErrorReporter(self)
        self.runner = WorkerRunner(self.errors.report, parent=self)
        self.switcher = switcher or LanguageSwitcher()
        self.resize(1280, 800)
        self.setMinimumSize(QSize(960, 600))

        self.sidebar = QListWidget()
        self.sidebar.setObjectName("sidebar")
        self.sidebar.setIconSize(QSize(20, 20))
        self.sidebar.setFixedWidth(self.fontMetrics().horizontalAdvance("M") * 12)
        self.stack = QStackedWidget()
        self.home = HomePage(self.state, self.runner)
        self.models = ModelsPage(self.state, self.runner, _demo_path())
        self.plan = PlanPage(self.state, self.runner)
        self.control = EngineControl(self.state, self.runner, self._serving_binding,
                                     lambda: self.plan.last_request, self)
        self.engine = self.control.engine
        self.chat = ChatPage(self.engine)
        self.server = ServerPage(self.engine)
        self.server.set_library(self.state.settings.serve_library)
        self.server.sig_library_chosen.connect(self.control.set_library)
        self.banner = EngineBanner()
        self.banner.show_engine_fallback(engine_select.active())  # once, at start
        self._last_decode_tps: float | None = None
        self._chat_after_plan: Path | None = None
        self.cluster = ClusterControl(self.state, self.runner, self.control.workers_in_use,
                                      self)
        self.settings_page = SettingsPage(self.state, self.cluster, self.runner)
        self.pages: dict[str, QWidget] = {
            "home": self.home, "models": self.models, "plan": self.plan, "chat": self.chat,
            "server": self.server, "settings": self.settings_page}
        for key in PAGES:
            item = QListWidgetItem(self.style().standardIcon(_ICONS[key]), "")
            item.setData(Qt.ItemDataRole.UserRole, key)
            self.sidebar.addItem(item)
            self.stack.addWidget(self.pages[key])
        self.sidebar.currentRowChanged.connect(self.stack.setCurrentIndex)
        for number, key in enumerate(PAGES, start=1):  # Ctrl+1 .. Ctrl+6: the pages
            shortcut = QShortcut(QKeySequence(f"Ctrl+{number}"), self)
            shortcut.activated.connect(lambda key=key: self._on_page_shortcut(key))
        self.stack.currentChanged.connect(self._on_stack_changed)
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.addWidget(self.sidebar)
        column = QVBoxLayout()
        column.addWidget(self.banner)
        column.addWidget(self.stack, 1)
        layout.addLayout(column, 1)
        self.setCentralWidget(central)

        self.status_engine, self.status_model = QLabel(), ElidedLabel()  # a long file name
        self.load_progress = QProgressBar()
        self.load_progress.setObjectName("loadProgress")
        self.load_progress.setRange(0, 100)
        self.load_progress.setMaximumWidth(160)
        self.load_progress.setVisible(False)
        self.statusBar().addPermanentWidget(self.load_progress)
        self.status_decode, self.status_vram, self.status_ram = QLabel(), QLabel(), QLabel()
        for name, label in (("statusEngine", self.status_engine),
                            ("statusModel", self.status_model),
                            ("statusDecode", self.status_decode),
                            ("statusVram", self.status_vram), ("statusRam", self.status_ram)):
            label.setObjectName(name)
            self.statusBar().addPermanentWidget(label)
        self._ram_timer = QTimer(self)
        self._ram_timer.setInterval(2000)
        self._ram_timer.timeout.connect(self._update_status)
        self._ram_timer.start()

        self.runner.sig_lane_idle.connect(self._on_lane_idle)
        self.home.sig_detect_requested.connect(self.start_detection)
        self.home.sig_whatif_requested.connect(self._on_home_whatif_requested)
        self.models.sig_model_chosen.connect(self.select_model)
        self.models.sig_load_and_chat_requested.connect(self.load_and_chat)
        self.plan.sig_plan_shown.connect(self._on_plan_shown)
        self.settings_page.sig_settings_edited.connect(self._on_settings_edited)
        self.plan.sig_load_requested.connect(self.load_plan)
        self.plan.sig_unload_requested.connect(self._on_unload_requested)
        self.banner.sig_retry_requested.connect(self.retry_safer)
        self.banner.sig_replan_requested.connect(self.replan_without)
        self.engine.sig_state_changed.connect(self._on_engine_state)
        self.engine.sig_load_progressed.connect(self._on_engine_progress)
        self.control.sig_engine_failed.connect(self.banner.show_death)
        self.control.sig_load_refused.connect(self._on_load_refused)
        self.chat.sig_answer_speed_changed.connect(self._on_chat_answer_speed)
        self.chat.sig_load_wanted.connect(self._on_chat_load_wanted)
        self.state.sig_model_changed.connect(self._update_status)
        self.state.sig_detected_changed.connect(self._update_status)
        self.status_message = StatusMessage(self.statusBar(), (
            self.load_progress, self.status_engine, self.status_model, self.status_decode,
            self.status_vram, self.status_ram))
        self.errors.sig_error_reported.connect(self.show_status_message)
        self.show_page("home")
        self.retranslate()
        self._selected_at_start: Path | None = None
        if detect:
            self.start_detection()
            first = self.startup_model()
            if first is not None:  # something to plan from the first second
                self._selected_at_start = first
                self.select_model(first, show=False)

    # -- navigation -------------------------------------------------------------------
    def show_page(self, key: str) -> None:
        """Switch to page ``key`` (one of :data:`PAGES`)."""
        self.sidebar.setCurrentRow(PAGES.index(key))

    def _on_page_shortcut(self, key: str) -> None:
        self.show_page(key)
        if key == "chat":
            self.chat.input.setFocus()
        else:
            self.sidebar.setFocus()  # Tab goes on into the page from here

    def _on_stack_changed(self, index: int) -> None:
        page = self.stack.widget(index)
        if page is not None:  # a page may have made new controls since it was last shown
            name_controls(page)

    def current_page(self) -> str:
        """The key of the page shown."""
        return PAGES[self.stack.currentIndex()]

    # -- work -------------------------------------------------------------------------
    def start_detection(self) -> None:
        """Detect this machine off the UI thread, showing progress on Home."""
        self.home.set_detecting(True)
        folders = tuple(Path(f) for f in self.state.settings.model_folders)

        def detect(job: Job) -> Inventory:
            return services.detect_machine(job, folders)

        self.runner.submit("detect", detect, self._on_detected,
                           on_progress=self._on_detect_progress)

    def set_detected(self, inventory: Inventory) -> None:
        """Use ``inventory`` as this machine (detection result, or a test's rig)."""
        self.home.set_detecting(False)
        self.state.set_detected(inventory)

    def select_model(self, path: Path, show: bool = True) -> None:
        """Read ``path``'s header off the UI thread, then (if ``show``) its Plan page."""
        target = Path(path)

        def read(_job: Job) -> object:
            try:
                profile = services.read_profile(target)
            except GGUFError as exc:  # the message names the file and what to do
                raise ModelFileError(target, str(exc)) from exc
            return profile, services.read_projector(target)

        self.plan.set_busy(True)
        self.runner.submit("profile", read,
                           lambda read_: self._on_profile_read(target, read_, show))

    def _on_profile_read(self, path: Path, read: object, show: bool) -> None:
        profile, projector = cast("tuple[ModelProfile, ProjectorProfile | None]", read)
        self.state.set_model(path, profile, projector)
        self._on_engine_state(self.engine.state)  # Load again, or Load for another model
        if show:
            self.show_page("plan")

    def start_ready_to_chat(self) -> None:
        """What the app does when it opens: Chat, the question box focused, and the model
        loaded last (the demo the first time) loading at once."""
        self.show_page("chat")
        self.chat.input.setFocus()
        path = self._selected_at_start or self.startup_model()
        if path is None:
            return
        self._expect_load()
        if path == self._selected_at_start and self.state.plan is None:
            self._chat_after_plan = path  # its header is being read: load when planned
        else:
            self.load_and_chat(path)

    def startup_model(self) -> Path | None:
        """The model loaded last, if it is still there, else the demo."""
        last = self.state.settings.last_model
        if last and Path(last).is_file():
            return Path(last)
        return self.models.demo_path

    def _on_chat_load_wanted(self) -> None:
        if self.control.reload():
            self.banner.hide()  # what it said is history: the engine loads again
            return
        path = self.state.model_path or self.startup_model()
        if path is None:
            self.load_plan()  # nothing to load: it says so
            return
        self._expect_load()
        self.load_and_chat(path)

    def load_and_chat(self, path: Path) -> None:
        """Select ``path``, load it with its plan as soon as that is shown, open the chat."""
        self._chat_after_plan = Path(path)
        self.select_model(path, show=False)

    def _on_plan_shown(self, plan: Plan) -> None:
        target = self._chat_after_plan
        if target is None or self.state.model_path != target:
            return
        self._chat_after_plan = None
        if self.load_plan():
            self.show_page("chat")

    def load_plan(self) -> bool:
        """Start the engine with the plan shown (the Plan page's Load button); False when
        it cannot be loaded (:meth:`_on_load_refused` says why, and what to do)."""
        self.banner.hide()
        if not self.control.load_plan():
            return False
        if self.state.model_path is not None:
            self.state.remember_model(Path(self.state.model_path))
        return True

    def _on_load_refused(self, reason: str) -> None:
        """A load was asked for (a question, Load and chat, Load) and not started: say
        why and what to do, in the status bar and on the Chat page; a plan that does not
        fit is shown with its reasons."""
        self._chat_after_plan = None
        path = self.state.model_path
        message = refusal_text(reason, path.name if path is not None else "", self.state.plan)
        self.chat.set_load_refused(message)
        self._on_engine_state(self.engine.state)
        self.show_status_message(message, 30000)
        if reason == "does_not_fit":
            self.show_page("plan")  # its memory map and reasons say the rest

    def show_status_message(self, message: str, timeout_ms: int = 10000) -> None:
        """Show ``message`` in the status bar (:class:`app.status_message.StatusMessage`)."""
        self.status_message.show(message, timeout_ms)

    def retry_safer(self) -> None:
        """Load again after a crash, with a safer plan."""
        self.banner.hide()
        self.control.retry_safer()

    def replan_without(self, workers: tuple[str, ...]) -> None:
        """Plan again without the RPC workers the engine lost (then Load is offered)."""
        self.banner.hide()
        self.cluster.leave_out(workers)
        self.show_page("plan")

    def _on_unload_requested(self) -> None:
        self.chat.streamer.stop()  # an answer streaming ends as stopped, not as failed
        self.control.unload()

    def _serving_binding(self) -> Binding:
        return self.server.binding()

    def _expect_load(self) -> None:
        """A load is on its way (the machine and the plan come first): say so at once."""
        self.chat.set_load_expected(True)
        self.load_progress.setRange(0, 0)  # busy until the engine reports its progress
        self.load_progress.setVisible(True)
        self._update_status()

    def _on_engine_state(self, state: str) -> None:
        spec = self.engine.spec
        self.plan.set_engine_state(state, Path(spec.model_path) if spec is not None else None)
        self.load_progress.setRange(0, 100)
        self.load_progress.setVisible(state == "loading")
        self._update_status()

    def _on_engine_progress(self, value: float) -> None:
        self.load_progress.setValue(round(value * 100))
        self._update_status()

    def _on_chat_answer_speed(self, tps: float) -> None:
        self._last_decode_tps = tps  # the engine's figure of the chat's answer
        self._update_status()

    def _on_detected(self, inventory: Inventory) -> None:
        self.set_detected(inventory)
        folders = tuple(Path(f) for f in self.state.settings.model_folders)

        def refine(job: Job) -> Inventory | None:  # once a day at most, never in the way
            return services.refine_machine(job, inventory, folders)

        # after the start-up's own work (the model it loads), not in its way
        QTimer.singleShot(REFINE_DELAY_MS, self, lambda: self.runner.submit(
            "refine", refine, self._on_refined))

    def _on_refined(self, inventory: Inventory | None) -> None:
        if inventory is not None and self.state.detected is not None:
            self.state.set_detected(inventory)

    def _on_detect_progress(self, value: object) -> None:
        if isinstance(value, tuple) and len(value) == 2:
            self.home.set_progress(str(value[0]), float(value[1]))

    def _on_lane_idle(self, lane: str) -> None:
        if lane == "detect" and self.state.detected is None:
            self.home.set_detecting(False)
        if lane == "profile":
            self.plan.set_busy(False)

    def _on_home_whatif_requested(self) -> None:
        self.show_page("plan")
        self.plan.open_whatif()

    def _on_settings_edited(self, settings: AppSettings) -> None:
        old = self.state.settings
        self.state.update_settings(settings)
        if settings.language != old.language:
            self.switcher.set_language(settings.language or system_language())
        if settings.theme != old.theme:
            app = QApplication.instance()
            if isinstance(app, QApplication):
                apply_theme(app, settings.theme)

    # -- texts ------------------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        """Set every visible text in the current language."""
        self.setWindowTitle(self.tr("Loadout"))
        names = {"home": self.tr("Home"), "models": self.tr("Models"), "plan": self.tr("Plan"),
                 "chat": self.tr("Chat"), "server": self.tr("Server"),
                 "settings": self.tr("Settings")}
        for row, key in enumerate(PAGES):
            item = self.sidebar.item(row)
            if item is not None:
                item.setText(names[key])
                item.setToolTip(self.tr("{page} (Ctrl+{number})").format(
                    page=names[key], number=row + 1))
        set_name(self.sidebar, self.tr("Pages"))
        set_name(self.load_progress, self.tr("Model loading progress"))
        self._update_status()
        # after every page has retranslated itself (they see the same event)
        QTimer.singleShot(0, self, lambda: name_controls(self))

    def _update_status(self) -> None:
        engine_texts = {"unloaded": self.tr("Engine: not loaded"),
                        "loading": self.tr("Engine: loading {percent}%"),
                        "ready": self.tr("Engine: ready"),
                        "stopping": self.tr("Engine: unloading"),
                        "crashed": self.tr("Engine: stopped unexpectedly")}
        self.status_engine.setText(engine_texts.get(self.engine.state, "").format(
            percent=round(self.engine.load_progress * 100)))
        if self.chat.load_expected and self.engine.state in ("unloaded", "crashed"):
            self.status_engine.setText(self.tr("Engine: preparing to load"))
        spec = self.engine.spec  # the model running, else the one selected
        path = Path(spec.model_path) if spec is not None and self.engine.state in (
            "loading", "ready") else self.state.model_path
        self.status_model.setText(self.tr("Model: {name}").format(
            name=path.name if path else self.tr("none")))
        decode = self._last_decode_tps
        self.status_decode.setText(self.tr("Decode: {tps} t/s (last answer)").format(
            tps=fmt_tps(decode) if decode is not None else "—"))
        self.status_decode.setToolTip(self.tr(
            "The decode t/s of the last chat answer (live while it streams), as the engine "
            "measures it; the Server page charts all requests together"))
        inv = self.state.detected
        own = [g for g in inv.gpus if not g.remote] if inv is not None else []  # no workers
        if own:
            used = sum(g.total_bytes - g.free_bytes for g in own)
            total = sum(g.total_bytes for g in own)
            self.status_vram.setText(self.tr("VRAM in use: {used} / {total}").format(
                used=fmt_bytes(used), total=fmt_bytes(total)))
        else:
            self.status_vram.setText(self.tr("VRAM: none"))
        mem = psutil.virtual_memory()
        self.status_ram.setText(self.tr("RAM in use: {used} / {total}").format(
            used=fmt_bytes(mem.total - mem.available), total=fmt_bytes(mem.total)))

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop timers and wait for every worker thread (the window may then be deleted)."""
        self._ram_timer.stop()
        self.errors.close()
        self.chat.shutdown()
        self.control.shutdown()
        self.runner.shutdown()


def run_app(argv: list[str]) -> int:
    """Create the application, show the main window and run the event loop."""
    app = QApplication.instance() or QApplication(argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("Loadout")
    settings = load_settings()
    apply_theme(app, settings.theme)
    hints = app.styleHints()
    hints.colorSchemeChanged.connect(lambda _scheme: apply_theme(app, load_settings().theme))
    switcher = LanguageSwitcher()
    switcher.set_language(settings.language or system_language())
    window = MainWindow(settings, switcher)
    app.setWindowIcon(QIcon(str(ICON)))
    window.start_ready_to_chat()
    probe = start_if_asked(window)  # noqa: F841 (tests that drive the window; off by default)
    previous_hook = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        # An exception in a slot on the UI thread: the same one handler as workers.
        if isinstance(value, Exception):
            window.errors.report(value)
        else:
            previous_hook(kind, value, tb)

    sys.excepthook = excepthook
    notifier = quit_on_termination(app)  # noqa: F841 (kept alive while the loop runs)
    window.show()
    try:
        return int(app.exec())
    finally:
        sys.excepthook = previous_hook
        window.shutdown()
