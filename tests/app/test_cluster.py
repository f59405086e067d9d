"""The Cluster section and a lost worker, with real ``loadout worker`` processes on
loopback and the real engine process."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings_store import AppSettings, load_settings, settings_file
from planner.inventory import Backend
from tests.app.engine_window import cpu_rig, wait_until
from tests.engine.test_rpc_worker import _free_port, _wait_listening

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "screenshots"
LONG_ASK = "Write a very long story about a dragon who learns to cook. Use many chapters."


class Workers:
    """``loadout worker`` processes on 127.0.0.1, each listening once started."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self) -> str:
        port = _free_port()
        proc = subprocess.Popen([sys.executable, "-m", "loadout", "worker", "--port",
                                 str(port), "--threads", "1"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        endpoint = f"127.0.0.1:{port}"
        self.procs[endpoint] = proc
        _wait_listening(port, proc)
        return endpoint

    def kill(self, endpoint: str) -> None:
        proc = self.procs[endpoint]
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def workers() -> Iterator[Workers]:
    started = Workers()
    try:
        yield started
    finally:
        for proc in started.procs.values():
            proc.kill()
            proc.wait(timeout=10)


def _add(section: Any, text: str) -> None:
    section.address.setText(text)
    section.add_button.click()


def _row_texts(section: Any) -> dict[str, str]:
    table = section.table
    return {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}


def _remote(window: Any, endpoint: str) -> list[Any]:
    inventory = window.state.detected
    return [g for g in inventory.gpus if g.endpoint == endpoint] if inventory else []


def test_settings_keep_the_workers_and_drop_bad_addresses(tmp_path: Path) -> None:
    from app.settings_store import save_settings

    path = tmp_path / "settings.json"
    save_settings(AppSettings(rpc_workers=("192.168.1.7:50052", "gpu-box:50053")), path)
    assert load_settings(path).rpc_workers == ("192.168.1.7:50052", "gpu-box:50053")
    doc = json.loads(path.read_text())
    doc["rpc_workers"] = ["10.0.0.2:50052", "not an address", "10.0.0.3:99999", "10.0.0.4",
                          "10.0.0.2:50052", 7]
    path.write_text(json.dumps(doc))
    loaded = load_settings(path)
    assert loaded.rpc_workers == ("10.0.0.2:50052", "10.0.0.4:50052")
    assert loaded.model_folders == ()  # the rest of the file still counts
    doc["rpc_workers"] = "10.0.0.2:50052"  # not a list: ignored, nothing else lost
    doc["theme"] = "dark"
    path.write_text(json.dumps(doc))
    assert load_settings(path).rpc_workers == () and load_settings(path).theme == "dark"


def test_cluster_section_adds_checks_and_removes_workers(
        make_window: Any, workers: Workers) -> None:
    first, second = workers.start(), workers.start()
    closed = f"127.0.0.1:{_free_port()}"
    window = make_window(cpu_rig())
    window.show_page("settings")
    section = window.settings_page.cluster
    assert section.empty.isVisible() and not section.remove_button.isEnabled()
    assert "--allow-remote" in section.command.text() and "0.0.0.0" in section.command.text()
    assert "no authentication" in section.warning.text()

    _add(section, first)
    assert _row_texts(section)[first] == "Checking…"  # probed off the UI thread
    wait_until(lambda: _remote(window, first), 20, "the first worker's devices")
    assert _row_texts(section)[first].startswith("Reachable, 1 device(s): CPU 0: ")
    device = _remote(window, first)[0]
    assert device.backend == Backend.RPC and device.total_bytes > 1 << 30
    assert section.selected() == first and section.remove_button.isEnabled()
    assert section.address.text() == ""

    started = time.monotonic()
    _add(section, closed)
    wait_until(lambda: _row_texts(section)[closed] != "Checking…", 10, "the closed port")
    assert time.monotonic() - started < 5
    assert _row_texts(section)[closed] == \
        "Unreachable: nothing listens at that port (is the worker running?)"
    assert f"worker_unreachable:{closed}:refused" in window.state.detected.notes

    _add(section, "192.168.1.7:http")  # bad text: a clear error, nothing lost
    assert section.error.isVisible() and "HOST:PORT" in section.error.text()
    assert section.address.text() == "192.168.1.7:http"
    assert list(_row_texts(section)) == [first, closed]

    _add(section, second.replace("127.0.0.1", " 127.0.0.1"))  # spaces around are fine
    assert not section.error.isVisible()
    wait_until(lambda: _remote(window, second), 20, "the second worker's devices")
    # the machine planned for is this one plus the workers, in the list's order
    machine = window.state.machine()
    assert [g.endpoint for g in machine.gpus] == [first, second]
    assert [g.index for g in machine.gpus] == [0, 1]
    assert machine.host == cpu_rig().host
    saved = load_settings(settings_file()).rpc_workers
    assert saved == (first, closed, second)

    section.select(first)
    section.remove_button.click()
    assert list(_row_texts(section)) == [closed, second]
    assert not _remote(window, first) and _remote(window, second)  # no probe needed
    assert window.state.detected.gpus[0].index == 0
    assert load_settings(settings_file()).rpc_workers == (closed, second)

    workers.kill(second)
    section.check_button.click()
    assert set(_row_texts(section).values()) == {"Checking…"}
    wait_until(lambda: "Checking…" not in _row_texts(section).values(), 10, "the check")
    assert _row_texts(section)[second].startswith("Unreachable: nothing listens")
    assert window.state.detected.gpus == ()


def test_workers_in_the_settings_are_probed_when_the_machine_is_detected(
        make_window: Any, workers: Workers) -> None:
    endpoint = workers.start()
    window = make_window(settings=AppSettings(scan_other_apps=False,
                                              rpc_workers=(endpoint,)))
    section = window.settings_page.cluster
    assert _row_texts(section) == {endpoint: "Checking…"}  # no machine yet
    window.set_detected(cpu_rig())
    wait_until(lambda: _remote(window, endpoint), 20, "the worker's devices")
    window.show_page("home")
    table = window.home.gpu_table
    assert table.rowCount() == 1 and endpoint in table.item(0, 0).text()


def test_screenshot_of_the_cluster_section(make_window: Any, workers: Workers) -> None:
    endpoint = workers.start()
    closed = f"127.0.0.1:{_free_port()}"
    window = make_window(cpu_rig(), AppSettings(scan_other_apps=False,
                                                rpc_workers=(endpoint, closed)))
    window.resize(1280, 800)
    window.show_page("settings")
    section = window.settings_page.cluster
    wait_until(lambda: "Checking…" not in _row_texts(section).values(), 20, "the checks")
    section.select(endpoint)
    wait_until(lambda: section.isVisible(), 5, "the section")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    image = window.grab()
    assert image.save(str(SCREENSHOTS / "cluster.png"))
    # the whole section is on screen, nothing cut off at the bottom
    bottom = section.mapTo(window, section.rect().bottomLeft()).y()
    assert bottom < window.height()


@pytest.mark.slow
def test_a_worker_lost_mid_answer_offers_to_plan_again_without_it(
        make_window: Any, workers: Workers, demo_model: Path) -> None:
    from app.engine_launch import launch_spec_from_plan
    from app.plan_jobs import run_plan, with_gpu_reserve
    from planner.request import Role

    kept, lost = workers.start(), workers.start()
    window = make_window(cpu_rig(), AppSettings(scan_other_apps=False,
                                                rpc_workers=(kept, lost)))
    wait_until(lambda: _remote(window, kept) and _remote(window, lost), 20, "the workers")
    window.select_model(demo_model)
    wait_until(lambda: window.plan.last_plan is not None and window.state.profile
               and not window.runner.busy(), 60, "the plan")
    # On one machine the planner leaves same-host workers off: pin a split over both,
    # as a user would with roles and a tensor split.
    machine = window.state.machine()
    request = dataclasses.replace(window.plan.build_request(), context=2048, parallel=1,
                                  roles=(Role.MAIN, Role.HELPER), tensor_split=(1.0, 1.0))
    split = run_plan(with_gpu_reserve(machine, 0), window.state.profile, request)
    assert split.fits and split.engine.rpc_workers == (kept, lost)
    window.control.load(demo_model, launch_spec_from_plan(demo_model, split), request)
    wait_until(lambda: window.engine.state in ("ready", "crashed"), 120, "the engine")
    assert window.engine.state == "ready", window.engine.log_text()
    assert window.engine.spec.rpc_workers == (kept, lost)
    # a check while the engine uses the workers keeps their devices (a probe would
    # find them busy)
    window.settings_page.cluster.check_button.click()
    assert window.cluster.status(kept).state == "reachable" and _remote(window, lost)

    chat = window.chat
    chat.max_tokens.setValue(2000)
    chat.temperature.setValue(0.8)
    chat.input.setPlainText(LONG_ASK)
    chat.send_button.click()
    wait_until(lambda: len(chat.messages[-1].content) > 10, 120, "the answer's first words")
    os.kill(workers.procs[lost].pid, signal.SIGKILL)
    wait_until(lambda: window.engine.state == "crashed", 60, "the engine to stop")
    assert window.engine.exit_code != 0
    assert "Remote RPC server crashed" in window.engine.log_text()  # ggml-rpc's own words

    banner = window.banner
    # the log names no worker: the app asks both, and only the killed one is gone
    wait_until(banner.isVisible, 15, "the banner")
    assert f"worker {lost} went away" in banner.message.text()
    assert banner.replan_button.isVisible() and not banner.retry_button.isVisible()
    assert banner.replan_button.text() == f"Plan again without {lost}"
    assert window.grab().save(str(SCREENSHOTS / "cluster-lost-worker.png"))
    plans_before = window.plan.plans_requested
    banner.replan_button.click()
    assert not banner.isVisible() and window.current_page() == "plan"
    assert window.cluster.status(lost).state == "lost"
    assert window.state.settings.rpc_workers == (kept, lost)  # still listed, marked
    assert "went away" in _row_texts(window.settings_page.cluster)[lost]
    assert not _remote(window, lost) and _remote(window, kept)
    wait_until(lambda: window.plan.plans_requested > plans_before
               and not window.runner.busy("plan"), 60, "the new plan")
    doc = window.plan.last_plan.to_json()
    assert lost not in json.dumps(doc)
    assert lost not in window.plan.last_plan.engine.rpc_workers
    assert window.plan.load_button.isEnabled()
    window.plan.load_button.click()
    wait_until(lambda: window.engine.state in ("ready", "crashed"), 120, "the new load")
    assert window.engine.state == "ready", window.engine.log_text()
    assert lost not in window.engine.spec.rpc_workers
