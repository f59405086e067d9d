"""The desktop app on the Vulkan engine build: Home lists the device as a GPU; the Plan
page's memory map shows the bytes that the load of that plan then really allocates, with
llama.cpp's dry run confirming it. (``tests/gpu/worker.py app docs/screenshots`` makes the
screenshots in the README.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bench import gpu_memory as gm
from tests.gpu.conftest import run_worker


def test_home_lists_the_device_and_the_plan_map_is_what_the_load_uses(
        gpu_home: Path, vulkan_device: dict[str, Any], tmp_path: Path) -> None:
    got = run_worker(gpu_home, "app", str(tmp_path), timeout=300,
                     QT_QPA_PLATFORM="offscreen")
    (name, memory), = got["home_rows"]
    assert name == vulkan_device["description"] and "GiB" in memory
    bar, measured = got["bars"]["gpu0"], got["measured"]["gpu0"]
    # the map's weights segment carries the planner's fixed per-GPU runtime overhead too
    weights = bar["weights"] - got["gpu_overhead_bytes"]
    assert abs(weights - measured["model"]) <= gm.ROUNDING
    assert abs(bar["kv"] - measured["kv"]) <= gm.ROUNDING
    shown = weights + bar["kv"] + bar["compute"]
    row = gm.Row("app", "gpu0", "total", shown, sum(measured.values()))
    assert gm.misses([row]) == [], row.error_pct
    # the plan depends on the RAM free right now; near the margin the dry run may correct
    assert re.search(r"Memory (confirmed by llama\.cpp|corrected by llama\.cpp's dry run "
                     r"\(.+\))\.$", got["fit_label"]), got["fit_label"]
    for shot in got["screenshots"]:
        assert Path(shot).stat().st_size > 10_000
