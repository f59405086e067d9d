"""The Plan page: real plans from the planner, drawn as the plan says, re-planned on edits."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from app.plan_view import expert_bytes, memory_bars
from engine.gguf_file import load_profile
from planner.codes import Code
from planner.inventory import Inventory
from planner.plan import plan
from planner.plan_types import DeviceUse
from planner.profile import TensorKind
from planner.request import Request, Role


def _open(window: Any, qtbot: Any, model: Path) -> Any:
    with qtbot.waitSignal(window.plan.sig_plan_shown, timeout=20000):
        window.select_model(model)
    return window.plan


def test_memory_map_shows_each_device_of_the_plan(make_window: Any, rig: Inventory,
                                                  demo_model: Path, qtbot: Any) -> None:
    window = make_window(rig)
    page = _open(window, qtbot, demo_model)
    assert window.current_page() == "plan"
    doc = page.last_plan.to_json()
    bars = page.memory_map.bars()
    assert [b.device_id for b in bars] == [d["id"] for d in doc["devices"]]
    for bar, device in zip(bars, doc["devices"], strict=True):
        assert bar.capacity_bytes == device["capacity_bytes"]
        assert bar.bytes_of("weights") + bar.bytes_of("experts") == \
            device["weights_bytes"] + device["other_bytes"]
        assert bar.bytes_of("kv") == device["kv_bytes"]
        assert bar.bytes_of("compute") == device["compute_bytes"]
        assert bar.bytes_of("reserve") == device["reserve_bytes"]
        assert bar.bytes_of("free") == max(0, device["free_bytes"])
    gpu = bars[0]
    assert gpu.name == "GeForce RTX 4090" and gpu.role == "main"
    assert page.speed_values[0].text() not in ("", "—")
    # hovering the KV segment explains it
    rects = page.memory_map.segment_rects(0)
    kv_rect = next(r for r, s in rects if s.kind == "kv")
    hit = page.memory_map.segment_at(kv_rect.center().toPoint())
    assert hit is not None and hit[1].kind == "kv"
    assert "KV cache" in page.memory_map.tooltip_for(*hit)


def _device(id_: str, kind: str, weights: int, capacity: int, kv: int = 0, compute: int = 0,
            reserve: int = 0, layers: tuple[tuple[int, int], ...] = (),
            experts: tuple[tuple[int, int], ...] = ()) -> DeviceUse:
    return DeviceUse(id=id_, kind=kind, name=id_, weights_bytes=weights, kv_bytes=kv,
                     compute_bytes=compute, other_bytes=0, reserve_bytes=reserve,
                     capacity_bytes=capacity, layers=layers, expert_layers=experts)


def test_known_plan_splits_experts_from_other_weights(moe_gguf: Path, rig: Inventory) -> None:
    profile = load_profile(moe_gguf)
    per_layer = [layer.bytes_of(TensorKind.EXPERTS) for layer in profile.layers]
    planned = plan(rig, profile, Request())  # a real plan, with known devices put in
    main = dataclasses.replace(planned.roles[0], gpu=0, role=Role.MAIN,
                               reason=Code.ROLE_MAIN_LARGEST)
    known = dataclasses.replace(planned, roles=(main,), devices=(
        _device("gpu0", "gpu", 10_000_000, 20_000_000, kv=2_000_000, compute=1_000_000,
                reserve=500_000, layers=((0, 2),), experts=((1, 2),)),
        _device("host", "host", per_layer[0] + 123, 1_000_000_000, experts=((0, 1),))))
    gpu, host = memory_bars(known, {0: "Card"}, profile)
    assert gpu.name == "Card" and gpu.role == "main"
    assert [s.kind for s in gpu.segments] == ["weights", "experts", "kv", "compute",
                                              "reserve", "free"]
    assert gpu.bytes_of("experts") == per_layer[1] > 0
    assert gpu.bytes_of("weights") == 10_000_000 - per_layer[1]
    assert gpu.bytes_of("free") == 20_000_000 - 13_500_000
    assert host.bytes_of("experts") == per_layer[0] and host.bytes_of("weights") == 123
    assert expert_bytes(profile, ((0, 2),)) == sum(per_layer[:2])
    over = memory_bars(dataclasses.replace(planned, devices=(_device("gpu0", "gpu", 30, 20),)))
    assert over[0].bytes_of("over") == 10


@pytest.fixture
def big_model(sparse_70b: Path) -> Path:
    return sparse_70b


def test_switching_a_gpu_off_replans_without_it(make_window: Any, two_gpu_rig: Inventory,
                                                big_model: Path, qtbot: Any) -> None:
    window = make_window(two_gpu_rig)
    page = _open(window, qtbot, big_model)
    before = {b.device_id: b for b in page.memory_map.bars()}
    assert before["gpu1"].bytes_of("weights") > 0  # 40 GB of weights need both cards
    count = page.plans_requested
    with qtbot.waitSignal(page.sig_plan_shown, timeout=20000):
        page.roles.buttons[(1, "off")].click()
    assert page.plans_requested == count + 1
    assert page.last_request.roles == (Role.MAIN, Role.OFF)
    after = {b.device_id: b for b in page.memory_map.bars()}
    assert after["gpu1"].bytes_of("weights") == 0 and after["gpu1"].role == "off"
    assert after["host"].bytes_of("weights") > before["host"].bytes_of("weights")
    expected = plan(two_gpu_rig, load_profile(big_model), page.last_request)
    assert page.last_plan.to_json()["devices"] == expected.to_json()["devices"]
    assert page.roles.buttons[(1, "off")].isChecked()
    assert page.roles.name_labels[1].toolTip() == "You switched it off."


def test_controls_build_the_request_and_the_newest_plan_wins(
        make_window: Any, rig: Inventory, demo_model: Path, qtbot: Any) -> None:
    window = make_window(rig)
    page = _open(window, qtbot, demo_model)
    page.parallel.setValue(2)
    page.kv.setCurrentIndex(page.kv.findData("q8_0"))
    page.task.setCurrentIndex(page.task.findData("creative"))
    for step in range(1, 4):  # 2K, 4K, 8K: dragged through, only the last one counts
        page.context.setValue(step)
    assert page.context_value.text() == "8K"
    request = page.last_request
    assert (request.context, request.parallel, request.kv_type, request.task.value) == \
        (8192, 2, "q8_0", "creative")
    qtbot.waitUntil(lambda: not window.runner.busy("plan"), timeout=20000)
    doc = page.last_plan.to_json()
    assert (doc["context"], doc["parallel"], doc["kv_type"]) == (8192, 2, "q8_0")
    assert "8K per sequence × 2" in page.fit_label.text()


def test_advice_follows_the_plan(make_window: Any, rig: Inventory, demo_model: Path,
                                 qtbot: Any) -> None:
    window = make_window(rig)
    with qtbot.waitSignal(window.plan.sig_advice_shown, timeout=30000):
        window.select_model(demo_model)
    page = window.plan
    assert not page.advice_pending
    assert "Bottleneck" in page.advice_label.text()
    full = page.last_advice.to_json()
    assert full["advice"], "the advice lane plans with advise=True"
    assert Request().advise is True


def test_a_larger_gpu_reserve_in_settings_leaves_less_room(
        make_window: Any, rig: Inventory, demo_model: Path, qtbot: Any) -> None:
    window = make_window(rig)
    page = _open(window, qtbot, demo_model)
    before = page.memory_map.bars()[0].capacity_bytes
    with qtbot.waitSignal(page.sig_plan_shown, timeout=20000):
        window.settings_page.gpu_reserve.setValue(8192)
    after = page.memory_map.bars()[0].capacity_bytes
    from planner.roles import reserve_for

    assert before - after == 8 * 2**30 - reserve_for(rig.gpus[0])


def test_a_rig_file_that_is_not_valid_reaches_the_error_handler(
        make_window: Any, rig: Inventory, tmp_path: Path, monkeypatch: Any) -> None:
    from PySide6.QtWidgets import QFileDialog

    window = make_window(rig)
    bad = tmp_path / "rig.json"
    bad.write_text('{"schema": "loadout.inventory/1", "gpus": []}')  # no host
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *a, **k: (str(bad), "")))
    window.plan.open_whatif()
    window.plan.whatif_dialog.open_button.click()
    assert "The rig file is not valid" in window.errors.last_message
    assert "host" in window.errors.last_message
    assert window.plan.whatif_dialog.rig == rig


def test_moving_a_gpu_first_makes_it_the_main(make_window: Any, two_gpu_rig: Inventory,
                                               big_model: Path, qtbot: Any) -> None:
    window = make_window(two_gpu_rig)
    page = _open(window, qtbot, big_model)
    assert page.memory_map.bars()[0].role == "main"
    with qtbot.waitSignal(page.sig_plan_shown, timeout=20000):
        page.roles.move_gpu(1, -1)
    assert page.last_request.gpu_order == (1, 0)
    roles = {r["gpu"]: r["role"] for r in page.last_plan.to_json()["roles"]}
    assert roles[1] == "main"


def test_a_model_larger_than_memory_shows_the_disk_and_says_so(
        make_window: Any, big_model: Path, qtbot: Any) -> None:
    from tests.app.conftest import rig_doc

    doc = rig_doc([("GeForce RTX 4060", 8, 272.0)])
    doc["host"]["ram_total_bytes"] = 16 * 2**30
    doc["host"]["ram_available_bytes"] = 12 * 2**30
    window = make_window(Inventory.from_json(doc))
    page = _open(window, qtbot, big_model)
    plan_doc = page.last_plan.to_json()
    assert "fits_with_disk_streaming" in plan_doc["reasons"]
    disk = next(b for b in page.memory_map.bars() if b.kind == "disk")
    planned = next(d for d in plan_doc["devices"] if d["kind"] == "disk")
    assert disk.bytes_of("weights") == planned["weights_bytes"] > 0
    assert page.fit_label.text().startswith("Runs only by reading from disk")
    text = page.messages_label.text()
    sentence = "What RAM cannot hold stays on disk"
    assert text.count(sentence) == 1  # a code named as warning and reason shows once
    assert "⚠" in text


def test_a_machine_without_gpus_plans_on_the_cpu(make_window: Any, demo_model: Path,
                                                 qtbot: Any) -> None:
    from tests.app.conftest import rig_doc

    window = make_window(Inventory.from_json(rig_doc([])))
    page = _open(window, qtbot, demo_model)
    assert page.memory_map.bars()[0].kind == "host"
    assert page.roles.empty.isVisible() and not page.roles.buttons
    home = window.home
    assert home.no_gpu.isVisibleTo(home) and not home.gpu_table.isVisibleTo(home)
    assert page.speed_values[0].text() not in ("", "—")


def test_a_software_device_shows_no_predicted_speeds_and_says_why(
        make_window: Any, demo_model: Path, qtbot: Any) -> None:
    from tests.app.conftest import rig_doc

    doc = rig_doc([("llvmpipe (LLVM 15.0.6, 256 bits)", 2, 200.0)])
    doc["gpus"][0].update(vendor="other", backend="vulkan", notes=["software_device"])
    page = _open(make_window(Inventory.from_json(doc)), qtbot, demo_model)
    gpu = page.memory_map.bars()[0]
    assert gpu.kind == "gpu" and gpu.bytes_of("weights") > 0  # the layers stay on it
    assert [v.text() for v in page.speed_values] == ["—", "—", "—"]
    assert "Nominal figure" in page.speed_values[0].toolTip()
    assert "is a software device that computes on the CPU" in page.messages_label.text()


def test_whatif_second_gpu_is_planned_and_compared_with_this_machine(
        make_window: Any, rig: Inventory, big_model: Path, qtbot: Any) -> None:
    window = make_window(rig)
    page = _open(window, qtbot, big_model)
    alone = page.last_plan.predicted.decode_tps
    assert not page.compare_label.isVisible()
    page.open_whatif()
    page.whatif_dialog.add_gpu("rtx 3090")
    with qtbot.waitSignal(page.sig_baseline_shown, timeout=30000):
        page.whatif_dialog.accept()
    qtbot.waitUntil(lambda: not window.runner.busy("plan"), timeout=30000)
    doc = page.last_plan.to_json()
    assert [d["id"] for d in doc["devices"]][:2] == ["gpu0", "gpu1"]
    assert page.last_plan.predicted.decode_tps > alone  # 40 GB no longer spills to RAM
    assert page.baseline_plan.predicted.decode_tps == pytest.approx(alone)
    assert page.compare_label.isVisible()
    from app.formatting import fmt_tps

    assert f"decode {fmt_tps(alone)} t/s" in page.compare_label.text()
    page.back_button.click()
    assert window.state.whatif is None and not page.compare_label.isVisible()


def test_the_advice_rests_on_this_machines_runs_like_the_plan(
        make_window: Any, demo_model: Path, qtbot: Any) -> None:
    import json

    from engine import run_records
    from tests.app.conftest import rig_doc

    window = make_window(Inventory.from_json(rig_doc([])))  # a CPU machine, as here
    page = window.plan
    with qtbot.waitSignal(page.sig_advice_shown, timeout=60000):
        window.select_model(demo_model)
    assert page.last_advice.calibration is None  # no runs yet
    features = page.last_plan.engine.run_features
    record = run_records.recorder(features)
    assert record is not None
    predicted = json.loads(features)
    record({"decode_tps": predicted["decode_tps"] / 2, "prefill_tps": 100.0,
            "prompt_tokens": 64, "cached_tokens": 0, "generated_tokens": 32}, "stop")
    with qtbot.waitSignal(page.sig_advice_shown, timeout=60000):
        window.state.sig_runs_recorded.emit()  # what Home and the engine do after a run
    assert page.last_plan.calibration is not None and page.last_plan.calibration.runs == 1
    assert page.last_advice.calibration == page.last_plan.calibration
