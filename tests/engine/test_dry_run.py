"""llama.cpp's second opinion on the CPU engine: its memory breakdown read through the
hand-made C++ call, the no_alloc dry run, and a plan corrected when the memory model is
made wrong on purpose. (The same on a Vulkan device: tests/gpu/test_gpu_dry_run.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine import dry_run as dr
from engine.native import memory_breakdown as mb

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not mb.supported(),
                                 reason="llama.cpp's breakdown is read on x86-64 Linux only")]
MIB = 1 << 20
UNDER = dr.UNDER_PCT
_LINE = re.compile(r"(\S+)\s+(model|KV|RS|compute) buffer size\s*=\s*([\d.]+) MiB")


def _plan(path: Path, context: int = 4096) -> tuple[object, object, object]:
    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from planner.plan import plan
    from planner.request import Request

    inventory = detect(measure=False)
    request = Request(context=context, advise=False)
    return inventory, request, plan(inventory, load_profile(path), request)


def test_breakdown_of_a_real_load_is_what_llama_cpp_logs(demo_model: Path) -> None:
    from engine.launch import LaunchSpec
    from engine.native.context import NativeContext
    from engine.native.model import NativeModel

    spec = LaunchSpec(str(demo_model), n_ctx=2048, warm_up=False)
    model = NativeModel(spec)
    ctx = NativeContext(model, spec)
    try:
        buffers = mb.memory_breakdown(ctx.ptr)
    finally:
        ctx.free()
        model.free()
    assert buffers is not None
    logged: dict[str, float] = {}
    for line in model.load_log + ctx.load_log:
        if m := _LINE.search(line):
            logged[m.group(1)] = logged.get(m.group(1), 0.0) + float(m.group(3)) * MIB
    by_type = {b.buffer_type: b.total for b in buffers}
    assert set(by_type) == set(logged)
    for name, nbytes in logged.items():
        assert abs(by_type[name] - nbytes) <= 0.01 * MIB * 3, name
    mapped = next(b for b in buffers if b.buffer_type == "CPU_Mapped")
    assert mapped.model > 50 * MIB and mapped.context == 0


def test_dry_run_allocates_nothing_and_confirms_the_plan(demo_model: Path) -> None:
    inventory, request, plan = _plan(demo_model)
    from engine.launch import LaunchSpec

    spec = LaunchSpec.from_plan_engine(str(demo_model), plan.engine)  # type: ignore[attr-defined]
    dry = dr.dry_run(spec)
    assert dry is not None and set(dry.devices) == {"CPU"}
    weights, kv, compute = dry.devices["CPU"]
    assert weights > 50 * MIB and kv > 0 and compute > 0
    checked = dr.confirm_for(demo_model, inventory, request, plan)
    assert checked is plan
    check = dr.check_of(plan)
    assert check is not None and check.status == "confirmed"
    (host,) = check.devices
    assert host.device == "host" and host.agrees
    assert abs(host.dry_run - dry.total("CPU")) == 0


def test_a_memory_model_made_wrong_is_caught_and_the_plan_corrected(
        demo_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import planner.memory

    real = planner.memory.kv_layer_bytes
    monkeypatch.setattr(planner.memory, "kv_layer_bytes",
                        lambda *a, **k: real(*a, **k) // 4)  # KV under-predicted 4x
    inventory, request, plan = _plan(demo_model, context=8192)
    fixed, check = dr.confirm(str(demo_model), inventory, request, plan)  # type: ignore[arg-type]
    assert check is not None and check.status == "corrected"
    (before,) = check.before
    assert not before.agrees and before.error_pct < -UNDER
    assert fixed is not plan
    doc = check.to_json()
    assert doc["status"] == "corrected" and doc["before"][0]["error_pct"] < -UNDER


def test_the_dry_run_can_be_turned_off_and_skips_what_is_not_a_file(
        demo_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    inventory, request, plan = _plan(demo_model)
    monkeypatch.setenv(dr.DRY_RUN_ENV, "0")
    assert dr.confirm_for(demo_model, inventory, request, plan) is plan
    assert dr.check_of(plan) is None
    monkeypatch.setenv(dr.DRY_RUN_ENV, "1")
    assert dr.confirm_for(tmp_path / "absent.gguf", inventory, request, plan) is plan
    assert dr.check_of(plan) is None


def test_plan_launch_carries_the_dry_run_verdict(demo_model: Path) -> None:
    from engine.planned_launch import plan_launch

    launch = plan_launch(str(demo_model), context=2048)
    assert launch.plan is not None
    assert launch.plan["dry_run"]["status"] == "confirmed"
    assert launch.plan["dry_run"]["devices"][0]["device"] == "host"


def test_weights_read_from_disk_are_no_host_shortfall(sparse_70b: Path) -> None:
    """A 70B file larger than the RAM: llama.cpp's dry run counts the whole mapped file as
    CPU memory, the plan holds part of it in RAM and reads the rest from disk. Compared
    like with like, the plan is confirmed (not "corrected" into a reserve past the RAM)."""
    from dataclasses import replace

    from engine.gguf_file import load_profile
    from engine.hardware import detect
    from planner.plan import plan
    from planner.request import Request

    inventory = detect(measure=False)
    inventory = replace(inventory, host=replace(  # less RAM than the file on any machine
        inventory.host, ram_available_bytes=min(inventory.host.ram_available_bytes,
                                                24 * 1000**3)))
    request = Request(advise=False)
    first = plan(inventory, load_profile(sparse_70b), request)
    disk = next(d for d in first.devices if d.kind == "disk")
    host = next(d for d in first.devices if d.id == "host")
    assert disk.weights_bytes > 10 * 1000**3 and host.weights_bytes > 0
    fixed, check = dr.confirm(str(sparse_70b), inventory, request, first)
    assert check is not None, "llama.cpp's dry run of the sparse file was made"
    (row,) = check.devices
    assert row.device == "host" and row.agrees, row
    # the mapped file on both sides: the plan's RAM and disk weights, KV and buffers
    assert row.predicted == (host.weights_bytes + disk.weights_bytes + host.kv_bytes
                             + host.compute_bytes + host.other_bytes)
    assert check.status == "confirmed" and fixed is first
