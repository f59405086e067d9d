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
    for words in ("Memory map", "host", "Predicted: decode", "prefill", "TTFT", "Advice:"):
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


@pytest.mark.parametrize("data", [b"GGUF", b"", b"GGUF\x03\x00\x00\x00" + b"\xff" * 16,
                                  b"not a model at all\n"],
                         ids=["four-bytes", "empty", "hostile-counts", "text"])
def test_a_malformed_file_is_refused_before_the_machine_is_detected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        data: bytes) -> None:
    import engine.hardware

    detected: list[int] = []

    def detect(**_kwargs: object) -> Inventory:  # the real one measures for seconds
        detected.append(1)
        raise AssertionError("the machine was detected before the file was read")

    monkeypatch.setattr(engine.hardware, "detect", detect)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(data)
    assert main(["plan", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("loadout plan: error:") and "bad.gguf" in err
    assert detected == []
    # a bad option is refused before detection too
    assert main(["plan", "demo", "--spec", "warp:9"]) == 2
    assert detected == []


def _fields(entry: dict) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in entry.items()
            if k not in ("code", "decode_tps", "fits", "helps")}


@pytest.mark.parametrize("case", ["demo-cpu", "70b-spills-creative", "70b-two-gpus-code"])
def test_plan_text_words_every_code_as_the_window_does_and_json_keeps_the_codes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    import re

    from app.texts import code_sentence

    seventy = str(write_llama(tmp_path / "llama-70b.gguf", LLAMA_70B, header_only=True))
    model, machine, task = {"demo-cpu": ("demo", rig(ram_gib=16), "chat"),
                            "70b-spills-creative": (seventy, rig(RTX_3090, ram_gib=32),
                                                    "creative"),
                            "70b-two-gpus-code": (seventy, rig(RTX_4090, RTX_3090, ram_gib=64),
                                                  "code")}[case]
    argv = [model, "--rig", _rig_file(tmp_path, machine), "--task", task]
    doc = _json(capsys, *argv)
    assert main(["plan", *argv]) == 0
    text = capsys.readouterr().out
    said = [(w["code"], _fields(w)) for w in doc["warnings"]] + \
        [(d["code"], _fields(d)) for d in doc["decisions"]] + \
        [(r, {}) for r in doc["reasons"]] + [(r["reason"], {}) for r in doc["roles"]]
    assert said and doc["advice"]
    for code, fields in said:
        assert code_sentence(code, fields) in text, code
    for advice in doc["advice"]:  # the sentence, its numbers in GiB, and the speed it gives
        line = f"{code_sentence(advice['code'], _fields(advice))} → decode "
        if not advice["helps"] and advice["code"] != "advice_no_change_needed":
            assert line not in text, advice  # as the window: JSON only
            continue
        assert line in text, advice
        shown = re.search(re.escape(line) + r"([0-9.]+) t/s", text)
        assert shown is not None and float(shown.group(1)) == pytest.approx(
            advice["decode_tps"], rel=0.01, abs=0.01)
    if doc["bottleneck"]:
        assert code_sentence(doc["bottleneck"]["kind"]) in text
    # not one code, and no raw byte count (ram_bytes=50551980032) is left for a person
    codes = {c for c, _ in said} | {a["code"] for a in doc["advice"]}
    codes -= {"fits"}  # also the plain word of the first line
    words = set(re.findall(r"[a-z0-9_]+", text))
    assert not codes & words, codes & words
    assert not re.search(r"\d{7,}", text) and "_bytes" not in text
    assert "GiB" in text and " t/s" in text
