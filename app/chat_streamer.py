"""Streams one chat answer in a worker thread and hands it to the UI in batches.

The worker reads the server-sent events, saves the answer so far to the conversations
database, and only then emits it, at most every ``BATCH_S`` seconds (the UI re-renders a
few dozen times a second, not once per token). Stopping shuts the socket down: the server
sees the client leave and frees the slot.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot

from app.chat_store import ChatStore
from app.engine_client import ChatStream, Endpoint, EngineHttpError, StreamResult

log = logging.getLogger(__name__)

BATCH_S = 0.05


class _Signals(QObject):
    sig_text = Signal(int, str)
    sig_done = Signal(int, object, str)


class _StreamJob(QRunnable):
    def __init__(self, serial: int, stream: ChatStream, db_path: Path, message_id: int,
                 signals: _Signals) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._serial, self._stream, self._db_path = serial, stream, db_path
        self._message_id, self._signals = message_id, signals

    def run(self) -> None:
        store = ChatStore(self._db_path)
        error = ""
        try:
            error = self._pump(store)
        except Exception as exc:  # every failure reaches the page, never the void
            log.exception("streaming the answer failed")
            error = f"{type(exc).__name__}: {exc}"
        finally:
            result = self._stream.result
            try:
                store.finish_message(self._message_id, result.text, result.timings,
                                     result.finish_reason or ("error" if error else None))
            finally:
                store.close()
            self._signals.sig_done.emit(self._serial, result, error)

    def _pump(self, store: ChatStore) -> str:
        shown = 0
        last = time.perf_counter()
        try:
            for _piece in self._stream.deltas():
                now = time.perf_counter()
                if now - last >= BATCH_S:
                    text = self._stream.result.text
                    store.set_content(self._message_id, text)  # saved before it is shown
                    self._signals.sig_text.emit(self._serial, text)
                    shown, last = len(text), now
        except EngineHttpError as exc:
            return str(exc)
        text = self._stream.result.text
        if len(text) != shown:
            store.set_content(self._message_id, text)
            self._signals.sig_text.emit(self._serial, text)
        return self._stream.result.error or ""


class ChatStreamer(QObject):
    """Runs one answer at a time.

    Signals:
        sig_text_arrived(str): the whole answer so far (already saved).
        sig_answer_finished(object, str): the :class:`StreamResult`, and an error message
            ("" when none).
    """

    sig_text_arrived = Signal(str)
    sig_answer_finished = Signal(object, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals()
        queued = Qt.ConnectionType.QueuedConnection
        self._signals.sig_text.connect(self._on_job_text, queued)
        self._signals.sig_done.connect(self._on_job_done, queued)
        self._serial = 0
        self._stream: ChatStream | None = None

    @property
    def busy(self) -> bool:
        """Whether an answer is streaming."""
        return self._stream is not None

    @property
    def request_id(self) -> str | None:
        """The id of the answer streaming (None until its first event arrives)."""
        stream = self._stream
        return stream.result.request_id if stream is not None else None

    def start(self, endpoint: Endpoint, body: dict[str, Any], db_path: Path,
              message_id: int) -> None:
        """Stream the answer to ``body`` into message ``message_id``."""
        self.stop()
        self._serial += 1
        self._stream = ChatStream(endpoint, body)
        self._pool.start(_StreamJob(self._serial, self._stream, db_path, message_id,
                                    self._signals))

    def stop(self) -> None:
        """Stop the answer streaming now (what arrived is kept)."""
        if self._stream is not None:
            self._stream.cancel()

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop and wait for the worker; True when it ended."""
        self.stop()
        return bool(self._pool.waitForDone(timeout_ms))

    @Slot(int, str)
    def _on_job_text(self, serial: int, text: str) -> None:
        if serial == self._serial and self._stream is not None:
            self.sig_text_arrived.emit(text)

    @Slot(int, object, str)
    def _on_job_done(self, serial: int, result: object, error: str) -> None:
        if serial != self._serial:
            return
        self._stream = None
        assert isinstance(result, StreamResult)
        self.sig_answer_finished.emit(result, error)
