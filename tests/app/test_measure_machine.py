"""Learning this machine in the app: "Measure this machine" on Home runs the real
calibration in a child process, and the Plan page's prediction is then the corrected one,
with the raw prediction beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.formatting import fmt_tps
from engine import run_records
from planner.inventory import Inventory

pytestmark = pytest.mark.slow


def test_measuring_this_machine_calibrates_the_next_plan(make_window: Any, demo_model: Path,
                                                         qtbot: Any) -> None:
    from engine.hardware import detect
    from tests.app.conftest import rig_doc

    # a CPU machine, as here, with the figures the app's detection measures at its start
    # (this machine's, into the profile the calibration child reads)
    here = detect(model_dirs=[]).host
    doc = rig_doc([])
    doc["host"].update(core_prefill_gflops=here.core_prefill_gflops,
                       core_decode_gbps=here.core_decode_gbps)
    window = make_window(Inventory.from_json(doc))
    page = window.plan
    with qtbot.waitSignal(page.sig_plan_shown, timeout=30000):
        window.select_model(demo_model)
    before = page.last_plan.to_json()["predicted"]
    assert "raw" not in before and not page.calibration_label.isVisibleTo(page)
    raw_text = page.speed_values[0].text()
    assert run_records.samples() == ()

    home = window.home
    assert home.measure_button.accessibleName() == "Measure this machine"
    home.measure_arguments = ["--seconds", "0", "--max-tokens", "20", "--threads", "1"]
    statuses: list[str] = []
    show_progress = home._on_measure_progress

    def seen(value: object) -> None:  # what the status line says after each run
        show_progress(value)
        statuses.append(home.measure_status.text())

    home._on_measure_progress = seen  # type: ignore[method-assign]
    home.measure_button.click()
    assert not home.measure_button.isEnabled() and home.measure_progress.isVisibleTo(home)
    with qtbot.waitSignal(page.sig_plan_shown, timeout=240000) as shown, \
            qtbot.waitSignal(home.sig_measured, timeout=240000) as measured:
        pass
    doc = measured.args[0]
    # three real runs, reported while they ran, recorded by the engine's process
    assert len(doc["runs"]) == 3 and len(statuses) == 3
    assert all("decode" in s for s in statuses)
    recorded = run_records.samples()
    assert len(recorded) == 3
    assert home.measure_button.isEnabled() and not home.measure_progress.isVisibleTo(home)
    assert "Measured 3 runs" in home.measure_status.text()

    # the re-plan rests on those runs: corrected figure, raw one kept and shown
    after = shown.args[0].to_json()["predicted"]
    cal = after["calibration"]
    assert cal["runs"] == 3 and cal["scope"] == "model"
    assert after["raw"]["decode_tps"] == pytest.approx(before["decode_tps"], rel=1e-3)
    assert after["decode_tps"] == pytest.approx(before["decode_tps"] * cal["decode_factor"],
                                                rel=1e-3)
    assert abs(cal["decode_factor"] - 1.0) > 1e-3
    assert page.speed_values[0].text() == fmt_tps(after["decode_tps"]) != raw_text
    label = page.calibration_label.text()
    assert page.calibration_label.isVisibleTo(page)
    assert "Calibrated on 3 runs on this machine" in label and raw_text in label



def test_a_calibration_that_fails_says_why_and_plans_stay_raw(make_window: Any,
                                                              tmp_path: Path,
                                                              qtbot: Any) -> None:
    from tests.app.conftest import rig_doc

    window = make_window(Inventory.from_json(rig_doc([])))
    home = window.home
    home.measure_model = str(tmp_path / "missing.gguf")
    with qtbot.waitSignal(window.errors.sig_error_reported, timeout=60000) as reported:
        home.measure_button.click()
    assert "missing.gguf" in reported.args[0]
    qtbot.waitUntil(home.measure_button.isEnabled, timeout=5000)
    assert home.measure_status.text().startswith("Measuring failed:")
    assert "missing.gguf" in home.measure_status.text()
    assert not home.measure_progress.isVisibleTo(home)
    assert run_records.samples() == ()


def test_closing_the_app_while_measuring_ends_the_calibration(make_window: Any,
                                                              qtbot: Any) -> None:
    from tests.app.conftest import rig_doc

    window = make_window(Inventory.from_json(rig_doc([])))
    home = window.home
    home.measure_arguments = ["--max-tokens", "20", "--threads", "1"]  # a full minute
    runs: list[Any] = []
    show_progress = home._on_measure_progress

    def seen(value: object) -> None:
        show_progress(value)
        runs.append(value)

    home._on_measure_progress = seen  # type: ignore[method-assign]
    home.measure_button.click()
    qtbot.waitUntil(lambda: bool(runs), timeout=120000)  # the engine is measuring
    assert window.runner.shutdown(timeout_ms=10000)  # the child was ended, not waited for
    assert window.runner.active_threads() == 0
    assert len(run_records.samples()) < 10


def test_measuring_can_be_stopped_from_home(make_window: Any, qtbot: Any) -> None:
    from tests.app.conftest import rig_doc

    window = make_window(Inventory.from_json(rig_doc([])))
    home = window.home
    home.measure_arguments = ["--max-tokens", "20", "--threads", "1"]  # a full minute
    assert not home.stop_measure_button.isVisibleTo(home)
    home.measure_button.click()
    assert home.stop_measure_button.isVisibleTo(home) and home.stop_measure_button.isEnabled()
    qtbot.wait(1500)  # the child process is starting
    home.stop_measure_button.click()
    assert home.measure_status.text() == "Stopping the measurement…"
    qtbot.waitUntil(home.measure_button.isEnabled, timeout=30000)  # well before a minute
    assert home.measure_status.text() == "Measuring stopped."
    assert not home.stop_measure_button.isVisibleTo(home)
    assert not home.measure_progress.isVisibleTo(home)
    assert not window.runner.busy("calibrate")
