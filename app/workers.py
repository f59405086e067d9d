"""Run long jobs (detect, read a profile, plan) off the UI thread.

A job is a plain function ``fn(job) -> result`` that may call ``job.progress(value)`` and
should return early when ``job.cancelled`` is set. Jobs run on the runner's own
``QThreadPool``; results come back on the UI thread. Jobs are grouped in *lanes*: in one
lane at most one job runs and at most one waits, and only the newest request's result is
delivered (a slider dragged through ten values plans twice, not ten times). Every failure
goes to the one error callback the runner was made with. Worker code never touches widgets.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot

log = logging.getLogger(__name__)


UI_SWITCH_INTERVAL_S = 0.002


def favour_ui_thread() -> None:
    """Hand the GIL over more often (2 ms instead of 5), so that pure-Python jobs delay the
    UI thread less; costs the jobs a little throughput."""
    if sys.getswitchinterval() > UI_SWITCH_INTERVAL_S:
        sys.setswitchinterval(UI_SWITCH_INTERVAL_S)


class Job:
    """What a running job sees: a cancel flag and a progress callback."""

    def __init__(self, lane: str, serial: int, signals: _JobSignals) -> None:
        self.lane = lane
        self.serial = serial
        self._cancel = threading.Event()
        self._signals = signals

    @property
    def cancelled(self) -> bool:
        """Whether a newer request or a shutdown asked this job to stop."""
        return self._cancel.is_set()

    @property
    def cancel_event(self) -> threading.Event:
        """The cancel flag itself (for APIs that take an object with ``is_set()``)."""
        return self._cancel

    def cancel(self) -> None:
        """Ask the job to stop at its next check."""
        self._cancel.set()

    def progress(self, value: object) -> None:
        """Report progress (any value the lane's progress callback understands)."""
        if not self._cancel.is_set():
            self._signals.sig_progress_reported.emit(self.lane, self.serial, value)


class _JobSignals(QObject):
    sig_job_finished = Signal(str, int, object)
    sig_job_failed = Signal(str, int, object)
    sig_progress_reported = Signal(str, int, object)


class _Runnable(QRunnable):
    def __init__(self, fn: Callable[[Job], Any], job: Job, signals: _JobSignals) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._fn = fn
        self._job = job
        self._signals = signals

    def run(self) -> None:
        try:
            result = self._fn(self._job)
        except BaseException as exc:  # every failure reaches the one error handler
            self._signals.sig_job_failed.emit(self._job.lane, self._job.serial, exc)
        else:
            self._signals.sig_job_finished.emit(self._job.lane, self._job.serial, result)


@dataclass
class _Request:
    fn: Callable[[Job], Any]
    on_done: Callable[[Any], None]
    on_progress: Callable[[object], None] | None
    serial: int
    on_failed: Callable[[BaseException], None] | None = None


@dataclass
class _Lane:
    running: _Request | None = None
    job: Job | None = None
    pending: _Request | None = None


class WorkerRunner(QObject):
    """Runs jobs on a private thread pool, newest request per lane wins.

    Args:
        on_error: called on the UI thread with every exception a job raised.
        max_threads: size of the pool (lanes run in parallel with each other).
    """

    sig_lane_idle = Signal(str)

    def __init__(self, on_error: Callable[[BaseException], object], max_threads: int = 3,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        favour_ui_thread()
        self._on_error = on_error
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._lanes: dict[str, _Lane] = {}
        self._serial = 0
        self._closed = False
        # One signal hub for every job; queued so results always arrive on the UI thread.
        self._signals = _JobSignals()
        queued = Qt.ConnectionType.QueuedConnection
        self._signals.sig_job_finished.connect(self._on_job_finished, queued)
        self._signals.sig_job_failed.connect(self._on_job_failed, queued)
        self._signals.sig_progress_reported.connect(self._on_job_progress, queued)

    def submit(self, lane: str, fn: Callable[[Job], Any], on_done: Callable[[Any], None],
               on_progress: Callable[[object], None] | None = None,
               on_failed: Callable[[BaseException], None] | None = None) -> int:
        """Queue ``fn`` in ``lane``; returns the request's serial number.

        A job already running in the lane is asked to cancel; its result is dropped.
        A failure goes to the runner's error handler, then to ``on_failed`` (for a page
        to show its own "could not" state).
        """
        if self._closed:
            return -1
        self._serial += 1
        request = _Request(fn, on_done, on_progress, self._serial, on_failed)
        state = self._lanes.setdefault(lane, _Lane())
        if state.running is None:
            self._start(lane, state, request)
        else:
            state.pending = request
            if state.job is not None:
                state.job.cancel()
        return request.serial

    def busy(self, lane: str | None = None) -> bool:
        """Whether a job runs or waits (in ``lane``, or in any lane)."""
        lanes = [self._lanes.get(lane, _Lane())] if lane else list(self._lanes.values())
        return any(s.running is not None or s.pending is not None for s in lanes)

    def cancel(self, lane: str) -> None:
        """Ask the job running in ``lane`` to stop (it ends with its result, typically
        None) and drop the one waiting there."""
        state = self._lanes.get(lane)
        if state is None:
            return
        state.pending = None
        if state.job is not None:
            state.job.cancel()

    def report_error(self, exc: BaseException) -> None:
        """Send an error raised on the UI thread to the same handler as job failures."""
        self._on_error(exc)

    def active_threads(self) -> int:
        """Worker threads running a job now."""
        return int(self._pool.activeThreadCount())

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Cancel everything and wait for the pool's threads; True if they all ended."""
        self._closed = True
        for state in self._lanes.values():
            state.pending = None
            if state.job is not None:
                state.job.cancel()
        return bool(self._pool.waitForDone(timeout_ms))

    def _start(self, lane: str, state: _Lane, request: _Request) -> None:
        job = Job(lane, request.serial, self._signals)
        state.running, state.job = request, job
        self._pool.start(_Runnable(request.fn, job, self._signals))

    @Slot(str, int, object)
    def _on_job_progress(self, lane: str, serial: int, value: object) -> None:
        state = self._lanes.get(lane)
        if state is None or state.running is None or state.running.serial != serial:
            return
        if state.pending is None and state.running.on_progress is not None:
            state.running.on_progress(value)

    @Slot(str, int, object)
    def _on_job_failed(self, lane: str, serial: int, error: object) -> None:
        exc = error if isinstance(error, BaseException) else RuntimeError(str(error))
        self._finish(lane, serial, None, exc)

    @Slot(str, int, object)
    def _on_job_finished(self, lane: str, serial: int, result: object) -> None:
        self._finish(lane, serial, result, None)

    def _finish(self, lane: str, serial: int, result: Any,
                error: BaseException | None) -> None:
        state = self._lanes.get(lane)
        if state is None or state.running is None or state.running.serial != serial:
            return
        request, state.running, state.job = state.running, None, None
        if state.pending is not None and not self._closed:
            newer, state.pending = state.pending, None
            self._start(lane, state, newer)  # the newest request wins; drop this result
            return
        if self._closed:
            return
        if error is not None:
            log.debug("job in lane %s failed", lane, exc_info=error)
            self._on_error(error)
            if request.on_failed is not None:
                request.on_failed(error)
        else:
            request.on_done(result)
        if state.running is None:
            self.sig_lane_idle.emit(lane)
