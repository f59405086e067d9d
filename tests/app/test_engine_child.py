"""The engine process ends with the app, even when the app is killed."""

from __future__ import annotations

import os
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


def test_the_engine_ends_when_the_app_is_killed() -> None:
    # POSIX: the parent's death signal and its number polled; Windows: its handle waited on
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                              env=env, cwd=ROOT, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        time.sleep(0.5)  # dies before or after the child is tied to it: both must work
        parent.kill()  # the app crashes (SIGKILL; TerminateProcess on Windows)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the engine outlived the app"
    finally:
        parent.kill()
        parent.wait(10)


@pytest.mark.skipif(not supported(), reason="the lifeline pipe is inherited on POSIX")
def test_the_engine_ends_when_the_apps_lifeline_closes_though_its_parent_lives(
        tmp_path: Path) -> None:
    # the wrapper runs the module in its own process, with the watch on the pipe
    (tmp_path / "idle_engine.py").write_text("import time\nprint('serving', flush=True)\n"
                                            "time.sleep(120)\n")
    read_end, write_end = os.pipe()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(tmp_path))),
           "LOADOUT_APP_PID": str(os.getpid())}
    child = subprocess.Popen(
        [sys.executable, "-m", "app.engine_child", "--lifeline", str(read_end), "-m",
         "idle_engine"], pass_fds=(read_end,), env=env, cwd=ROOT, stdout=subprocess.PIPE,
        text=True)
    try:
        os.close(read_end)
        assert child.stdout is not None and child.stdout.readline().strip() == "serving"
        time.sleep(0.5)
        assert child.poll() is None  # the app lives: the engine serves
        started = time.monotonic()
        os.close(write_end)  # the app ends (the kernel closes its end of the pipe)
        child.wait(10)
        assert time.monotonic() - started < 6
    finally:
        child.kill()
        child.wait(10)


def test_the_wrapper_goes_before_the_engine_on_every_os(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    import app.engine_child as ec

    monkeypatch.setattr(ec.sys, "platform", "win32")
    assert ec.wrapper_arguments() == ["-m", "app.engine_child"]  # no pipe: the pid is watched
    monkeypatch.setattr(ec.sys, "platform", "linux")
    if supported():
        args = ec.wrapper_arguments()
        assert args[:3] == ["-m", "app.engine_child", "--lifeline"] and args[3].isdigit()


def test_the_engine_writes_utf8_to_the_apps_pipes_whatever_the_locale(tmp_path: Path) -> None:
    # Windows writes pipes in its ANSI code page; PYTHONIOENCODING stands in for it here
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "cp1252"}
    code = "import sys; print('mod\u00e8le \u6f22 ok'); print('\u6f22', file=sys.stderr)"
    run = subprocess.run([sys.executable, "-m", "app.engine_child", "-c", code], env=env,
                         cwd=ROOT, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode("utf-8").strip() == "mod\u00e8le \u6f22 ok"
    assert "\u6f22" in run.stderr.decode("utf-8")


def test_a_frozen_windowed_app_starts_its_engine_with_the_console_executable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.engine_launch import python_executable

    windowed = tmp_path / ("Loadout.exe" if sys.platform == "win32" else "Loadout")
    console = tmp_path / ("loadout-cli.exe" if sys.platform == "win32" else "loadout-cli")
    windowed.write_bytes(b"")
    monkeypatch.setattr(sys, "executable", str(windowed))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert python_executable() == str(windowed)  # Linux's bundle: one console executable
    console.write_bytes(b"")
    assert python_executable() == str(console)  # its stdout is the pipe the app reads
    monkeypatch.delattr(sys, "frozen")
    assert python_executable() == str(windowed)  # not frozen: this interpreter


def test_a_frozen_app_measures_the_machine_with_the_console_executable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.calibration_job import command

    assert command("demo")[:4] == [sys.executable, "-m", "loadout", "calibrate"]
    windowed = tmp_path / ("Loadout.exe" if sys.platform == "win32" else "Loadout")
    console = tmp_path / ("loadout-cli.exe" if sys.platform == "win32" else "loadout-cli")
    windowed.write_bytes(b"")
    console.write_bytes(b"")
    monkeypatch.setattr(sys, "executable", str(windowed))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert command("demo", ["--seconds", "5"]) == [
        str(console), "calibrate", "demo", "--seconds", "60", "--json", "--seconds", "5"]
