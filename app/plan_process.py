"""Plan in a separate process, so the pure-Python planner never holds the UI's GIL.

The planner is pure and its inputs and outputs are frozen dataclasses, so a plan can be
computed in a child process and sent back pickled. A worker thread waits for the child
(waiting releases the GIL); the UI thread keeps painting. One child serves every window;
it is started ahead of time by :func:`start` and ended at exit.

Frozen bundles (``sys.frozen``) and ``LOADOUT_PLAN_IN_THREAD=1`` plan in the calling
thread instead: spawning the bundle's executable again would start a second app.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from planner.inventory import Inventory
from planner.profile import ModelProfile
from planner.request import Request

if TYPE_CHECKING:  # planner.plan is imported where plans are made (the child, _plan)
    from planner.plan_types import Plan

log = logging.getLogger(__name__)

_lock = threading.Lock()
_executor: ProcessPoolExecutor | None = None
_sent: tuple[int, ModelProfile] | None = None  # the key and profile the child holds
_keys = 0


def in_process_enabled() -> bool:
    """Whether plans run in a child process here."""
    return not getattr(sys, "frozen", False) and os.environ.get(
        "LOADOUT_PLAN_IN_THREAD", "") != "1"


def _child_init() -> None:
    import planner.plan  # noqa: F401  (imported once, before the first request)
    from engine.parent_watch import watch_parent

    # The pool's queues keep this process waiting for work after the app is gone (it holds
    # both ends of them): end it with the app, however the app ends.
    watch_parent(None, os.getppid())


def _plan(inventory: Inventory, profile: ModelProfile, request: Request) -> Plan:
    from planner.plan import plan

    return plan(inventory, profile, request)


# In the child: the profiles it was sent, by key (a profile of 1,000 tensors takes
# ~10 ms to pickle, so each is sent once, not with every request).
_child_profiles: dict[int, ModelProfile] = {}


class _ProfileMissing(LookupError):
    """The child does not hold the profile (it was restarted): send it again."""


def _plan_by_key(key: int, profile: ModelProfile | None, inventory: Inventory,
                 request: Request) -> Plan:
    if profile is not None:
        _child_profiles.clear()  # one model at a time
        _child_profiles[key] = profile
    held = _child_profiles.get(key)
    if held is None:
        raise _ProfileMissing(key)
    return _plan(inventory, held, request)


def _pool() -> ProcessPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            context = multiprocessing.get_context("spawn")
            _executor = ProcessPoolExecutor(max_workers=1, mp_context=context,
                                            initializer=_child_init)
            atexit.register(stop)
        return _executor


def start() -> None:
    """Start the planning process now (it takes a moment), if plans run in one."""
    if in_process_enabled():
        _pool().submit(int)  # spawns the child and runs its initializer


def stop() -> None:
    """End the planning process (waits for a plan in progress)."""
    global _executor, _sent
    with _lock:
        executor, _executor, _sent = _executor, None, None
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)


def plan(inventory: Inventory, profile: ModelProfile, request: Request) -> Plan:
    """``planner.plan.plan`` in the planning process (or here, see the module doc)."""
    if not in_process_enabled():
        return _plan(inventory, profile, request)
    global _sent, _keys
    try:
        with _lock:
            if _sent is not None and _sent[1] is profile:
                key, payload = _sent[0], None
            else:
                _keys += 1
                key, payload = _keys, profile
                _sent = (key, profile)
        pool = _pool()
        with _lock:  # submitted in the order the keys were decided
            future: Future[Plan] = pool.submit(_plan_by_key, key, payload, inventory, request)
        try:
            return future.result()
        except _ProfileMissing:
            return pool.submit(_plan_by_key, key, profile, inventory, request).result()
    except BrokenProcessPool:
        log.warning("the planning process died; planning in this process instead")
        stop()
        return _plan(inventory, profile, request)
