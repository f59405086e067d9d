"""Plans computed in the planning process equal the planner's own, across restarts."""

from __future__ import annotations

from pathlib import Path

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
