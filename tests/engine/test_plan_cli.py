"""``loadout plan``: real GGUF headers (the demo model, synthetic files), rigs and detection."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from loadout.cli import main
from planner.inventory import Inventory
from tests.helpers.gguf_factory import LLAMA_70B, write_llama
from tests.planner.rigs import RTX_3090, RTX_4090, rig


def _rig_file(tmp_path: Path, inv: Inventory) -> str:
    path = tmp_path / "rig.json"
    path.write_text(json.dumps(inv.to_json()), encoding="utf-8")
    return str(path)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(["plan", *argv, "--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)  # exactly one document: json.loads rejects anything after it


def test_plan_json_for_the_demo_model_on_a_rig(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "demo", "--rig", _rig_file(tmp_path, rig(RTX_4090)))
    assert doc["schema"] == "loadout.plan/1" and doc["fits"] is True
    assert doc["roles"][0]["role"] == "main"
    assert doc["engine"]["n_gpu_layers"] == 31  # 30 blocks + the output layer
    assert doc["context"] == 8192  # SmolLM2's training context
    assert doc["predicted"]["decode_tps"] > 100


def test_plan_text_shows_the_memory_map_speeds_and_advice(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "demo", "--rig", _rig_file(tmp_path, rig(ram_gib=16))]) == 0
    out = capsys.readouterr().out
    for words in ("Memory map", "host", "Predicted: decode", "prefill", "TTFT", "advice"):
        assert words in out


def test_plan_on_a_software_device_keeps_its_layers_and_flags_speeds_nominal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lavapipe = replace(RTX_3090, name="llvmpipe (LLVM 15.0.6, 256 bits)", software=True)
    rig_file = _rig_file(tmp_path, rig(lavapipe))
    doc = _json(capsys, "demo", "--rig", rig_file)
    assert doc["engine"]["n_gpu_layers"] == 31 and doc["predicted"]["nominal"] is True
    assert {"code": "software_device_speed", "gpu": 0, "name": lavapipe.name} \
        in doc["warnings"]
    assert main(["plan", "demo", "--rig", rig_file]) == 0
    out = capsys.readouterr().out
    assert "Predicted: not predicted (GPU 0 computes on the CPU" in out
    assert "Predicted: decode" not in out


def test_plan_honours_every_override_flag(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    sparse = write_llama(tmp_path / "llama-70b.gguf", LLAMA_70B, header_only=True)
    doc = _json(capsys, str(sparse), "--rig", _rig_file(tmp_path, rig(RTX_3090, RTX_3090)),
                "--ctx", "8192", "--ngl", "70", "--tensor-split", "1,1", "--kv-type", "q8_0",
                "--spec", "off", "--roles", "main,helper", "--no-advice")
    e = doc["engine"]
    assert e["n_gpu_layers"] == 70 and e["tensor_split"] == [1.0, 1.0]
    assert e["type_k"] == 8 and doc["kv_type"] == "q8_0"
    assert doc["speculative"]["mode"] == "off"
    assert doc["context"] == 8192 and e["n_ctx"] == 8192
    host = next(d for d in doc["devices"] if d["id"] == "host")
    assert host["layers"] == [[0, 11]]  # 80 + 1 - 70 blocks stay on the CPU
    assert any(w["code"] == "override_slower" for w in doc["warnings"])


def test_plan_chooses_among_quantizations_of_one_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dataclasses import replace

    big = write_llama(tmp_path / "m-F16.gguf", replace(LLAMA_70B, weight_type="F16"),
                      header_only=True)
    small = write_llama(tmp_path / "m-Q4_K.gguf", LLAMA_70B, header_only=True)
    doc = _json(capsys, str(big), str(small), "--rig",
                _rig_file(tmp_path, rig(RTX_3090, RTX_3090, ram_gib=64)), "--no-advice")
    assert doc["quant_choice"]["chosen"] == str(small)
    assert len(doc["quant_choice"]["candidates"]) == 2
    assert doc["model_path"] == str(small)


def test_plan_without_a_rig_plans_for_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "demo", "--no-advice", "--task", "code", "--depth", "100")
    assert doc["fits"] is True
    assert doc["predicted"]["depth"] == 100
    assert doc["engine"]["n_threads"] >= 1


def test_a_pinned_kv_type_llama_cpp_refuses_is_a_plain_does_not_fit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the factory's heads are 16 wide: not whole 32-element q8_0 blocks, which llama.cpp
    # refuses when it creates the context; the plan says so before anything is loaded
    model = str(write_llama(tmp_path / "hd16.gguf"))
    rig_file = _rig_file(tmp_path, rig(RTX_4090))
    assert main(["plan", model, "--rig", rig_file, "--kv-type", "q8_0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fits"] is False
    assert doc["reasons"][:2] == ["does_not_fit", "kv_type_not_whole_blocks"]
    assert main(["plan", model, "--rig", rig_file, "--kv-type", "q8_0"]) == 0
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out
    assert "its heads of 16 values are not whole blocks of 32" in out
    assert main(["plan", model, "--rig", rig_file, "--kv-type", "f16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fits"] is True
