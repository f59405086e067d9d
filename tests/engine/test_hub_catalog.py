"""The catalog: curated families, sizes only from the hub's listings, honest when offline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.hub.catalog import TASKS, load_catalog, load_entries
from engine.hub.quants import quant_of
from tests.engine.hub_fixtures import go_offline, hub_fixture  # noqa: F401
from tests.helpers.hub_server import HubServer


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_bundled_catalog_is_valid_and_invents_no_sizes() -> None:
    entries = load_entries()
    assert len(entries) >= 15
    assert len({e["id"] for e in entries}) == len(entries)
    assert {e["kind"] for e in entries} == {"dense", "moe"}
    assert any(e["mtp_heads"] for e in entries)
    assert not {k for k in _keys(entries) if "size" in k or "bytes" in k}
    # parameter counts only in the published shape (for offline estimates), never a file size
    unshaped = [{k: v for k, v in e.items() if k != "shape"} for e in entries]
    assert not {k for k in _keys(unshaped) if "params" in k}
    for e in entries:
        shape = e["shape"]
        assert {"params_b", "layers", "embd", "heads", "kv_heads", "head_dim", "vocab",
                "ctx"} <= set(shape), e["id"]
        assert (e["kind"] == "moe") == ("active_b" in shape), e["id"]
        named = re.search(r"(\d+(?:\.\d+)?)B\b", e["name"])  # "8B", "30B-A3B": the total
        if named:
            assert abs(shape["params_b"] / float(named[1]) - 1) < 0.2, e["id"]
    for e in entries:
        assert e["licence"] and e["provenance"]["base_model"] and e["provenance"]["quantized_by"]
        assert set(e["tasks"]) == set(TASKS) and all(0 <= s <= 3 for s in e["tasks"].values())
        _owner, name = e["repo"].split("/")
        assert name.lower().endswith("gguf")
        for q in e["quants"]:  # every label is one the file-name matcher recognises
            assert quant_of(f"{name}-{q}.gguf") == q, (e["id"], q)


def _write_catalog(tmp_path: Path, repos: list[str]) -> Path:
    doc = {"schema": "loadout.catalog/1", "models": [
        {"id": repo.split("/")[1].lower(), "name": repo, "family": "test", "repo": repo,
         "kind": "dense", "licence": "apache-2.0",
         "provenance": {"base_model": "x", "quantized_by": "y"},
         "tasks": {"chat": 2, "code": 1}, "quants": ["Q8_0", "Q4_K_M", "IQ3_XXS"]}
        for repo in repos]}
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(doc))
    return path


def test_sizes_come_from_the_listing_and_stay_known_offline(
        hub: HubServer, tmp_path: Path, llama_gguf: Path, moe_gguf: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    hub.add_file("org/A-GGUF", "A-Q4_K_M.gguf", llama_gguf)
    hub.add_file("org/A-GGUF", "Q8_0/A-Q8_0.gguf", moe_gguf)
    hub.add_file("org/A-GGUF", "README.md", llama_gguf)
    path = _write_catalog(tmp_path, ["org/A-GGUF", "org/Gone-GGUF"])
    online = load_catalog(path=path)
    assert online.online and online.status == "online"
    a = online.get("a-gguf")
    assert a is not None
    sizes = {q.quant: q.size_bytes for q in a.quants}
    assert sizes == {"Q8_0": moe_gguf.stat().st_size, "Q4_K_M": llama_gguf.stat().st_size,
                     "IQ3_XXS": None}
    assert [q.spec for q in a.available] == ["hf:org/A-GGUF/Q8_0/A-Q8_0.gguf",
                                             "hf:org/A-GGUF/A-Q4_K_M.gguf"]
    gone = online.get("gone-gguf")
    assert gone is not None and not gone.available and gone.listed_at is None

    asked = len(hub.requests)  # recent listings are not asked for again (only the missing)
    recent = load_catalog(path=path)
    assert [p for _, p, _ in hub.requests[asked:]] == ["/api/models/org/Gone-GGUF/tree/main"]
    assert recent.get("a-gguf") == a
    (tmp_path / "only-a").mkdir()
    asked = len(hub.requests)
    only_a = load_catalog(path=_write_catalog(tmp_path / "only-a", ["org/A-GGUF"]))
    assert only_a.status.startswith("recent: listings from") and len(hub.requests) == asked

    go_offline(monkeypatch)
    offline = load_catalog(path=path)
    assert not offline.online and offline.status.startswith("offline: listings from")
    assert offline.get("a-gguf") == a


def test_offline_and_never_listed_says_so(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    go_offline(monkeypatch)
    catalog = load_catalog(path=_write_catalog(tmp_path, ["org/A-GGUF"]))
    assert catalog.status == "offline: never listed"
    assert all(q.size_bytes is None for m in catalog.models for q in m.quants)


def test_paginated_listings_are_followed(hub: HubServer, tmp_path: Path,
                                         llama_gguf: Path) -> None:
    from engine.hub.hubapi import list_files

    hub.page_size = 2
    names = [f"m-{q}.gguf" for q in ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16")]
    for name in names:
        hub.add_file("org/Paged-GGUF", name, llama_gguf)
    files = list_files("org/Paged-GGUF")
    assert sorted(f.path for f in files) == sorted(names)
    assert sum(1 for _, p, _ in hub.requests if "/tree/" in p) == 3
