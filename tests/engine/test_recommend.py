"""The recommender on rig files: the machines users have, the choices they should get.

The catalog here lists synthetic models of real shapes (3B, 8B, 32B, 70B dense and a
30B-A3B MoE; header-only GGUFs) served by the local hub, so every figure comes from real
headers, the hub's listing sizes and the real planner.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.hub.catalog import Catalog, load_catalog
from engine.hub.recommend import Fit, Recommendations, fit_badge, recommend
from loadout.cli import main
from planner.inventory import Inventory
from tests.engine.hub_fixtures import use_hub
from tests.helpers.gguf_factory import Shape, write_llama, write_qwen3moe
from tests.helpers.hub_server import HubServer

GB = 1000**3
GIB = 1 << 30

SHAPES: dict[str, tuple[str, Shape]] = {
    "small-3b": ("llama", Shape(n_layers=28, n_embd=3072, n_head=24, n_head_kv=8,
                                head_dim=128, n_ff=8192, n_vocab=32000, n_ctx_train=131072)),
    "mid-8b": ("llama", Shape(n_layers=32, n_embd=4096, n_head=32, n_head_kv=8, head_dim=128,
                              n_ff=14336, n_vocab=32000, n_ctx_train=131072)),
    "dense-32b": ("llama", Shape(n_layers=64, n_embd=5120, n_head=40, n_head_kv=8,
                                 head_dim=128, n_ff=25600, n_vocab=32000, n_ctx_train=40960)),
    "dense-70b": ("llama", Shape(n_layers=80, n_embd=8192, n_head=64, n_head_kv=8,
                                 head_dim=128, n_ff=28672, n_vocab=32000, n_ctx_train=131072)),
    "moe-30b-a3b": ("qwen3moe", Shape(n_layers=48, n_embd=2048, n_head=32, n_head_kv=4,
                                      head_dim=128, n_ff=6144, n_vocab=32000,
                                      n_ctx_train=40960, n_expert=128, n_expert_used=8,
                                      n_ff_exp=768)),
}
QUANTS = {"Q8_0": "Q8_0", "Q4_K_M": "Q4_K"}
LOW_BIT = ("dense-70b", "Q2_K", "Q2_K")  # model, quant, ggml type
TASKS = {"chat": 2, "code": 2, "agent": 2, "math": 2, "creative": 2}


def _gpu(name: str, gib: int, gbps: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "vendor": extra.pop("vendor", "nvidia"),
            "backend": extra.pop("backend", "cuda"), "total_bytes": gib * GIB,
            "free_bytes": gib * GIB - 400 * (1 << 20), "bandwidth_gbps": gbps,
            "pcie_gbps": extra.pop("pcie_gbps", 16.0), "tflops_fp16": extra.pop("tflops", 40.0),
            **extra}


def _host(gib: int, gbps: float, cores: int = 8) -> dict[str, Any]:
    return {"cpu": "test CPU", "cores": cores, "threads": 2 * cores,
            "ram_total_bytes": gib * GIB, "ram_available_bytes": int(gib * GIB * 0.8),
            "bandwidth_gbps": gbps}


NVME = [{"path": "/", "kind": "nvme", "read_gbps": 3.0}]
RIGS: dict[str, dict[str, Any]] = {
    "laptop-8gb": {"gpus": [_gpu("RTX 4060 Laptop", 8, 256.0, pcie_gbps=8.0,
                                 drives_display=True)], "host": _host(16, 60.0), "disks": NVME},
    "12gb-48gb": {"gpus": [_gpu("RTX 3060", 12, 360.0)], "host": _host(48, 50.0),
                  "disks": NVME},
    "24gb": {"gpus": [_gpu("RTX 4090", 24, 1008.0, tflops=165.0)], "host": _host(64, 80.0),
             "disks": NVME},
    "2x24gb": {"gpus": [_gpu("RTX 3090", 24, 936.0, tflops=71.0),
                        _gpu("RTX 3090", 24, 936.0, tflops=71.0)],
               "host": _host(128, 80.0, cores=16), "disks": NVME},
    "mac-32gb": {"gpus": [{**_gpu("Apple M2 Pro", 21, 200.0, vendor="apple", backend="metal",
                                  pcie_gbps=0.0, tflops=13.6, unified_memory=True,
                                  drives_display=True)}],
                 "host": _host(32, 200.0, cores=12), "disks": NVME},
    "cpu-16gb": {"gpus": [], "host": _host(16, 50.0), "disks": NVME},
}


def rig(name: str) -> Inventory:
    return Inventory.from_json({"schema": "loadout.inventory/1", **RIGS[name]})


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HubServer, Path]]:
    """A local hub serving every synthetic model in three quantizations, and its catalog."""
    folder = tmp_path_factory.mktemp("market")
    server = HubServer().start()
    entries = []
    for model_id, (arch, shape) in SHAPES.items():
        repo = f"test/{model_id}-GGUF"
        quants = dict(QUANTS)
        if model_id == LOW_BIT[0]:
            quants[LOW_BIT[1]] = LOW_BIT[2]
        for quant, wtype in quants.items():
            s = Shape(**{**shape.__dict__, "weight_type": wtype})
            path = folder / f"{model_id}-{quant}.gguf"
            writer = write_qwen3moe if arch == "qwen3moe" else write_llama
            writer(path, s, header_only=True)
            server.add_file(repo, path.name, path, sha256=f"{len(entries):064x}")
        entries.append({"id": model_id, "name": model_id, "family": "test", "repo": repo,
                        "kind": "moe" if arch == "qwen3moe" else "dense",
                        "licence": "apache-2.0",
                        "provenance": {"base_model": "test", "quantized_by": "test"},
                        "tasks": TASKS, "quants": list(quants)})
    catalog = folder / "catalog.json"
    catalog.write_text(json.dumps({"schema": "loadout.catalog/1", "models": entries}))
    # the same 8B files rated for code by one entry and for creative writing by another
    rated = [{**entries[1], "id": model_id, "name": model_id, "tasks": tasks}
             for model_id, tasks in (("coder-8b", {**TASKS, "code": 3, "creative": 0}),
                                     ("writer-8b", {**TASKS, "code": 0, "creative": 3}))]
    (folder / "rated.json").write_text(json.dumps({"schema": "loadout.catalog/1",
                                                   "models": rated}))
    try:
        yield server, catalog
    finally:
        server.stop()


@pytest.fixture
def catalog(market: tuple[HubServer, Path], monkeypatch: pytest.MonkeyPatch) -> Catalog:
    server, path = market
    use_hub(monkeypatch, server.url)
    return load_catalog(path=path)


def _by_model(result: Recommendations) -> dict[str, Any]:
    return {r.model_id: r for r in result.items}


def _check_invariants(result: Recommendations, catalog: Catalog) -> None:
    assert not result.skipped
    keys = [(r.tier, -r.score) for r in result.items]
    assert keys == sorted(keys)
    for r in result.items:
        assert r.plan is not None and fit_badge(r.plan) is r.fit
        model = catalog.get(r.model_id)
        assert model is not None
        option = next(q for q in model.quants if q.quant == r.quant)
        assert r.download_bytes == option.size_bytes
        assert (r.tier == 0) == (r.fit not in (Fit.DOES_NOT_FIT, Fit.STREAMS_FROM_DISK)
                                 and r.decode_tps >= 10.0)


@pytest.mark.parametrize("name", list(RIGS))
def test_every_rig_gets_a_usable_first_choice(name: str, catalog: Catalog) -> None:
    result = recommend(rig(name), task="chat", catalog=catalog)
    _check_invariants(result, catalog)
    top = result.items[0]
    assert top.tier == 0 and top.decode_tps >= 10.0
    assert len(result.items) == len(catalog.models)


def test_laptop_8gb_big_dense_models_are_not_usable(catalog: Catalog) -> None:
    result = recommend(rig("laptop-8gb"), task="chat", catalog=catalog, all_quants=True)
    for r in result.items:
        if r.model_id in ("dense-32b", "dense-70b"):
            assert r.tier > 0 and r.fit is not Fit.ALL_ON_GPU
    small = [r for r in result.items if r.model_id == "small-3b" and r.quant == "Q4_K_M"]
    assert small[0].fit is Fit.ALL_ON_GPU


def test_12gb_with_48gb_ram_keeps_moe_experts_in_ram_at_a_usable_speed(
        catalog: Catalog) -> None:
    result = recommend(rig("12gb-48gb"), task="chat", catalog=catalog, all_quants=True)
    moe_q4 = next(r for r in result.items if (r.model_id, r.quant) == ("moe-30b-a3b", "Q4_K_M"))
    assert moe_q4.fit is Fit.EXPERTS_IN_RAM and moe_q4.tier == 0
    dense_q4 = next(r for r in result.items if (r.model_id, r.quant) == ("dense-32b", "Q4_K_M"))
    assert dense_q4.fit is Fit.PARTLY_IN_RAM
    assert moe_q4.decode_tps > 2 * dense_q4.decode_tps


def test_more_vram_moves_the_same_file_up_the_badges(catalog: Catalog) -> None:
    order = list(Fit)
    for model_id in ("dense-32b", "dense-70b", "moe-30b-a3b"):
        badges = []
        for name in ("laptop-8gb", "12gb-48gb", "24gb", "2x24gb"):
            result = recommend(rig(name), catalog=catalog, all_quants=True)
            pick = next(r for r in result.items if (r.model_id, r.quant) == (model_id, "Q4_K_M"))
            badges.append(order.index(pick.fit))
        assert badges == sorted(badges, reverse=True), (model_id, badges)
    two = recommend(rig("2x24gb"), catalog=catalog, all_quants=True)
    seventy = next(r for r in two.items if (r.model_id, r.quant) == ("dense-70b", "Q4_K_M"))
    assert seventy.fit is Fit.ALL_ON_GPU


def test_mac_unified_memory_counts_as_gpu(catalog: Catalog) -> None:
    result = recommend(rig("mac-32gb"), catalog=catalog, all_quants=True)
    mid = next(r for r in result.items if (r.model_id, r.quant) == ("mid-8b", "Q8_0"))
    assert mid.fit is Fit.ALL_ON_GPU


def test_cpu_only_machine_gets_ram_badges_and_small_or_sparse_models_first(
        catalog: Catalog) -> None:
    result = recommend(rig("cpu-16gb"), task="chat", catalog=catalog)
    assert {r.fit for r in result.items} <= {Fit.IN_RAM, Fit.STREAMS_FROM_DISK,
                                            Fit.DOES_NOT_FIT}
    assert result.items[0].model_id in ("small-3b", "moe-30b-a3b")
    seventy = _by_model(result)["dense-70b"]
    assert seventy.tier > 0


def test_task_ratings_reorder_otherwise_equal_models(
        market: tuple[HubServer, Path], catalog: Catalog) -> None:
    rated = load_catalog(path=market[1].with_name("rated.json"))
    for task, first in (("code", "coder-8b"), ("creative", "writer-8b")):
        seen: list[tuple[int, int]] = []
        items = recommend(rig("24gb"), task=task, catalog=rated,
                          progress=lambda d, t, seen=seen: seen.append((d, t))).items
        assert seen == [(0, 2), (1, 2), (2, 2)]
        assert items[0].model_id == first
        assert len(items) == 2, recommend(rig("24gb"), task=task, catalog=rated).skipped
        assert items[0].decode_tps == items[1].decode_tps


def test_low_bit_files_are_tiered_low_and_warned_for_agent_work(catalog: Catalog) -> None:
    result = recommend(rig("24gb"), task="agent", catalog=catalog, all_quants=True)
    low = next(r for r in result.items if (r.model_id, r.quant) == ("dense-70b", "Q2_K"))
    assert low.quality_tier == "low" and "low_bits_for_task" in low.warnings
    q8 = next(r for r in result.items if (r.model_id, r.quant) == ("mid-8b", "Q8_0"))
    assert q8.quality_tier == "near_lossless" and not {"low_bits", "low_bits_for_task"} & set(
        q8.warnings)
    chat = recommend(rig("24gb"), task="chat", catalog=catalog, all_quants=True)
    low_chat = next(r for r in chat.items if (r.model_id, r.quant) == ("dense-70b", "Q2_K"))
    assert "low_bits" in low_chat.warnings


def test_cli_prints_one_json_document(market: tuple[HubServer, Path], catalog: Catalog,
                                      tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    _, path = market
    rig_file = tmp_path / "rig.json"
    rig_file.write_text(json.dumps({"schema": "loadout.inventory/1", **RIGS["12gb-48gb"]}))
    code = main(["recommend", "--rig", str(rig_file), "--task", "code", "--catalog",
                 str(path), "--json", "--limit", "3"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "loadout.recommend/1" and doc["task"] == "code"
    assert doc["catalog"].startswith("recent: listings from")  # listed by the fixture
    assert len(doc["recommendations"]) == 3
    first = doc["recommendations"][0]
    assert set(first) >= {"model", "quant", "spec", "fit", "predicted", "quality_tier",
                          "warnings", "download_bytes", "speculative"}
    assert first["spec"].startswith("hf:test/")


def test_cli_offline_and_never_listed_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from tests.engine.hub_fixtures import go_offline

    go_offline(monkeypatch)
    rig_file = tmp_path / "rig.json"
    rig_file.write_text(json.dumps({"schema": "loadout.inventory/1", **RIGS["24gb"]}))
    assert main(["recommend", "--rig", str(rig_file)]) == 1
    captured = capsys.readouterr()
    assert "offline: never listed" in captured.err and captured.out == ""


def test_cli_text_words_the_warnings_as_the_wizard_does(
        market: tuple[HubServer, Path], catalog: Catalog, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from app.texts import code_sentence

    _, path = market
    rig_file = tmp_path / "rig.json"
    rig_file.write_text(json.dumps({"schema": "loadout.inventory/1", **RIGS["24gb"]}))
    for task, code in (("agent", "low_bits_for_task"), ("chat", "low_bits")):
        argv = ["recommend", "--rig", str(rig_file), "--task", task, "--catalog", str(path),
                "--all-quants"]
        assert main([*argv, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert any(code in r["warnings"] for r in doc["recommendations"])  # JSON: codes
        assert main(argv) == 0
        text = capsys.readouterr().out
        sentence = code_sentence(code) if code != "low_bits" else \
            "About 3 bits per weight or fewer: answers get noticeably worse."
        assert f"! {sentence}" in text
        assert code not in text.replace(sentence, "")
