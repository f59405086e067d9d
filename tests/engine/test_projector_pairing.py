"""A model finds its vision projector in its folder, and only one that goes with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.models import paired_projector
from loadout.cli import main
from tests.engine.hub_fixtures import hub_fixture  # noqa: F401
from tests.helpers.gguf_mmproj import VisionShape, write_vision_pair
from tests.helpers.hub_server import HubServer
from tests.planner.rigs import RTX_4090, rig


def touch(folder: Path, *names: str) -> None:
    for name in names:
        (folder / name).write_bytes(b"GGUF")


def test_a_projector_named_after_the_model_pairs_with_it(tmp_path: Path) -> None:
    touch(tmp_path, "gemma-3-4b-it-Q4_K_M.gguf", "mmproj-gemma-3-4b-it-F16.gguf",
          "mmproj-gemma-3-4b-it-F32.gguf", "llama-3-8b-Q4_K_M.gguf")
    assert paired_projector(tmp_path / "gemma-3-4b-it-Q4_K_M.gguf") == \
        tmp_path / "mmproj-gemma-3-4b-it-F16.gguf"
    assert paired_projector(tmp_path / "llama-3-8b-Q4_K_M.gguf") is None


def test_a_generic_projector_pairs_only_in_a_one_model_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    touch(repo, "Qwen2.5-VL-7B-Q4_K_M.gguf", "Qwen2.5-VL-7B-Q8_0.gguf", "mmproj-F16.gguf")
    assert paired_projector(repo / "Qwen2.5-VL-7B-Q8_0.gguf") == repo / "mmproj-F16.gguf"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    touch(mixed, "a-Q4_K_M.gguf", "b-Q4_K_M.gguf", "mmproj-F16.gguf")
    assert paired_projector(mixed / "a-Q4_K_M.gguf") is None


def test_plan_places_the_paired_projector_and_prices_an_image(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, projector = write_vision_pair(tmp_path / "pair")
    rig_file = tmp_path / "rig.json"
    rig_file.write_text(json.dumps(rig(RTX_4090).to_json()), encoding="utf-8")
    assert main(["plan", str(model), "--rig", str(rig_file), "--json", "--no-advice"]) == 0
    doc = json.loads(capsys.readouterr().out)
    proj = doc["projector"]
    gpu = next(d for d in doc["devices"] if d["id"] == "gpu0")
    assert proj["device"] == "gpu0" and doc["engine"]["mmproj_offload"] is True
    assert gpu["projector_bytes"] == proj["weights_bytes"] + proj["compute_bytes"]
    assert proj["weights_bytes"] == sum(t[1] for t in _sizes(projector))
    assert proj["image_tokens"] == VisionShape().image_tokens
    assert proj["image_ttft_s"] >= doc["predicted"]["ttft_s"]
    assert main(["plan", str(model), "--rig", str(rig_file), "--json", "--no-advice",
                 "--no-mmproj"]) == 0
    assert json.loads(capsys.readouterr().out)["projector"] is None


def _sizes(path: Path) -> list[tuple[str, int]]:
    from gguf import GGUFReader

    return [(t.name, int(t.n_bytes)) for t in GGUFReader(str(path)).tensors]


def test_a_pull_downloads_the_projector_beside_the_model_and_serve_finds_it(
        hub: HubServer, tmp_path: Path) -> None:
    from engine.hub.downloads import Status, download, plan_download

    model, projector = write_vision_pair(tmp_path / "src", stem="pixie")
    repo = "someone/Pixie-GGUF"
    hub.add_file(repo, "pixie-Q8_0.gguf", model)
    hub.add_file(repo, "pixie-F16.gguf", model)
    hub.add_file(repo, "mmproj-F16.gguf", projector)
    hub.add_file(repo, "mmproj-F32.gguf", projector)
    plan = plan_download(f"{repo}:Q8_0")
    assert [i.remote.path for i in plan.items] == ["pixie-Q8_0.gguf", "mmproj-F16.gguf"]
    assert plan.total_bytes == model.stat().st_size + projector.stat().st_size
    assert [i.remote.path for i in plan_download(f"{repo}:Q8_0", with_projector=False)
            .items] == ["pixie-Q8_0.gguf"]
    result = download(plan)
    assert result.status is Status.COMPLETE
    assert paired_projector(result.model_path) == result.model_path.with_name("mmproj-F16.gguf")


def test_the_library_lists_a_model_with_the_projector_it_reads_images_with(
        tmp_path: Path) -> None:
    from engine.hub.library import Root, Source, scan

    model, projector = write_vision_pair(tmp_path / "models")
    entries = scan([Root(tmp_path / "models", Source.LOADOUT)], read_headers=False)
    assert [(e.path, e.projector) for e in entries] == [(model, projector)]
