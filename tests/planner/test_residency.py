"""Residency of several models: the budget left, and which models make room for a new one."""

from __future__ import annotations

from planner.residency import (
    Resident,
    idle_expired,
    inventory_left,
    make_room,
    remaining,
)
from tests.planner.rigs import GIB, apple, gpu, rig

BUDGET = {"host": 10 * GIB}


def _r(name: str, host_gib: float, last_used: float, *, pinned: bool = False,
       busy: bool = False, gpu_gib: float = 0.0) -> Resident:
    planned = [("host", int(host_gib * GIB))]
    if gpu_gib:
        planned.append(("gpu0", int(gpu_gib * GIB)))
    return Resident(name, tuple(planned), last_used, pinned=pinned, busy=busy)


def test_remaining_subtracts_every_residents_bytes_per_device() -> None:
    left = remaining({"host": 10 * GIB, "gpu0": 8 * GIB},
                     [_r("a", 3, 0, gpu_gib=2), _r("b", 4, 0)])
    assert left == {"host": 3 * GIB, "gpu0": 6 * GIB}


def test_a_model_that_fits_beside_the_residents_unloads_nothing() -> None:
    decision = make_room(BUDGET, [_r("a", 3, 1), _r("b", 3, 2)], {"host": 4 * GIB})
    assert decision.fits and decision.evict == ()


def test_unloads_the_least_recently_used_first_and_only_as_many_as_needed() -> None:
    residents = [_r("new", 3, 30), _r("old", 3, 10), _r("mid", 3, 20)]
    decision = make_room(BUDGET, residents, {"host": 3 * GIB})
    assert decision.fits
    assert decision.evict == ("old",)


def test_keeps_going_down_the_lru_order_until_it_fits() -> None:
    residents = [_r("new", 3, 30), _r("old", 3, 10), _r("mid", 3, 20)]
    decision = make_room(BUDGET, residents, {"host": 6 * GIB})
    assert decision.evict == ("old", "mid")


def test_never_unloads_a_pinned_model() -> None:
    residents = [_r("kept", 3, 1, pinned=True), _r("b", 3, 2), _r("c", 3, 3)]
    decision = make_room(BUDGET, residents, {"host": 4 * GIB})
    assert decision.fits and "kept" not in decision.evict
    assert decision.evict == ("b",)


def test_busy_models_go_only_when_idle_ones_are_not_enough_and_are_waited_for() -> None:
    residents = [_r("busy_old", 3, 1, busy=True), _r("idle_new", 3, 9)]
    first = make_room(BUDGET, residents, {"host": 6 * GIB})
    assert first.evict == ("idle_new",) and first.wait_for == ()
    second = make_room(BUDGET, residents, {"host": 9 * GIB})
    assert second.evict == ("idle_new", "busy_old") and second.wait_for == ("busy_old",)


def test_a_model_too_big_even_alone_is_refused_with_need_and_free() -> None:
    residents = [_r("kept", 4, 1, pinned=True), _r("b", 3, 2)]
    decision = make_room(BUDGET, residents, {"host": 7 * GIB})
    assert not decision.fits and decision.evict == ()
    (short,) = decision.shortfall
    assert (short.device, short.need_bytes, short.free_bytes) == ("host", 7 * GIB, 6 * GIB)


def test_a_resident_with_nothing_on_the_short_device_is_kept() -> None:
    budget = {"host": 10 * GIB, "gpu0": 8 * GIB}
    residents = [_r("ram_only", 4, 1), _r("on_gpu", 1, 5, gpu_gib=6)]
    decision = make_room(budget, residents, {"gpu0": 4 * GIB})
    assert decision.evict == ("on_gpu",)


def test_max_models_caps_the_count_even_when_memory_is_free() -> None:
    residents = [_r("a", 1, 1), _r("b", 1, 2)]
    decision = make_room(BUDGET, residents, {"host": GIB}, max_models=2)
    assert decision.fits and decision.over_count and decision.evict == ("a",)


def test_max_models_cannot_be_met_when_every_resident_is_pinned() -> None:
    residents = [_r("a", 1, 1, pinned=True)]
    assert not make_room(BUDGET, residents, {"host": GIB}, max_models=1).fits


def test_idle_expired_skips_pinned_and_busy_models() -> None:
    residents = [_r("idle", 1, 0), _r("pinned", 1, 0, pinned=True),
                 _r("busy", 1, 0, busy=True), _r("recent", 1, 95)]
    assert idle_expired(residents, now=100, idle_timeout_s=30) == ("idle",)


def test_inventory_left_shrinks_ram_and_each_gpu_by_the_residents_bytes() -> None:
    inv = rig(gpu("A", 24, 900), ram_gib=64)
    left = inventory_left(inv, [_r("a", 10, 0, gpu_gib=8)])
    assert left.host.ram_available_bytes == inv.host.ram_available_bytes - 10 * GIB
    assert left.gpus[0].free_bytes == inv.gpus[0].free_bytes - 8 * GIB
    assert left.gpus[0].total_bytes == inv.gpus[0].total_bytes


def test_on_unified_memory_what_residents_hold_anywhere_is_gone_from_ram_and_gpu() -> None:
    inv = apple(ram_gib=64, bandwidth=400)
    left = inventory_left(inv, [_r("a", 2, 0, gpu_gib=10)])
    assert left.host.ram_available_bytes == inv.host.ram_available_bytes - 12 * GIB
    assert left.gpus[0].free_bytes == inv.gpus[0].free_bytes - 12 * GIB
