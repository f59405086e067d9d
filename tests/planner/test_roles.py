"""GPU roles before and after pricing: reserves, the 8 GB rule, user choices."""

from __future__ import annotations

from planner.codes import Code
from planner.request import Request, Role
from planner.roles import GIB, MIN_RESERVE, candidate_roles, reserve_for
from tests.planner.rigs import RTX_3060, RTX_4060, RTX_4090, gpu, rig


def test_a_gpu_driving_a_display_keeps_a_larger_reserve() -> None:
    headless = gpu("RTX 3090", 24, 936)
    desktop = gpu("RTX 3090", 24, 936, display=True)
    assert reserve_for(headless) >= MIN_RESERVE
    assert reserve_for(desktop) >= reserve_for(headless) + GIB


def test_the_main_gpu_is_the_one_with_most_memory_times_bandwidth() -> None:
    roles = candidate_roles(rig(RTX_3060, RTX_4090), Request())
    main = next(r for r in roles if r.role == Role.MAIN)
    assert main.gpu == 1 and main.reason == Code.ROLE_MAIN_LARGEST


def test_a_single_small_gpu_is_still_the_main() -> None:
    roles = candidate_roles(rig(RTX_4060), Request())
    assert [r.role for r in roles] == [Role.MAIN]


def test_a_small_second_gpu_is_off_but_a_12gb_one_is_a_helper_candidate() -> None:
    roles = {r.gpu: r for r in candidate_roles(rig(RTX_4090, RTX_4060, RTX_3060), Request())}
    assert (roles[1].role, roles[1].reason) == (Role.OFF, Code.ROLE_OFF_SMALL)
    assert roles[2].role == Role.HELPER


def test_gpu_order_makes_the_first_listed_gpu_the_main() -> None:
    roles = candidate_roles(rig(RTX_4090, RTX_3060), Request(gpu_order=(1, 0)))
    main = next(r for r in roles if r.role == Role.MAIN)
    assert main.gpu == 1 and main.reason == Code.ROLE_MAIN_USER


def test_user_roles_are_taken_as_given() -> None:
    roles = {r.gpu: r for r in candidate_roles(
        rig(RTX_4090, RTX_4060), Request(roles=(Role.MAIN, Role.HELPER)))}
    assert (roles[1].role, roles[1].reason) == (Role.HELPER, Code.ROLE_HELPER_USER)


def test_budget_is_free_memory_minus_the_reserve() -> None:
    g = gpu("RTX 4090", 24, 1008)
    (role,) = candidate_roles(rig(g), Request())
    assert role.budget_bytes == g.free_bytes - reserve_for(g)
