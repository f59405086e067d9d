"""Drive the real Loadout window as a person does: an X server (Xvfb), the ``loadout``
app in its own process, real key and mouse events (xdotool) on controls found by their
accessible names, a screenshot of every step (ImageMagick's ``import``).

The app is asked where its controls are through its read-only UI probe
(:mod:`app.ui_probe`, on only when ``LOADOUT_UI_PROBE`` is set); every action is an X
input event, never a call into the app.

``LOADOUT_JOURNEY_APP=/path/to/loadout`` starts that executable (an installed bundle)
instead of ``python -m loadout`` from this checkout, in an environment with nothing of the
checkout in it: no ``PYTHONPATH``, no virtual environment on ``PATH``, the profile folder
as its home and working folder (see ``packaging/README.md``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("Xvfb", "xdotool", "import")
SCREEN = "1280x800x24"  # the window's size: screenshots show only the app
APP_ENV = "LOADOUT_JOURNEY_APP"  # an installed executable to drive instead of this checkout
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def installed_app() -> Path | None:
    """The installed ``loadout`` executable named by ``LOADOUT_JOURNEY_APP``, or None."""
    value = os.environ.get(APP_ENV, "")
    return Path(value).expanduser() if value else None


def app_command(home: Path, env: dict[str, str]) -> tuple[list[str], Path, dict[str, str]]:
    """How to start the app: ``(command, working folder, environment)``.

    By default this checkout's ``python -m loadout``; with ``LOADOUT_JOURNEY_APP`` the
    installed executable, with only the system's ``PATH``, no Python variables and
    ``home`` as its ``HOME``: what it does, it does from the bundle alone.
    """
    executable = installed_app()
    if executable is None:
        return [sys.executable, "-m", "loadout"], ROOT, dict(env, PYTHONPATH=str(ROOT))
    if not os.access(executable, os.X_OK):
        raise JourneyError(f"{APP_ENV}={executable}: not an executable file")
    clean = {k: v for k, v in env.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))
             and k not in ("LOADOUT_DEMO_MODEL", "LD_LIBRARY_PATH")}
    clean.update(PATH=SYSTEM_PATH, HOME=str(home))
    return [str(executable)], home, clean


def missing_tools() -> list[str]:
    """The programs the journeys need that are not installed here."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


class JourneyError(AssertionError):
    """A step of a journey did not happen (with what the screen showed)."""


class XServer:
    """An Xvfb on a display number it picks itself (``-displayfd``)."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        self.process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_end), "-screen", "0", SCREEN, "-nolisten",
             "tcp", "-noreset"], pass_fds=(write_end,), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(write_end)
        number = b""
        with os.fdopen(read_end, "rb") as pipe:
            while not number.endswith(b"\n"):
                chunk = pipe.read(1)
                if not chunk:
                    raise JourneyError("Xvfb did not start")
                number += chunk
        self.display = f":{int(number)}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


class App:
    """One run of the ``loadout`` app on ``xserver``, with its own profile folder."""

    def __init__(self, xserver: XServer, home: Path, shots: Path,
                 extra_env: dict[str, str] | None = None) -> None:
        self.xserver, self.home, self.shots = xserver, home, shots
        self.shots.mkdir(parents=True, exist_ok=True)
        self.step = len(list(self.shots.glob("*.png")))
        self.probe_path = str(home / "ui-probe.sock")
        self.log_path = home / "app.log"
        self.env = dict(os.environ, DISPLAY=xserver.display, QT_QPA_PLATFORM="xcb",
                        LOADOUT_HOME=str(home), LOADOUT_UI_PROBE=self.probe_path,
                        **(extra_env or {}))
        for name in ("WAYLAND_DISPLAY", "QT_SCALE_FACTOR"):
            self.env.pop(name, None)
        command, cwd, app_env = app_command(home, self.env)
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(command, cwd=cwd, env=app_env, stdout=self._log,
                                        stderr=self._log)
        self.wait_for(lambda: self.windows(), "the window to open", 90)
        self.focus_window()

    # -- the probe ----------------------------------------------------------------------
    def ask(self, request: dict[str, Any]) -> Any:
        """One probe request (reading only)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(30)
            sock.connect(self.probe_path)
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)

    def windows(self) -> list[dict[str, Any]]:
        if self.process.poll() is not None:
            raise JourneyError(f"the app ended (exit {self.process.returncode}):\n"
                               + self.log_tail())
        try:
            return list(self.ask({"op": "windows"}))
        except OSError:
            return []

    def find(self, name: str) -> dict[str, Any] | None:
        """The first visible widget named ``name`` (accessible name), or None."""
        found = self.ask({"op": "find", "name": name})
        return found[0] if found else None

    def object(self, name: str) -> dict[str, Any] | None:
        """The first visible widget with object name ``name`` (for reading), or None."""
        found = self.ask({"op": "object", "name": name})
        return found[0] if found else None

    def text(self, name: str) -> str:
        found = self.find(name) or self.object(name)
        return str(found["text"]) if found else ""

    def focus(self) -> dict[str, Any] | None:
        return self.ask({"op": "focus"})  # type: ignore[no-any-return]

    def texts(self) -> list[dict[str, Any]]:
        return list(self.ask({"op": "texts"}))

    def wait_for(self, condition: Callable[[], Any], what: str, timeout_s: float = 60
                 ) -> Any:
        """Poll ``condition`` until it is truthy; a JourneyError with a screenshot if not."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                shot = self.screenshot(f"timeout-{what[:40]}")
                raise JourneyError(f"waited {timeout_s:.0f} s for {what}; screen: {shot}\n"
                                   f"app log:\n{self.log_tail()}")
            if self.process.poll() is not None:
                raise JourneyError(f"the app ended while waiting for {what}:\n"
                                   + self.log_tail())
            time.sleep(0.25)

    def wait_control(self, name: str, timeout_s: float = 60, enabled: bool = True
                     ) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            found = self.find(name)
            if found and (found["enabled"] or not enabled) and found["w"] > 0:
                return found
            return None
        return dict(self.wait_for(ready, f"the control {name!r}", timeout_s))

    # -- input, as a person gives it ------------------------------------------------------
    def xdotool(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], env=self.env, check=True, timeout=60,
                       stdout=subprocess.DEVNULL)

    def focus_window(self) -> None:
        main = next((w for w in self.windows() if w["class"] == "MainWindow"), None)
        if main is not None:
            self.xdotool("windowfocus", "--sync", str(main["id"]))

    def click(self, name: str, timeout_s: float = 60) -> None:
        """Click the middle of the control named ``name`` once it is shown and enabled."""
        control = self.wait_control(name, timeout_s)
        if control["class"] in ("QCheckBox", "QRadioButton", "QGroupBox"):
            # its box is at the left (a row may be much wider than box and text)
            self.click_at(control["x"] + 9, control["y"] + min(control["h"] // 2, 10))
            return
        self.click_at(control["x"] + control["w"] // 2, control["y"] + control["h"] // 2)

    def click_at(self, x: int, y: int) -> None:
        self.xdotool("mousemove", "--sync", str(x), str(y), "click", "1")

    def click_item(self, name: str, text: str) -> None:
        """Click the row showing ``text`` in the list named ``name``."""
        def row() -> dict[str, Any] | None:
            found = self.find(name) or {}
            return next((i for i in found.get("items", []) if i["text"] == text), None)
        item = self.wait_for(row, f"{text!r} in {name!r}")
        self.click_at(item["x"] + item["w"] // 2, item["y"] + item["h"] // 2)

    def type(self, text: str) -> None:
        self.xdotool("type", "--delay", "20", text)

    def key(self, *keys: str) -> None:
        self.xdotool("key", "--delay", "50", *keys)

    # -- evidence -------------------------------------------------------------------------
    def screenshot(self, label: str) -> Path:
        """Save the whole screen as ``NN-label.png``."""
        self.step += 1
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in label)
        path = self.shots / f"{self.step:02d}-{safe}.png"
        subprocess.run(["import", "-window", "root", str(path)], env=self.env,
                       timeout=60, check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return path

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # -- processes --------------------------------------------------------------------------
    def engine_pids(self) -> list[int]:
        """The engine processes this app started (its children running ``loadout serve``)."""
        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        return [c.pid for c in children if _is_engine(c, helpers=False)]

    def kill(self) -> None:
        """SIGKILL the app (as a crash or the OOM killer would)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._log.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self._log.close()


def _is_engine(process: psutil.Process, helpers: bool = True) -> bool:
    """Whether ``process`` runs ``loadout serve``; ``helpers``: its grammar checker too."""
    try:
        cmdline = process.cmdline()
        if not helpers and "--grammar-checker" in cmdline:
            return False
        return "serve" in cmdline and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def processes_of(home: Path) -> list[psutil.Process]:
    """Every live process with ``home`` as its profile (the app's helpers, orphans too)."""
    out = []
    for process in psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and \
                    process.environ().get("LOADOUT_HOME") == str(home):
                out.append(process)
        except psutil.Error:
            continue
    return out


def engine_processes_of(home: Path) -> list[psutil.Process]:
    """Every live engine process whose profile is ``home`` (orphans included)."""
    out = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if _is_engine(process) and process.environ().get("LOADOUT_HOME") == str(home):
                out.append(process)
        except psutil.Error:
            continue
    return out


# -- what a person reads on the screen --------------------------------------------------------
QUESTION = "What is the capital of France? Answer briefly."
LONG_ASK = "Write a very long story about a dragon who learns to cook. Use many chapters."


def current_page(app: App) -> str:
    """The page selected in the sidebar."""
    pages = app.object("sidebar") or {}  # (its accessible name is translated)
    return next((i["text"] for i in pages.get("items", []) if i["selected"]), "")


def transcript(app: App) -> str:
    return app.text("Conversation")


def answers_shown(app: App) -> int:
    """How many answers the transcript shows with their measured figures."""
    return transcript(app).count("end-to-end")


def ask(app: App, question: str) -> None:
    """Click the question box, type ``question``, send it with Ctrl+Enter."""
    app.click("Question")
    app.type(question)
    app.key("ctrl+Return")


def engine_status(app: App) -> str:
    return app.text("statusEngine")


def tab_to(app: App, name: str, presses: int = 80) -> dict[str, Any]:
    """Press Tab until the control named ``name`` has the keyboard focus."""
    for _ in range(presses):
        focus = app.focus()
        if focus is not None and focus["name"] == name:
            return focus
        app.key("Tab")
    raise JourneyError(f"Tab never reached {name!r}; screen: {app.screenshot('tab-' + name)}")
