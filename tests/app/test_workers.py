"""The worker runner: results on the UI thread, newest request wins, one error handler."""

from __future__ import annotations

import threading
from typing import Any

from app.workers import Job, WorkerRunner
from planner.errors import GGUFError


def _runner(errors: list[BaseException]) -> WorkerRunner:
    return WorkerRunner(errors.append)


def test_only_the_newest_request_of_a_lane_is_delivered(qtbot: Any) -> None:
    errors: list[BaseException] = []
    runner = _runner(errors)
    release = threading.Event()
    first_cancelled = threading.Event()
    results: list[int] = []

    def slow(job: Job) -> int:
        release.wait(5)
        if job.cancelled:
            first_cancelled.set()
        return 0

    runner.submit("plan", slow, results.append)
    for n in range(1, 6):
        runner.submit("plan", lambda _job, n=n: n, results.append)
    release.set()
    qtbot.waitUntil(lambda: not runner.busy("plan"), timeout=5000)
    assert results == [5]
    assert first_cancelled.is_set()
    assert errors == []
    assert runner.shutdown()


def test_lanes_run_independently(qtbot: Any) -> None:
    runner = _runner([])
    got: dict[str, Any] = {}
    runner.submit("a", lambda _job: "A", lambda r: got.__setitem__("a", r))
    runner.submit("b", lambda _job: "B", lambda r: got.__setitem__("b", r))
    qtbot.waitUntil(lambda: len(got) == 2, timeout=5000)
    assert got == {"a": "A", "b": "B"}
    assert runner.shutdown()


def test_failures_reach_the_one_error_handler_not_the_result_callback(qtbot: Any) -> None:
    errors: list[BaseException] = []
    runner = _runner(errors)
    results: list[object] = []

    def bad(_job: Job) -> None:
        raise GGUFError("truncated header")

    runner.submit("profile", bad, results.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert isinstance(errors[0], GGUFError)
    assert results == []
    assert runner.shutdown()


def test_results_and_progress_arrive_on_the_ui_thread(qtbot: Any) -> None:
    runner = _runner([])
    threads: list[str] = []
    progress: list[object] = []

    def work(job: Job) -> str:
        job.progress(("step", 0.5))
        return threading.current_thread().name

    def on_progress(value: object) -> None:
        progress.append(value)
        threads.append(threading.current_thread().name)

    worker_names: list[str] = []
    runner.submit("x", work, worker_names.append, on_progress=on_progress)
    qtbot.waitUntil(lambda: bool(worker_names), timeout=5000)
    main = threading.main_thread().name
    assert worker_names[0] != main  # the job ran elsewhere...
    assert progress == [("step", 0.5)]
    assert threads == [main]        # ...and its progress came back here
    assert runner.shutdown()


def test_shutdown_cancels_and_waits_for_running_jobs(qtbot: Any) -> None:
    runner = _runner([])
    started = threading.Event()

    def loop(job: Job) -> None:
        started.set()
        while not job.cancelled:
            threading.Event().wait(0.01)

    runner.submit("detect", loop, lambda _r: None)
    assert started.wait(5)
    assert runner.shutdown(5000)
    assert runner.active_threads() == 0
    assert runner.submit("detect", loop, lambda _r: None) == -1  # closed
