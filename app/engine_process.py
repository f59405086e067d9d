"""The engine process, seen from the app: start it with a LaunchSpec, follow its load,
notice when it dies, stop it.

Each engine gets a fresh private key in its environment (never on its command line); every
request of the app carries it, and the engine serves nobody else until
:meth:`EngineProcess.set_public` (the Server switch) says so.

The engine runs as ``python -m loadout serve`` under a :class:`QProcess` (its output is
read by Qt's event loop, never by a blocking call on the UI thread). The app knows the
port before the engine is ready, so it can follow the load on ``/health``; the ready line
(``--ready-json``) gives the model id. A process that ends without being asked to is a
crash: the last lines of its log say why.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from collections import deque
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

from app import engine_job
from app.engine_child import PARENT_ENV, wrapper_arguments
from app.engine_client import Endpoint, EngineHttpError, post_json
from app.engine_launch import (
    LOOPBACK,
    Binding,
    free_port,
    key_environment,
    library_arguments,
    library_model_id,
    new_api_key,
    python_executable,
    serve_arguments,
    write_spec,
)
from app.status_poller import StatusPoller
from engine.launch import LaunchSpec
from engine.server.security import ACCESS_PATH

log = logging.getLogger(__name__)

LOG_LINES = 40
STOP_GRACE_MS = 5000
STATES = ("unloaded", "loading", "ready", "stopping", "crashed")
ACCESS_TIMEOUT_S = 5.0


def ask_to_stop(process: QProcess) -> None:
    """Ask the engine to stop: SIGTERM (the server shuts down cleanly) on POSIX. On Windows
    ``terminate()`` posts WM_CLOSE, which a console process never receives, so the engine
    would hold its memory for the whole grace period: it is ended at once (it keeps
    nothing that a clean stop would save)."""
    if sys.platform == "win32":
        process.kill()
    else:
        process.terminate()


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


class EngineProcess(QObject):
    """One engine process at a time.

    Signals:
        sig_state_changed(str): one of :data:`STATES`.
        sig_load_progressed(float): the model load, 0..1.
        sig_engine_ready(object): the :class:`Endpoint` to talk to.
        sig_engine_died(str): the engine ended unasked; the argument is its last log lines.
    """

    sig_state_changed = Signal(str)
    sig_load_progressed = Signal(float)
    sig_engine_ready = Signal(object)
    sig_engine_died = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = "unloaded"
        self.spec: LaunchSpec | None = None
        self.binding = Binding()
        self.app_key = ""
        self.port = 0
        self.endpoint: Endpoint | None = None
        self.load_progress = 0.0
        self.log_tail: deque[str] = deque(maxlen=LOG_LINES)
        self.exit_code: int | None = None
        self.library = False  # serve every model of the library, ``spec``'s model kept
        self.pinned: str | None = None  # the id of the model kept, when serving the library
        self.poller = StatusPoller(parent=self)
        self.poller.sig_health_received.connect(self._on_poller_health)
        self._process: QProcess | None = None
        self._stdout = b""
        self._stderr = b""
        self._after_stop: tuple[LaunchSpec, Binding] | None = None

    # -- control ----------------------------------------------------------------------
    def load(self, spec: LaunchSpec, binding: Binding | None = None) -> None:
        """Start an engine carrying out ``spec`` (an engine already running stops first)."""
        wanted = binding if binding is not None else Binding()
        if self._process is not None:
            self._after_stop = (spec, wanted)
            self.unload()
            return
        from engine.paths import paths

        self.spec, self.binding = spec, wanted
        self.app_key = new_api_key()  # this engine's own: the app's requests carry it
        self.port = wanted.port or free_port(LOOPBACK)
        spec_file = write_spec(spec, paths().cache / "engine")
        self.log_tail.clear()
        self.exit_code = None
        self._stdout = self._stderr = b""
        self.load_progress = 0.0
        process = QProcess(self)
        env = QProcessEnvironment.systemEnvironment()
        root = str(_repo_root())
        env.insert("PYTHONPATH", os.pathsep.join(
            p for p in (root, env.value("PYTHONPATH", "")) if p))
        env.insert("PYTHONUNBUFFERED", "1")
        env.insert(PARENT_ENV, str(os.getpid()))
        # ggml's abort would attach gdb: seconds of frames that push the cause (a lost
        # RPC worker, a failed assert) out of the log lines the app reads
        env.insert("GGML_NO_BACKTRACE", "1")
        for name, value in key_environment(wanted, self.app_key).items():  # never in argv
            env.insert(name, value)
        process.setProcessEnvironment(env)
        process.setWorkingDirectory(root)
        process.readyReadStandardOutput.connect(self._on_process_stdout)
        process.readyReadStandardError.connect(self._on_process_stderr)
        process.finished.connect(self._on_process_finished)
        process.errorOccurred.connect(self._on_process_error)
        process.started.connect(self._on_process_started)
        self._process = process
        self.endpoint = Endpoint(f"http://{LOOPBACK}:{self.port}", api_key=self.app_key)
        self.pinned = library_model_id(spec.model_path) if self.library else None
        if self.pinned is not None:
            args = library_arguments(spec, self.pinned, wanted, self.port)
        else:
            if self.library:  # Chat needs its model: served alone rather than not at all
                log.warning("%s is not in the library: it is served alone", spec.model_path)
            args = serve_arguments(spec_file, spec.model_path, wanted, self.port)
        log.info("starting the engine: %s %s", python_executable(), " ".join(args))
        self._set_state("loading")
        self.sig_load_progressed.emit(0.0)
        process.start(python_executable(), wrapper_arguments() + args)
        self.poller.start(self.endpoint, ready=False)

    def restart(self, binding: Binding) -> None:
        """Start the same spec again, listening as ``binding`` says."""
        if self.spec is not None:
            self.load(self.spec, binding)

    def set_public(self, public: bool) -> bool:
        """Serve clients other than the app (the Server switch) or only the app, without a
        restart. A loopback round trip to a route that only flips a flag, so it runs here.
        Returns whether the engine took it."""
        endpoint = self.endpoint
        if endpoint is None or self.state != "ready":
            return False
        try:
            status, _ = post_json(endpoint, ACCESS_PATH, {"public": public},
                                  timeout=ACCESS_TIMEOUT_S)
        except EngineHttpError as exc:
            log.warning("the engine's access was not changed: %s", exc)
            return False
        if status != 200:
            log.warning("the engine refused the access change (HTTP %d)", status)
            return False
        self.binding = dataclasses.replace(self.binding, public=public)
        return True

    def unload(self) -> None:
        """Stop the engine (frees all its memory); returns at once."""
        process = self._process
        if process is None:
            self._set_state("unloaded")
            return
        self._set_state("stopping")
        self.poller.stop()
        ask_to_stop(process)
        process_ref = process

        def force() -> None:
            # once finished the process object is deleted: ask only while it is current
            if self._process is process_ref and \
                    process_ref.state() != QProcess.ProcessState.NotRunning:
                process_ref.kill()

        from PySide6.QtCore import QTimer

        QTimer.singleShot(STOP_GRACE_MS, self, force)

    def shutdown(self) -> None:
        """Stop the engine and wait for it (app exit, tests' teardown)."""
        self._after_stop = None
        self.poller.shutdown()
        process = self._process
        if process is None:
            return
        self.state = "stopping"
        ask_to_stop(process)
        if not process.waitForFinished(STOP_GRACE_MS):
            process.kill()
            process.waitForFinished(STOP_GRACE_MS)

    def pid(self) -> int | None:
        """The engine's process id while it runs."""
        if self._process is None:
            return None
        value = int(self._process.processId())
        return value or None

    def log_text(self) -> str:
        """The last lines the engine wrote to its log (stderr)."""
        return "\n".join(self.log_tail)

    # -- process events ---------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.sig_state_changed.emit(state)

    def _on_process_stdout(self) -> None:
        if self._process is None:
            return
        self._stdout += bytes(self._process.readAllStandardOutput().data())
        *lines, self._stdout = self._stdout.split(b"\n")
        for line in lines:
            self._on_line(line.decode("utf-8", "replace").strip())

    def _on_line(self, line: str) -> None:
        try:
            doc: Any = json.loads(line)
        except ValueError:
            self.log_tail.append(line)
            return
        if not isinstance(doc, dict):
            return
        if doc.get("event") == "ready" and self.endpoint is not None:
            # serving the library, the ready line names the model kept (``--keep``)
            model = str(doc.get("model") or "")
            self.endpoint = Endpoint(self.endpoint.url, model, self.app_key)
            self.load_progress = 1.0
            self.sig_load_progressed.emit(1.0)
            self._set_state("ready")
            self.poller.start(self.endpoint, ready=True)
            self.sig_engine_ready.emit(self.endpoint)
        elif doc.get("event") == "error":
            self.log_tail.append(str(doc.get("error", "")))

    def _on_process_stderr(self) -> None:
        if self._process is None:
            return
        self._stderr += bytes(self._process.readAllStandardError().data())
        *lines, self._stderr = self._stderr.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self.log_tail.append(line)
                log.debug("engine: %s", line)

    def _on_poller_health(self, doc: dict[str, Any]) -> None:
        if self.state != "loading":
            return
        progress = doc.get("progress")
        if isinstance(progress, int | float):
            self.load_progress = float(progress)
            self.sig_load_progressed.emit(self.load_progress)

    def _on_process_started(self) -> None:
        pid = self.pid()
        if pid is not None:
            engine_job.contain(pid)  # Windows: ends with the app, however the app ends

    def _on_process_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self.log_tail.append(f"the engine could not be started: {python_executable()}")
            self._on_process_finished(-1, QProcess.ExitStatus.CrashExit)

    def _on_process_finished(self, code: int, _status: QProcess.ExitStatus) -> None:
        process = self._process
        if process is None:
            return
        self._on_process_stderr()
        self._process = None
        process.deleteLater()
        self.poller.stop()
        self.exit_code = code
        asked = self.state == "stopping"
        self.endpoint = None
        if self._after_stop is not None:
            spec, binding = self._after_stop
            self._after_stop = None
            self._set_state("unloaded")
            self.load(spec, binding)
            return
        if asked:
            self._set_state("unloaded")
            return
        log.error("the engine ended unexpectedly (exit %s):\n%s", code, self.log_text())
        self._set_state("crashed")
        self.sig_engine_died.emit(self.log_text())
