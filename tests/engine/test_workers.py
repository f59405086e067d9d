"""Workers' devices in the Inventory and in a plan: real ``loadout worker`` processes on
loopback, the demo model split across them."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from engine.hardware.workers import add_workers
from planner.codes import Code
from planner.inventory import Backend, Host, Inventory
from planner.plan import plan
from planner.request import Request, Role
from tests.engine.test_rpc_worker import _free_port, _wait_listening

ROOT = Path(__file__).resolve().parents[2]
GIB = 1 << 30


def _host_only() -> Inventory:
    host = Host(cpu="this CPU", cores=2, threads=2, ram_total_bytes=16 * GIB,
                ram_available_bytes=12 * GIB, bandwidth_gbps=20.0)
    return Inventory(gpus=(), host=host)


@pytest.fixture(scope="module")
def workers() -> Iterator[list[str]]:
    ports = [_free_port(), _free_port()]
    procs = [subprocess.Popen([sys.executable, "-m", "loadout", "worker", "--port", str(p),
                               "--threads", "1"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p in ports]
    try:
        for port, proc in zip(ports, procs, strict=True):
            _wait_listening(port, proc)
        yield [f"127.0.0.1:{p}" for p in ports]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=10)


def test_workers_devices_join_the_inventory_with_a_measured_link(workers: list[str]) -> None:
    dead = f"127.0.0.1:{_free_port()}"
    started = time.monotonic()
    inv = add_workers(_host_only(), [workers[0], dead, workers[1]], timeout_s=2.0)
    assert time.monotonic() - started < 10.0
    assert [g.endpoint for g in inv.gpus] == workers
    for i, g in enumerate(inv.gpus):
        assert g.index == i and g.backend == Backend.RPC and g.remote
        assert g.worker_cpu and g.same_host  # a CPU worker on this machine
        assert g.total_bytes > GIB and 0 < g.free_bytes <= g.total_bytes
        assert "link_gbps" in g.measured and g.link_gbps > 0.01
        assert 0 < g.link_latency_s < 0.5
    assert f"worker_unreachable:{dead}:refused" in inv.notes


def test_a_given_link_figure_is_used_and_not_called_measured(workers: list[str]) -> None:
    inv = add_workers(_host_only(), workers[:1], link_gbps=0.117)
    g = inv.gpus[0]
    assert g.link_gbps == 0.117 and "link_gbps" not in g.measured


def test_a_busy_worker_is_reported_not_hung_on() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True).start()
    try:
        started = time.monotonic()
        inv = add_workers(_host_only(), [f"127.0.0.1:{port}"], timeout_s=0.5)
        assert time.monotonic() - started < 3.0
        assert inv.gpus == () and inv.notes == (f"worker_unreachable:127.0.0.1:{port}:busy",)
    finally:
        for s in held:
            s.close()
        server.close()


def test_the_demo_model_planned_across_two_workers(workers: list[str],
                                                   demo_model: Path) -> None:
    from engine.gguf_file import load_profile

    profile = load_profile(demo_model)
    inv = add_workers(_host_only(), workers)
    quiet = Request(advise=False, context=512)
    own = plan(inv, profile, quiet)
    # on one machine the workers add nothing: the planner leaves them off, and says why
    assert [r.reason for r in own.roles] == [Code.ROLE_OFF_SAME_HOST] * 2
    assert "rpc_workers" not in own.engine.to_json()
    split = plan(inv, profile, replace(quiet, roles=(Role.HELPER, Role.HELPER),
                                       tensor_split=(1.0, 1.0)))
    e = split.engine
    assert split.fits
    assert e.rpc_workers == tuple(workers) and e.devices == ("RPC0", "RPC1")
    assert e.tensor_split is not None and sum(e.tensor_split) == profile.n_layers + 1
    assert e.n_gpu_layers == profile.n_layers + 1
    layers = split.layout.placement.layer_devices  # type: ignore[union-attr]
    assert layers.count("gpu0") and layers.count("gpu1") and "host" not in layers
    assert {w.code for w in split.warnings} >= {Code.SAME_HOST}


def test_greedy_output_split_across_workers_is_identical(workers: list[str]) -> None:
    # the bench loads each plan with llama.cpp's own calls, the split naming the devices
    result = subprocess.run(
        [sys.executable, "bench/cluster.py", "--endpoints", ",".join(workers), "--tokens",
         "12", "--threads", "1", "--json"], cwd=ROOT, capture_output=True, text=True,
        timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout)
    assert doc["split"]["devices"] == ["RPC0", "RPC1"]
    assert doc["local"]["tokens"] == doc["split"]["tokens"] > 0
    assert doc["identical_text"] is True
    assert doc["local"]["text"] == doc["split"]["text"]


def test_plan_cli_reports_an_unreachable_worker(demo_model: Path) -> None:
    dead = f"127.0.0.1:{_free_port()}"
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "loadout", "plan", "demo", "--no-advice",
                             "--workers", dead, "--json"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert time.monotonic() - started < 60
    doc = json.loads(result.stdout)
    assert "rpc_workers" not in doc["engine"]
    assert "refused" in result.stderr and dead in result.stderr
