"""A software device (lavapipe: Vulkan on the CPU) holds layers, but its speed is nominal."""

from __future__ import annotations

from dataclasses import replace

from planner.codes import Code
from planner.inventory import Backend, Gpu, Inventory, Vendor
from planner.plan import plan
from planner.request import Request
from tests.planner import shapes as S
from tests.planner.rigs import GIB, rig

LAVAPIPE = Gpu(index=0, name="llvmpipe (LLVM 15.0.6, 256 bits)", vendor=Vendor.OTHER,
               backend=Backend.VULKAN, total_bytes=8 * GIB, free_bytes=8 * GIB,
               bandwidth_gbps=200.0, software=True)


def test_layers_stay_on_a_software_device_but_its_speeds_are_flagged_nominal() -> None:
    model = S.build(S.QWEN25_3B, "Q4_K_M")
    soft = plan(rig(LAVAPIPE, ram_gib=16), model, Request())
    real = plan(rig(replace(LAVAPIPE, software=False), ram_gib=16), model, Request())
    # placement is unchanged: the device still takes the layers (the Vulkan tests rely on it)
    assert soft.engine.n_gpu_layers == real.engine.n_gpu_layers > 0
    notes = [dict(w.numbers) for w in soft.warnings if w.code == Code.SOFTWARE_DEVICE_SPEED]
    assert notes == [{"gpu": 0, "name": LAVAPIPE.name}]
    assert soft.speed_nominal and soft.to_json()["predicted"]["nominal"] is True
    # no bottleneck or what-if speeds are told from figures that are not predicted
    assert soft.bottleneck is None and soft.advice == ()
    assert not real.speed_nominal and real.to_json()["predicted"]["nominal"] is False
    assert real.bottleneck is not None and real.advice


def test_a_software_device_left_without_weights_raises_no_warning() -> None:
    p = plan(rig(LAVAPIPE, ram_gib=16), S.build(S.QWEN25_3B, "Q4_K_M"),
             Request(n_gpu_layers=0, advise=False))
    assert not p.speed_nominal
    assert Code.SOFTWARE_DEVICE_SPEED not in [w.code for w in p.warnings]


def test_rig_files_carry_the_flag_and_older_ones_are_read_from_the_note() -> None:
    doc = rig(LAVAPIPE).to_json()
    assert doc["gpus"][0]["software"] is True
    assert Inventory.from_json(doc).gpus[0].software
    del doc["gpus"][0]["software"]
    assert not Inventory.from_json(doc).gpus[0].software
    doc["gpus"][0]["notes"] = ["seen_by_engine_only", "software_device"]
    assert Inventory.from_json(doc).gpus[0].software
