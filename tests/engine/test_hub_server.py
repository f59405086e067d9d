"""The local hub server speaks the hub's protocol: huggingface_hub's own client works on it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.engine.hub_fixtures import hub_fixture  # noqa: F401
from tests.helpers.hub_server import HubServer


def test_huggingface_hub_lists_and_downloads_from_the_local_server(
        hub: HubServer, llama_gguf: Path, tmp_path: Path) -> None:
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url

    hub.add_file("org/Tiny-GGUF", "tiny-F16.gguf", llama_gguf)
    hub.add_file("org/Tiny-GGUF", "sub/tiny-Q8_0.gguf", llama_gguf)
    sha = hashlib.sha256(llama_gguf.read_bytes()).hexdigest()
    api = HfApi(endpoint=hub.url)
    tree = {f.path: f for f in api.list_repo_tree("org/Tiny-GGUF", recursive=True)}
    assert set(tree) == {"tiny-F16.gguf", "sub", "sub/tiny-Q8_0.gguf"}
    info = api.model_info("org/Tiny-GGUF", files_metadata=True)
    assert info.siblings is not None
    assert {s.rfilename: s.lfs.sha256 for s in info.siblings if s.lfs} == {
        "tiny-F16.gguf": sha, "sub/tiny-Q8_0.gguf": sha}
    meta = get_hf_file_metadata(hf_hub_url("org/Tiny-GGUF", "tiny-F16.gguf",
                                           endpoint=hub.url), endpoint=hub.url)
    assert (meta.etag, meta.size, meta.commit_hash) == (
        sha, llama_gguf.stat().st_size, hub.repos["org/Tiny-GGUF"].commit)
    got = hf_hub_download("org/Tiny-GGUF", "sub/tiny-Q8_0.gguf", endpoint=hub.url,
                          cache_dir=tmp_path / "cache")
    assert Path(got).read_bytes() == llama_gguf.read_bytes()
    assert Path(got).resolve().name == sha
