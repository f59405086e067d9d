"""End the engine process when the app that started it is gone.

The app holds the write end of a pipe for its whole life and its engine processes inherit
the read end: when the app ends in any way (a crash, SIGKILL, a logout) the kernel closes
the write end and a read here returns end-of-file at once. Where no such pipe was passed,
the parent's process id is polled instead (a child whose parent died is given another);
on Windows, where an orphan keeps its dead parent's number, the parent's process itself is
waited on (its handle is signalled when it ends; the app also puts its engines in a Job
Object that Windows ends with it, ``app.engine_job``).
Either way the engine is asked to stop (SIGTERM, so the server shuts down), and if it has
not ended a few seconds later it ends at once, so a model's memory (a GPU's VRAM) is never
held by an orphan.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

import psutil

log = logging.getLogger(__name__)

POLL_S = 1.0
GRACE_S = 3.0


def parent_alive(expected_ppid: int) -> bool:
    """Whether this process's parent is still ``expected_ppid``."""
    return os.getppid() == expected_ppid


def wait_for_eof(fd: int) -> None:
    """Block until the pipe ``fd`` reaches end-of-file (every writer has closed it)."""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:  # pragma: no cover - retried by Python itself since 3.5
            continue
        except OSError as exc:
            log.debug("parent pipe unreadable (%s): taken as the parent gone", exc)
            return
        if not chunk:
            return


def wait_for_new_parent(expected_ppid: int, interval_s: float = POLL_S) -> None:
    """Block until this process's parent is no longer ``expected_ppid``."""
    while parent_alive(expected_ppid):
        time.sleep(interval_s)


def wait_for_exit(pid: int, interval_s: float = POLL_S) -> None:
    """Block until process ``pid`` has ended (on Windows a wait on its handle, which the
    kernel signals; elsewhere psutil polls).

    Returns at once when no such process runs, or when the number now belongs to a
    process started after this one: the parent has ended and its number was reused.
    """
    try:
        process = psutil.Process(pid)
        if process.create_time() > psutil.Process().create_time():
            log.debug("process %d is younger than this one: not the parent", pid)
            return
        process.wait()
    except psutil.NoSuchProcess:
        return
    except psutil.AccessDenied:  # no handle to wait on: ask, as the POSIX watch does
        while process.is_running():
            time.sleep(interval_s)


def end_this_process(grace_s: float = GRACE_S) -> None:
    """Ask this process to stop (SIGTERM); if it still runs after ``grace_s``, end it."""
    log.warning("the app that started this engine is gone: stopping")
    with contextlib.suppress(OSError):  # on Windows this ends the process at once
        os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace_s)
    os._exit(0)


def watch_parent(fd: int | None, expected_ppid: int | None,
                 on_gone: Callable[[], None] = end_this_process) -> threading.Thread | None:
    """Start a daemon thread that calls ``on_gone`` once the parent is gone.

    Args:
        fd: the read end of the app's lifeline pipe (preferred), or None.
        expected_ppid: the app's process id, watched when no ``fd`` is given, or None.
        on_gone: what to do then (default: stop this process within a few seconds).

    Returns:
        The thread, or None when there is nothing to watch.
    """
    if fd is not None:
        def wait() -> None:
            wait_for_eof(fd)
    elif expected_ppid is not None:
        ppid = expected_ppid

        def wait() -> None:
            if sys.platform == "win32":  # an orphan's parent number never changes there
                wait_for_exit(ppid)
            else:
                wait_for_new_parent(ppid)
    else:
        return None

    def run() -> None:
        wait()
        on_gone()

    thread = threading.Thread(target=run, name="parent-watch", daemon=True)
    thread.start()
    return thread
