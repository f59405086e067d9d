"""Windows: engines live in a Job Object that ends them when the app ends."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import time

import psutil
import pytest

from app import engine_job


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the x64 layout")
def test_the_job_limits_have_windows_x64_layout() -> None:
    # sizeof(JOBOBJECT_EXTENDED_LIMIT_INFORMATION) on x64 Windows; SetInformationJobObject
    # refuses any other size
    assert ctypes.sizeof(engine_job.BasicLimits) == 64
    assert ctypes.sizeof(engine_job.ExtendedLimits) == 144
    assert engine_job.ExtendedLimits.IoInfo.offset == 64
    limits = engine_job.kill_on_close_limits()
    assert limits.BasicLimitInformation.LimitFlags == 0x2000


@pytest.mark.skipif(sys.platform == "win32", reason="off Windows the job does nothing")
def test_off_windows_nothing_is_contained() -> None:
    assert engine_job.contain(1) is False
    engine_job.close_job()  # and closing is harmless


@pytest.mark.skipif(sys.platform != "win32", reason="Job Objects are Windows's")
def test_an_engine_in_the_job_ends_when_the_job_closes() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        assert engine_job.contain(child.pid)
        time.sleep(0.5)
        assert child.poll() is None
        engine_job.close_job()  # what Windows does when the app's process ends
        child.wait(10)
        assert not psutil.pid_exists(child.pid) or child.returncode is not None
    finally:
        child.kill()
        child.wait(10)
