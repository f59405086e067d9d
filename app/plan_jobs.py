"""The plan jobs the Plan page runs: the plan itself, its advice, and the GPU reserve.

Pure functions over frozen values; the Plan page runs them in worker threads, which wait
for the planning process (:mod:`app.plan_process`).
"""

from __future__ import annotations

import dataclasses

from app import plan_process
from planner.inventory import Inventory
from planner.plan_types import Plan
from planner.profile import ModelProfile
from planner.request import Request


def run_plan(inventory: Inventory, profile: ModelProfile, request: Request) -> Plan:
    """Plan (runs in a worker thread, which waits for the planning process)."""
    return plan_process.plan(inventory, profile, request)


def with_gpu_reserve(inventory: Inventory, reserve_bytes: int) -> Inventory:
    """The inventory as the planner should see it when the user keeps ``reserve_bytes``
    free on every GPU: where that is more than the planner's own reserve, the difference
    is taken off the GPU's free memory (the larger of the two reserves wins)."""
    from planner.roles import reserve_for

    gpus = []
    for gpu in inventory.gpus:
        extra = max(0, reserve_bytes - reserve_for(gpu))
        gpus.append(dataclasses.replace(gpu, free_bytes=max(0, gpu.free_bytes - extra)))
    return dataclasses.replace(inventory, gpus=tuple(gpus))


def run_advice(inventory: Inventory, profile: ModelProfile, request: Request) -> Plan:
    """The same plan with its "what would make this faster" advice (several more plans)."""
    return run_plan(inventory, profile, dataclasses.replace(request, advise=True))
