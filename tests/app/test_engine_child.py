"""The engine process ends with the app, even when the app is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.engine_child import supported

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for the app: starts a child through the wrapper, prints its pid, waits.
PARENT = """
import os, subprocess, sys, time
env = {**os.environ, "LOADOUT_APP_PID": str(os.getpid())}
child = subprocess.Popen([sys.executable, "-m", "app.engine_child", "-c",
                          "import time; time.sleep(120)"], env=env)
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.skipif(not supported(), reason="tying a child to its parent is Linux-only")
def test_the_engine_ends_when_the_app_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                              env=env, cwd=ROOT, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        time.sleep(0.5)  # dies before or after the child is tied to it: both must work
        os.kill(parent.pid, signal.SIGKILL)  # the app crashes
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the engine outlived the app"
    finally:
        parent.kill()
        parent.wait(10)
