"""An engine whose app is gone ends by itself: on the lifeline pipe's end, or when its
parent process changes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for the engine: watches its parent, then idles (as a server would).
ENGINE = """
import sys, time
from engine.parent_watch import watch_parent
fd = int(sys.argv[1]) if sys.argv[1] != "-" else None
ppid = int(sys.argv[2]) if sys.argv[2] != "-" else None
watch_parent(fd, ppid)
print("watching", flush=True)
time.sleep(120)
"""

# A stand-in for the app: starts the engine watching its pid, prints the engine's pid.
APP = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], "-", str(os.getpid())])
print(child.pid, flush=True)
time.sleep(120)
"""


def _ended(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(os.name != "posix", reason="pipes are inherited by number on POSIX")
def test_the_engine_ends_within_seconds_when_the_lifeline_pipe_closes() -> None:
    read_end, write_end = os.pipe()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    engine = subprocess.Popen([sys.executable, "-c", ENGINE, str(read_end), "-"],
                              pass_fds=(read_end,), env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        os.close(read_end)
        assert engine.stdout is not None and engine.stdout.readline().strip() == "watching"
        assert not _ended(engine.pid, 1.0)  # the app lives: the engine stays
        started = time.monotonic()
        os.close(write_end)  # what the kernel does when the app is killed
        assert engine.wait(10) is not None
        assert time.monotonic() - started < 6
    finally:
        engine.kill()
        engine.wait(10)


@pytest.mark.skipif(os.name != "posix", reason="an orphan gets a new parent on POSIX")
def test_without_a_pipe_the_engine_ends_when_its_parent_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    app = subprocess.Popen([sys.executable, "-c", APP, ENGINE], env=env, cwd=ROOT,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert app.stdout is not None
        engine = int(app.stdout.readline())
        time.sleep(0.5)
        assert not _ended(engine, 0.5)
        os.kill(app.pid, signal.SIGKILL)
        app.wait(10)
        assert _ended(engine, 8), "the engine outlived its parent"
    finally:
        app.kill()
        app.wait(10)


def _waits(target: object, within_s: float) -> bool:
    """Whether ``target()`` is still blocking after ``within_s`` (run in a thread)."""
    import threading

    thread = threading.Thread(target=target, daemon=True)  # type: ignore[arg-type]
    thread.start()
    thread.join(within_s)
    return thread.is_alive()


def test_waiting_on_a_process_returns_when_it_ends() -> None:
    # how a Windows engine watches its app (the app's number never changes there)
    from engine.parent_watch import wait_for_exit

    older = psutil.Process().parent()
    assert older is not None
    assert _waits(lambda: wait_for_exit(older.pid), 0.5)  # a living, older process
    # a process started after this one can only hold a dead parent's reused number
    younger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not _waits(lambda: wait_for_exit(younger.pid), 2.0)
    finally:
        younger.kill()
        younger.wait(10)
    assert not _waits(lambda: wait_for_exit(younger.pid), 2.0)  # gone: returns at once


def test_waiting_on_a_process_wakes_when_it_is_killed() -> None:
    # stand-in for the app: a process older than the waiter, the waiter its child
    code = ("import sys, time; from engine.parent_watch import wait_for_exit; "
            "wait_for_exit(int(sys.argv[1])); print('woke', flush=True)")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    waiter = subprocess.Popen([sys.executable, "-c", code, str(sleeper.pid)], env=env,
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        assert waiter.poll() is None, "the waiter returned while the process lived"
        started = time.monotonic()
        sleeper.kill()
        sleeper.wait(10)  # reaped, as a dead app's parent (or Windows) would
        out, _ = waiter.communicate(timeout=10)
        assert out.strip() == "woke"
        assert time.monotonic() - started < 5
    finally:
        for proc in (sleeper, waiter):
            proc.kill()
            proc.wait(10)
