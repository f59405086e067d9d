"""One core's measured Q4_K rates: carried by the Host, priced by the speed model."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner.errors import InventoryError
from planner.inventory import Inventory
from planner.plan import plan
from planner.request import Request
from planner.speed import CONSTANTS, core_gbps, core_gflops, core_scale
from tests.planner import shapes as S
from tests.planner.rigs import rig


def _measured(inv: Inventory, gflops: float, gbps: float) -> Inventory:
    return replace(inv, host=replace(inv.host, core_prefill_gflops=gflops,
                                     core_decode_gbps=gbps,
                                     measured=("core_prefill_gflops", "core_decode_gbps")))


def test_a_host_with_and_without_core_rates_round_trips_through_a_rig_file() -> None:
    base = rig(ram_gib=32, ram_bw=60.0, cores=4)
    with_rates = _measured(base, 131.5, 16.25)
    for inv in (base, with_rates):
        doc = json.loads(json.dumps(inv.to_json()))
        assert Inventory.from_json(doc) == inv
    assert with_rates.to_json()["host"]["core_prefill_gflops"] == 131.5
    # a rig written before the figures existed (or by hand) plans with the constants
    doc = base.to_json()
    del doc["host"]["core_prefill_gflops"], doc["host"]["core_decode_gbps"]
    old = Inventory.from_json(doc)
    assert old.host.core_prefill_gflops == 0.0 and old.host.core_decode_gbps == 0.0
    assert core_gflops(old) == CONSTANTS.cpu_core_gflops * core_scale(old)
    assert core_gbps(old) == CONSTANTS.cpu_core_gbps * core_scale(old)


@pytest.mark.parametrize("bad", [-1.0, "fast", float("nan"), float("inf"), None])
def test_a_rig_file_with_a_bad_core_rate_is_refused_with_its_name(bad: object) -> None:
    doc = _measured(rig(), 100.0, 10.0).to_json()
    doc["host"]["core_decode_gbps"] = bad
    with pytest.raises(InventoryError, match="core_decode_gbps"):
        Inventory.from_json(doc)


def test_measured_core_rates_set_cpu_prefill_and_decode() -> None:
    # a fast-RAM host with 2 cores: the cores, not the RAM, limit decode
    base = rig(ram_gib=32, ram_bw=400.0, cores=2)
    model = S.build(S.QWEN25_3B, "Q4_K_M")
    request = Request(advise=False, prompt_tokens=512)
    fast = plan(_measured(base, 200.0, 20.0), model, request).predicted
    slow = plan(_measured(base, 30.0, 3.0), model, request).predicted
    constants = plan(base, model, request).predicted
    assert fast.prefill_tps > 3 * slow.prefill_tps
    assert fast.decode_tps > 2 * slow.decode_tps
    assert fast.ttft_s < slow.ttft_s
    # the constants at the reference clock sit between the two
    assert slow.prefill_tps < constants.prefill_tps < fast.prefill_tps
    assert slow.decode_tps < constants.decode_tps < fast.decode_tps
    # a measured figure replaces the clock's guess: the clock no longer moves it
    clocked = replace(base, host=replace(base.host, clock_ghz=1.75))
    assert plan(_measured(clocked, 200.0, 20.0), model, request).predicted.prefill_tps == \
        pytest.approx(fast.prefill_tps)


def test_measured_core_rates_do_not_lift_decode_above_the_ram() -> None:
    slow_ram = rig(ram_gib=32, ram_bw=20.0, cores=16)
    model = S.build(S.QWEN25_3B, "Q4_K_M")
    request = Request(advise=False)
    a = plan(_measured(slow_ram, 100.0, 20.0), model, request).predicted.decode_tps
    b = plan(_measured(slow_ram, 100.0, 40.0), model, request).predicted.decode_tps
    assert a == pytest.approx(b)


def test_runs_priced_with_the_constants_do_not_correct_a_plan_priced_with_measured_cores(
        ) -> None:
    from planner.machine_fit import model_key, plan_regime
    from planner.request import RunSample

    base = rig(ram_gib=32, ram_bw=400.0, cores=2)
    measured = _measured(base, 130.0, 15.0)
    model = S.build(S.QWEN25_3B, "Q4_K_M")
    old_regime = plan_regime(base, model, plan(base, model, Request(advise=False)))
    new_regime = plan_regime(measured, model, plan(measured, model, Request(advise=False)))
    assert old_regime != new_regime
    # three runs that the constants predicted 3x too slow
    old_runs = tuple(RunSample(old_regime, model_key(model), 3.0, 3.0) for _ in range(3))
    on_constants = plan(base, model, Request(advise=False, machine_runs=old_runs))
    assert on_constants.calibration.runs == 3
    on_measured = plan(measured, model, Request(advise=False, machine_runs=old_runs))
    assert on_measured.calibration.runs == 0
    assert on_measured.predicted == plan(measured, model, Request(advise=False)).predicted
    new_runs = tuple(RunSample(new_regime, model_key(model), 0.9, 1.1) for _ in range(3))
    again = plan(measured, model, Request(advise=False, machine_runs=old_runs + new_runs))
    assert again.calibration.runs == 3 and again.calibration.prefill_factor == \
        pytest.approx(1.1)
