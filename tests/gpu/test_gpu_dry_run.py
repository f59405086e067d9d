"""llama.cpp's dry run on the Vulkan device: a right plan confirmed to the byte on the
device; a memory model made wrong on purpose caught, and the plan corrected before load;
half the demo's layers on the device confirmed on the host too: the dry run loads without
mmap, so llama.cpp's host model buffer is the host tensors alone (not the mapped span of
the file, which would include the device blocks stored between host blocks)."""

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
    half = got["half"]
    assert 0 < half["n_gpu_layers"] < 30
    assert half["check"]["status"] == "confirmed" and not half["changed"]
    host = next(c for c in half["check"]["devices"] if c["device"] == "host")
    assert abs(host["error_pct"]) <= 3.0
