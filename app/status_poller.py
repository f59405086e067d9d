"""Polls the engine's live status over HTTP, off the UI thread.

A timer on the UI thread starts one fetch at a time on a private one-thread pool; the
answer comes back as a signal. While the model loads it reads ``/health`` (public, carries
the load progress); once ready, ``/v1/loadout/status`` (slots, queue, memory per device).
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal, Slot

from app.engine_client import Endpoint, EngineHttpError, get_json

log = logging.getLogger(__name__)

STATUS_PATH = "/v1/loadout/status"
HEALTH_PATH = "/health"


class _Signals(QObject):
    sig_fetched = Signal(int, str, object)


class _Fetch(QRunnable):
    def __init__(self, serial: int, endpoint: Endpoint, path: str, signals: _Signals) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._serial, self._endpoint, self._path, self._signals = serial, endpoint, path, signals

    def run(self) -> None:
        try:
            status, doc = get_json(self._endpoint, self._path, timeout=3.0)
        except EngineHttpError:
            doc = None
        else:
            if status >= 400 and self._path == STATUS_PATH:
                doc = None
        self._signals.sig_fetched.emit(self._serial, self._path, doc)


class StatusPoller(QObject):
    """Fetches the engine's status every ``interval_ms`` while started.

    Signals:
        sig_health_received(dict): ``/health`` while loading.
        sig_status_received(dict): ``/v1/loadout/status`` once ready.
    """

    sig_health_received = Signal(object)
    sig_status_received = Signal(object)

    def __init__(self, interval_ms: int = 500, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals()
        self._signals.sig_fetched.connect(self._on_fetched, Qt.ConnectionType.QueuedConnection)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._endpoint: Endpoint | None = None
        self._path = HEALTH_PATH
        self._serial = 0
        self._in_flight = False
        self.last_status: dict[str, Any] | None = None

    def start(self, endpoint: Endpoint, ready: bool) -> None:
        """Poll ``endpoint`` (its status once ``ready``, else its health)."""
        self._serial += 1
        self._endpoint = endpoint
        self._path = STATUS_PATH if ready else HEALTH_PATH
        self._in_flight = False
        self._timer.start()
        self._tick()

    def set_interval(self, ms: int) -> None:
        """Poll every ``ms`` milliseconds (faster while an answer streams)."""
        self._timer.setInterval(ms)

    def stop(self) -> None:
        """Stop polling (a fetch in progress is dropped)."""
        self._serial += 1
        self._timer.stop()
        self._endpoint = None
        self.last_status = None

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Stop and wait for the fetch thread; True when it ended."""
        self.stop()
        return bool(self._pool.waitForDone(timeout_ms))

    def _tick(self) -> None:
        if self._endpoint is None or self._in_flight:
            return
        self._in_flight = True
        self._pool.start(_Fetch(self._serial, self._endpoint, self._path, self._signals))

    @Slot(int, str, object)
    def _on_fetched(self, serial: int, path: str, doc: object) -> None:
        if serial != self._serial:
            return
        self._in_flight = False
        if not isinstance(doc, dict):
            return
        if path == HEALTH_PATH:
            self.sig_health_received.emit(doc)
        else:
            self.last_status = doc
            self.sig_status_received.emit(doc)
