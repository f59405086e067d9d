"""Plans computed in the planning process equal the planner's own, across restarts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from app import plan_process
from engine.gguf_file import load_profile
from planner.inventory import Inventory
from planner.plan import plan
from planner.request import Request


def test_child_process_plans_like_the_planner_and_survives_a_restart(
        rig: Inventory, demo_model: Path) -> None:
    profile = load_profile(demo_model)
    for request in (Request(context=4096, advise=False), Request(context=8192, advise=False)):
        assert plan_process.plan(rig, profile, request).to_json() == \
            plan(rig, profile, request).to_json()
    plan_process.stop()  # a new child does not hold the profile: it is sent again
    request = Request(context=2048, parallel=2, advise=False)
    assert plan_process.plan(rig, profile, request).to_json() == \
        plan(rig, profile, request).to_json()


def test_plans_in_the_calling_thread_when_asked(rig: Inventory, demo_model: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOADOUT_PLAN_IN_THREAD", "1")
    assert not plan_process.in_process_enabled()
    profile = load_profile(demo_model)
    request = Request(context=4096, advise=False)
    assert plan_process.plan(rig, profile, request).to_json() == \
        plan(rig, profile, request).to_json()


# A stand-in for the app: starts the planning process, prints its pid, waits.
APP = """
import time
import psutil
from app import plan_process

if __name__ == "__main__":
    plan_process.start()
    plan_process._pool().submit(int).result()
    (child,) = [c for c in psutil.Process().children() if "spawn_main" in " ".join(c.cmdline())]
    print(child.pid, flush=True)
    time.sleep(120)
"""


def test_the_planning_process_ends_when_the_app_is_killed(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "app_stand_in.py"
    script.write_text(APP)
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("LOADOUT_PLAN_IN_THREAD", None)
    app = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=env,
                           cwd=root, text=True)
    try:
        assert app.stdout is not None
        child = psutil.Process(int(app.stdout.readline()))
        os.kill(app.pid, signal.SIGKILL)  # a crash: nothing in the app runs again
        app.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if child.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the planning process outlived the app")
    finally:
        app.kill()
        app.wait(10)
