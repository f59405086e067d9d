"""Downloads from a hub that lies (``..`` paths, absolute paths, lying sizes, truncated
bodies, wrong or missing hashes, a hostile commit id): nothing is written outside the
models folder, nothing corrupt is accepted, and every retry loop ends."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.hub import hubapi
from engine.hub.downloads import Destination, download, plan_download
from engine.hub.errors import (
    BadSpecError,
    HubError,
    HubNotFoundError,
    HubOfflineError,
    IntegrityError,
    UnsafeHubDataError,
    UnverifiedFileError,
)
from engine.hub.hub_ids import safe_repo_path, sha256_or_none
from engine.hub.verification import verification_of
from engine.paths import paths
from loadout.cli import main
from tests.engine.hub_fixtures import use_hub
from tests.helpers.hostile_hub import HostileHub

REPO = "someone/Hostile-GGUF"
NAME = "model-Q4_K_M.gguf"
SIZE = 3 << 20


@pytest.fixture(name="payload", scope="module")
def payload_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile-blobs") / NAME
    path.write_bytes(os.urandom(SIZE))
    return path


@pytest.fixture(name="hub")
def hub_fixture(monkeypatch: pytest.MonkeyPatch, payload: Path) -> Iterator[HostileHub]:
    server = HostileHub().start()
    server.add_file(REPO, NAME, payload)
    use_hub(monkeypatch, server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(paths().cache / "hub"))
    try:
        yield server
    finally:
        server.stop()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture(name="outside")
def outside_fixture(loadout_home: Path) -> Iterator[Path]:
    """The folder above Loadout's home: a hostile download must add nothing there except
    under the models, data and cache folders."""
    root = loadout_home.parent
    before = _files_under(root)
    yield root
    allowed = (paths().models, paths().data, paths().cache, paths().logs)
    new = [p for p in _files_under(root) - before
           if not any(p.is_relative_to(a) for a in allowed)]
    assert new == [], f"written outside the download folders: {new}"


ESCAPES = ["../../escape-Q4_K_M.gguf", "/tmp/abs-Q4_K_M.gguf", "C:/drive-Q4_K_M.gguf",
           "C:drive2-Q4_K_M.gguf", "a\\..\\..\\bs-Q4_K_M.gguf", "sub/../../x-Q4_K_M.gguf",
           "./dot-Q4_K_M.gguf", "a//b-Q4_K_M.gguf", "nul\x00-Q4_K_M.gguf", "",
           "trailing-Q4_K_M.gguf.", "x" * 2000]


@pytest.mark.parametrize("path", ESCAPES)
def test_unsafe_repo_paths_are_refused(path: str) -> None:
    assert safe_repo_path(path) is None


def test_plain_repo_paths_pass() -> None:
    for path in ("model-Q4_K_M.gguf", "sub/dir/model.gguf", "a.b-c_d/e f.gguf"):
        assert safe_repo_path(path) == path
    assert sha256_or_none('W/"' + "A" * 64 + '"') == "a" * 64
    for bad in ("../" + "a" * 61, "a" * 63, None, 5):
        assert sha256_or_none(bad) is None


def test_listing_entries_that_escape_are_left_out(hub: HostileHub, outside: Path) -> None:
    real_sha = hub.repos[REPO].files[NAME].sha256
    hub.extra_listing = [{"type": "file", "path": p, "size": 10, "lfs": {"oid": real_sha}}
                         for p in ESCAPES]
    hub.extra_listing += [
        {"type": "file", "path": "oid-Q8_0.gguf", "size": 10, "lfs": {"oid": "../../../x"}},
        {"type": "file", "path": "neg-Q8_0.gguf", "size": -5},
        {"type": "file", "path": "str-Q8_0.gguf", "size": "10"},
        {"type": "file", "path": ["list"], "size": 10}, "not-an-object"]
    listed = hubapi.list_files(REPO)
    assert [f.path for f in listed] == [NAME]
    result = download(f"{REPO}:Q4_K_M")
    assert result.files == (paths().models / REPO / NAME,)
    for spec in (f"hf:{REPO}/../../escape-Q4_K_M.gguf", f"hf:{REPO}/C:/drive-Q4_K_M.gguf"):
        with pytest.raises((BadSpecError, HubNotFoundError)):
            download(spec)


def test_a_hostile_commit_id_never_names_a_folder(hub: HostileHub, outside: Path) -> None:
    hub.commit_override = "../../../../../tmp/owned"
    with pytest.raises(UnsafeHubDataError):
        plan_download(f"{REPO}:Q4_K_M", Destination.HUB_CACHE)
    with pytest.raises(UnsafeHubDataError):
        hubapi.list_files(REPO, revision="../main")


def test_a_wrong_hash_in_the_listing_is_never_accepted(hub: HostileHub, payload: Path,
                                                       outside: Path) -> None:
    hub.add_file("liar/Repo", NAME, payload, sha256="0" * 64)
    with pytest.raises(IntegrityError):
        download("liar/Repo:Q4_K_M")
    assert not (paths().models / "liar" / "Repo" / NAME).exists()


def test_corrupt_bytes_are_never_accepted(hub: HostileHub, outside: Path) -> None:
    hub.corrupt.add(NAME)
    with pytest.raises(IntegrityError):
        download(f"{REPO}:Q4_K_M")
    assert not (paths().models / REPO / NAME).exists()


def test_a_listing_that_understates_the_size_fails_the_hash(hub: HostileHub,
                                                            outside: Path) -> None:
    hub.listed_size[NAME] = SIZE // 2
    with pytest.raises(IntegrityError):
        download(f"{REPO}:Q4_K_M")
    assert not (paths().models / REPO / NAME).exists()


@pytest.mark.parametrize("fault", ["overstated_size", "always_truncated", "short_body"])
def test_bodies_that_end_early_are_retried_a_bounded_number_of_times(
        hub: HostileHub, fault: str, outside: Path) -> None:
    if fault == "overstated_size":
        hub.listed_size[NAME] = SIZE * 2
    elif fault == "always_truncated":
        hub.truncate_every[NAME] = 256 << 10
    else:
        hub.short_body[NAME] = 256 << 10
    started = time.monotonic()
    # a lost connection or a short body: HubOfflineError; past the real end: the 416
    with pytest.raises(HubOfflineError if fault != "overstated_size" else HubError):
        download(f"{REPO}:Q4_K_M")
    assert time.monotonic() - started < 30
    assert not (paths().models / REPO / NAME).exists()
    requests = [r for r in hub.requests if r[0] == "GET" and r[1].startswith("/cdn/")]
    assert 2 <= len(requests) <= 5  # the first try and at most RETRIES more


def test_no_hash_in_the_listing_is_checked_against_the_etag(hub: HostileHub, payload: Path,
                                                            outside: Path) -> None:
    hub.no_hash.add(NAME)
    hub.etag_override[NAME] = _sha(payload)
    result = download(f"{REPO}:Q4_K_M")
    assert result.unverified == ()
    record = verification_of(result.model_path)
    assert record is not None and record.verified and record.source == "etag"
    assert record.sha256 == _sha(result.model_path)


def test_a_wrong_etag_is_never_accepted(hub: HostileHub, outside: Path) -> None:
    hub.no_hash.add(NAME)
    hub.etag_override[NAME] = "1" * 64
    with pytest.raises(IntegrityError):
        download(f"{REPO}:Q4_K_M")
    assert not (paths().models / REPO / NAME).exists()


def test_no_hash_at_all_is_refused_unless_allowed(
        hub: HostileHub, outside: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It ended "complete" with a warning: the file was kept and used unverified."""
    hub.no_hash.add(NAME)
    with pytest.raises(UnverifiedFileError, match="no sha256"):
        download(f"{REPO}:Q4_K_M")
    assert main(["pull", f"{REPO}:Q4_K_M", "--json"]) == 1
    err = capsys.readouterr().err
    assert "--allow-unverified" in err and NAME in err
    assert not (paths().models / REPO / NAME).exists()
    assert not [r for r in hub.requests if r[0] == "GET" and r[1].startswith("/cdn/")]


def test_no_hash_at_all_is_marked_unverified_and_the_cli_says_so(
        hub: HostileHub, payload: Path, outside: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    hub.no_hash.add(NAME)
    assert main(["pull", f"{REPO}:Q4_K_M", "--json", "--allow-unverified"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    target = paths().models / REPO / NAME
    assert doc["unverified"] == [str(target)]
    assert "unverified" in captured.err
    record = verification_of(target)
    assert record is not None and not record.verified and record.source is None
    assert record.sha256 == _sha(payload)
    from engine.hub.library import LibraryEntry, Source

    entry = LibraryEntry(path=target, name=NAME, source=Source.LOADOUT, size_bytes=SIZE)
    assert entry.verified is False
    assert LibraryEntry(path=target.with_name("other.gguf"), name="other",
                        source=Source.LOADOUT, size_bytes=1).verified is None


def test_an_existing_file_is_hashed_before_it_is_accepted(hub: HostileHub, payload: Path,
                                                          outside: Path) -> None:
    target = paths().models / REPO / NAME
    target.parent.mkdir(parents=True)
    target.write_bytes(b"\0" * SIZE)  # the right size, the wrong bytes
    result = download(f"{REPO}:Q4_K_M")
    assert result.bytes_downloaded == SIZE
    assert _sha(target) == _sha(payload)
    served = hub.served(NAME)
    again = download(f"{REPO}:Q4_K_M")  # now right: accepted without a byte served
    assert again.bytes_downloaded == 0 and hub.served(NAME) == served
    record = verification_of(target)
    assert record is not None and record.verified
    with open(target, "r+b") as f:  # changed in place: same size, new bytes
        f.seek(SIZE // 2)
        f.write(b"tampered")
    third = download(f"{REPO}:Q4_K_M")
    assert third.bytes_downloaded == SIZE and _sha(target) == _sha(payload)


def test_a_catalog_entry_with_an_unsafe_path_never_names_a_file(outside: Path) -> None:
    from engine.hub.downloads import _paths_for

    for path in ESCAPES:
        remote = hubapi.RemoteFile(repo=REPO, path=path, size=1, sha256=None)
        with pytest.raises(HubError):
            _paths_for(remote, Destination.MODELS, None)
