"""Whatever host reserve a plan is asked for (none, all the RAM, twice the RAM), its parts
are real: no device holds negative bytes, the weights add up to the model, and no more of
it is read from disk than the file holds. A reserve the RAM cannot give is a plain "does
not fit" with one coherent set of reasons."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.codes import Code
from planner.plan import Plan, plan
from planner.request import Request
from tests.planner import shapes as S
from tests.planner.rigs import RTX_4060, rig

GIB = 1 << 30
MODEL = S.build(S.LLAMA3_70B, "Q4_K_M")      # ~40 GB of weights
CPU_RIG = rig(ram_gib=25.5)                    # 23.5 GiB available, as on a small desktop
GPU_RIG = rig(RTX_4060, ram_gib=25.5)
RAM = CPU_RIG.host.ram_available_bytes


def _check(p: Plan) -> None:
    for d in p.devices:
        for part in (d.weights_bytes, d.kv_bytes, d.compute_bytes, d.other_bytes,
                     d.reserve_bytes):
            assert part >= 0, (d.id, d)
        assert d.reserve_bytes <= d.capacity_bytes, d.id
    assert sum(d.weights_bytes for d in p.devices) == MODEL.weights_bytes
    disk = sum(d.weights_bytes for d in p.devices if d.kind == "disk")
    assert disk <= MODEL.file_bytes
    # one coherent set: "the KV cache does not fit" and "too large to run from disk"
    # are never said of the same plan
    assert not (Code.CONTEXT_DOES_NOT_FIT in p.reasons
                and Code.MODEL_LARGER_THAN_MEMORY in p.reasons), p.reasons
    if p.fits:
        assert Code.DOES_NOT_FIT not in p.reasons


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reserve=st.integers(min_value=0, max_value=2 * RAM), with_gpu=st.booleans())
def test_every_plan_is_whole_whatever_the_reserve(reserve: int, with_gpu: bool) -> None:
    inv = GPU_RIG if with_gpu else CPU_RIG
    _check(plan(inv, MODEL, Request(host_reserve_bytes=reserve, advise=False)))


def test_a_reserve_beyond_the_ram_does_not_fit_and_says_why_once() -> None:
    p = plan(CPU_RIG, MODEL, Request(host_reserve_bytes=RAM + 2 * GIB, advise=False))
    _check(p)
    host = next(d for d in p.devices if d.id == "host")
    disk = next(d for d in p.devices if d.kind == "disk")
    assert not p.fits
    assert p.reasons[0] == Code.DOES_NOT_FIT and Code.CONTEXT_DOES_NOT_FIT in p.reasons
    assert host.weights_bytes == 0 and host.reserve_bytes == host.capacity_bytes
    assert disk.weights_bytes == MODEL.weights_bytes <= disk.capacity_bytes


def test_the_edges_zero_all_and_twice_the_ram() -> None:
    for reserve in (0, RAM - 1, RAM, RAM + 1, 2 * RAM):
        for inv in (CPU_RIG, GPU_RIG):
            _check(plan(inv, MODEL, Request(host_reserve_bytes=reserve, advise=False)))


def test_a_reserve_that_leaves_no_room_is_the_advice_and_nothing_is_said_to_be_fine() -> None:
    p = plan(CPU_RIG, MODEL, Request(host_reserve_bytes=RAM + 2 * GIB))
    codes = [a.code for a in p.advice]
    assert Code.ADVICE_SMALLER_HOST_RESERVE in codes
    assert Code.ADVICE_NO_CHANGE_NEEDED not in codes  # never said of what cannot run
    advice = next(a for a in p.advice if a.code == Code.ADVICE_SMALLER_HOST_RESERVE)
    assert dict(advice.numbers) == {"reserve_bytes": RAM + 2 * GIB, "ram_bytes": RAM}
    assert advice.helps  # the usual reserve holds the KV cache (the app shows helpful ones)
    # the usual reserve is no such advice
    usual = plan(CPU_RIG, MODEL, Request())
    assert Code.ADVICE_SMALLER_HOST_RESERVE not in [a.code for a in usual.advice]
