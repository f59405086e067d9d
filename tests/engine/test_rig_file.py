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
