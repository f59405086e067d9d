"""Rig files: bad ones give one clear error naming the file; good ones round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.rig_file import load_rig, save_rig
from planner.errors import InventoryError
from planner.inventory import Backend, Gpu, Host, Inventory, Vendor


def _rig() -> Inventory:
    gpu = Gpu(index=0, name="RTX 4090", vendor=Vendor.NVIDIA, backend=Backend.CUDA,
              total_bytes=24 << 30, free_bytes=23 << 30, bandwidth_gbps=1008.0)
    host = Host(cpu="x", cores=8, threads=16, ram_total_bytes=64 << 30,
                ram_available_bytes=60 << 30, bandwidth_gbps=80.0)
    return Inventory(gpus=(gpu,), host=host)


def test_a_rig_round_trips(tmp_path: Path) -> None:
    save_rig(_rig(), tmp_path / "rig.json")
    assert load_rig(tmp_path / "rig.json") == _rig()


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ('{"schema": ', "not valid JSON (line 1"),
    ('{"schema": "loadout.inventory/1", "gpus": []}', "missing the key 'host'"),
    ('[1, 2]', "must be a JSON object"),
    ('{"schema": "other/9", "host": {}}', "unknown rig schema"),
])
def test_a_bad_rig_names_the_file_and_the_problem(tmp_path: Path, content: str | None,
                                                  message: str) -> None:
    path = tmp_path / "rig.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InventoryError) as err:
        load_rig(path)
    assert message in str(err.value) and "rig.json" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_hand_written_gpu_gets_its_nominal_figures(tmp_path: Path) -> None:
    path = tmp_path / "rig.json"
    path.write_text('{"gpus": [{"name": "RTX 4090", "total_bytes": 25757220864}],'
                    ' "host": {"ram_total_bytes": 68719476736, "bandwidth_gbps": 80}}')
    gpu = load_rig(path).gpus[0]
    assert 900 < gpu.bandwidth_gbps < 1100
    assert "nominal_figures" in gpu.notes


def test_an_unknown_gpu_without_figures_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "rig.json"
    path.write_text('{"gpus": [{"name": "Frobnitz 9000", "total_bytes": 1}],'
                    ' "host": {"ram_total_bytes": 1, "bandwidth_gbps": 80}}')
    with pytest.raises(InventoryError, match="Frobnitz 9000"):
        load_rig(path)
