"""llama.cpp's dry run on the Vulkan device: a right plan confirmed to the byte on the
device; a memory model made wrong on purpose caught, and the plan corrected before load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.gpu.conftest import run_worker


def test_dry_run_confirms_and_corrects_on_the_device(gpu_home: Path,
                                                     vulkan_device: dict[str, Any]) -> None:
    got = run_worker(gpu_home, "dryrun")
    right, wrong = got["right"], got["wrong"]
    assert right["on_this_machine"] and right["check"]["status"] == "confirmed"
    gpu = next(c for c in right["check"]["devices"] if c["device"] == "gpu0")
    assert gpu["dry_run_bytes"] > 100 << 20 and gpu["error_pct"] == 0.0
    assert not right["changed"]
    check = wrong["check"]
    assert check["status"] == "corrected"
    before = next(c for c in check["before"] if c["device"] == "gpu0")
    assert before["error_pct"] < -10  # the wrong model under-predicted the device
    assert wrong["changed"]
    assert wrong["gpu_layers"]["after"] < wrong["gpu_layers"]["before"]
    after = next(c for c in check["devices"] if c["device"] == "gpu0")
    budget = wrong["budget_bytes"] - (300 << 20)  # less the planner's runtime overhead
    assert after["dry_run_bytes"] <= budget  # what llama.cpp would allocate now fits
