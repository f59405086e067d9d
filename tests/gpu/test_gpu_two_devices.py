"""Two devices: this machine's Vulkan device and a second one served over RPC by
``loadout worker`` (the same Vulkan build, in another process). The user's roles Main /
Helper / Off are honoured, layers are split as the plan says, the memory of both devices
is predicted, and a device that is Off is left untouched."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import gpu_memory as gm
from tests.gpu.conftest import ROOT, gpu_env, run_worker


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def split(gpu_home: Path, vulkan_device: dict[str, Any]) -> Iterator[dict[str, Any]]:
    port = _free_port()
    worker = subprocess.Popen(
        [sys.executable, "-m", "loadout", "worker", "--port", str(port), "--devices",
         "Vulkan0"], cwd=ROOT, env=gpu_env(gpu_home / "worker"), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError as exc:
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"loadout worker did not start: "
                                         f"{worker.stderr.read() if worker.stderr else ''}"
                                         ) from exc
                time.sleep(0.2)
        yield run_worker(gpu_home, "split", f"127.0.0.1:{port}")
    finally:
        worker.terminate()
        worker.wait(30)


def _totals(result: dict[str, Any]) -> dict[str, gm.Row]:
    return {r["device"]: gm.Row(**{k: r[k] for k in ("case", "device", "part", "predicted",
                                                     "measured")})
            for r in result["rows"] if r["part"] == "total"}


def _buffers(result: dict[str, Any], prefix: str) -> int:
    return sum(sum(parts.values()) for name, parts in result["buffers"].items()
               if name.startswith(prefix) and not name.endswith("_Host"))


def test_the_workers_device_joins_the_inventory(split: dict[str, Any]) -> None:
    local, remote = split["gpus"]
    assert (local["backend"], local["remote"]) == ("vulkan", False)
    assert (remote["backend"], remote["remote"]) == ("rpc", True)


def test_main_and_helper_split_the_layers_as_planned(split: dict[str, Any]) -> None:
    got = split["main+helper"]
    assert [(r["role"], r["reason"]) for r in got["roles"]] == [
        ("main", "main_user"), ("helper", "helper_user")]
    layers = {d["id"]: d["layers"] for d in got["devices"]}
    assert layers["gpu0"] and layers["gpu1"]  # both devices hold blocks
    assert got["engine"]["rpc_workers"] and len(got["engine"]["devices"]) == 2
    assert got["placement_problems"] == []  # each block where the plan put it
    assert _buffers(got, "Vulkan0") > 0 and _buffers(got, "RPC0") > 0
    totals = _totals(got)
    assert gm.misses([totals["gpu1"], totals["host"]]) == []


def test_main_device_memory_within_the_goal_when_layers_stay_in_ram(
        split: dict[str, Any]) -> None:
    assert gm.misses([_totals(split["main+helper"])["gpu0"]]) == []


def test_a_device_that_is_off_is_left_untouched(split: dict[str, Any]) -> None:
    main_off, off_main = split["main+off"], split["off+main"]
    assert [r["role"] for r in main_off["roles"]] == ["main", "off"]
    assert _buffers(main_off, "RPC") == 0 and not main_off["engine"]["rpc_workers"]
    assert _buffers(main_off, "Vulkan0") > 0
    assert [r["role"] for r in off_main["roles"]] == ["off", "main"]
    assert _buffers(off_main, "Vulkan0") == 0  # this machine's device: not a byte
    assert _buffers(off_main, "RPC0") > 0 and off_main["placement_problems"] == []
    assert gm.misses([_totals(off_main)["gpu1"]]) == []
