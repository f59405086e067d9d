"""Memory and placement on the Vulkan device: the plan's bytes per device against the
buffers llama.cpp allocates, and every layer, expert and KV cache where the plan put it.

The same comparison as ``bench/memory_accuracy.py --gpu`` (whose table is the measurement;
here each case must meet the goal): the demo and synthetic dense, MoE, sliding-window and
hybrid-recurrent models, fully offloaded, half offloaded and with a MoE's experts kept in
RAM by the plan's tensor overrides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import gpu_memory as gm
from tests.gpu.conftest import run_worker

CASES = [c.name for c in gm.cases()]


@pytest.fixture(scope="module")
def measured(gpu_home: Path, vulkan_device: dict[str, Any]) -> dict[str, Any]:
    """Every case loaded once, in one child process on the Vulkan build."""
    found = run_worker(gpu_home, "memory", *CASES, timeout=900)
    return {r["case"]: r for r in found["results"]}


# Misses of the memory model that this backend shows, measured by
# ``bench/memory_accuracy.py --gpu`` (README, "Engine builds"), each as a strict xfail with
# what misses: none left (when one appears, add it here, and when it is fixed the marker
# must go).
KNOWN_MISSES: dict[tuple[str, str], str] = {}


def _known_miss(case: str, device: str) -> str | None:
    return KNOWN_MISSES.get((case, device))


GOAL_CASES = [pytest.param(c, d, marks=pytest.mark.xfail(strict=True, reason=why))
              if (why := _known_miss(c, d)) else (c, d)
              for c in CASES for d in ("gpu0", "host")]


@pytest.mark.parametrize(("case", "device"), GOAL_CASES)
def test_every_device_total_within_the_goal(measured: dict[str, Any], case: str,
                                            device: str) -> None:
    result = measured[case]
    rows = [gm.Row(**{k: r[k] for k in ("case", "device", "part", "predicted", "measured")})
            for r in result["rows"]]
    assert "gpu0" in {r.device for r in rows}, \
        f"nothing was placed on the Vulkan device: {result['buffers']}"
    total = next(r for r in rows if r.device == device and r.part == "total")
    assert gm.misses([total]) == [], (total.predicted, total.measured, total.error_pct)


def test_full_offload_weights_and_kv_on_the_device_are_exact(measured: dict[str, Any]) -> None:
    for case in (c for c in CASES if c.endswith("/full")):
        for part in ("model", "kv"):
            row = next(r for r in measured[case]["rows"]
                       if r["device"] == "gpu0" and r["part"] == part)
            assert row["measured"] > 0 and abs(row["error_pct"]) < 0.5, (case, row)


@pytest.mark.parametrize("case", CASES)
def test_layers_experts_and_kv_are_where_the_plan_put_them(measured: dict[str, Any],
                                                           case: str) -> None:
    result = measured[case]
    assert result["placement_problems"] == []
    n = gm.N_LAYERS[case.split("/")[0]]
    layers = {int(k): v for k, v in result["layers"].items()}
    assert sorted(layers) == list(range(n + 1))  # every block, and the output (index n)
    on_gpu = sorted(i for i, dev in layers.items() if dev.startswith("Vulkan") and i < n)
    planned = sorted(i for d in result["devices"] if d["id"] == "gpu0"
                     for first, last in d["layers"] for i in range(first, last))
    assert on_gpu == planned and planned
    if case.endswith("/half"):
        # n_gpu_layers = n/2 counts the output layer as one: the last n/2 - 1 blocks + it
        assert len(on_gpu) == n // 2 - 1 and on_gpu[-1] == n - 1
        assert layers[n].startswith("Vulkan")
        kv_gpu = sorted(int(k) for k, v in result["kv_layers"].items()
                        if v.startswith("Vulkan"))
        assert set(kv_gpu) <= set(on_gpu)  # KV follows its layer


def test_experts_kept_in_ram_by_the_plans_overrides(measured: dict[str, Any]) -> None:
    ram, full = measured["moe/experts-in-ram"], measured["moe/full"]
    assert any("exps" in str(p[0]) for p in ram["engine"]["tensor_overrides"])
    gpu_ram = next(r for r in ram["rows"] if r["device"] == "gpu0" and r["part"] == "model")
    gpu_full = next(r for r in full["rows"] if r["device"] == "gpu0" and r["part"] == "model")
    # the routed experts are most of a MoE: the device holds far less without them
    assert gpu_ram["measured"] < gpu_full["measured"] / 2
    host_ram = next(r for r in ram["rows"] if r["device"] == "host" and r["part"] == "model")
    assert host_ram["measured"] > gpu_full["measured"] / 2
