"""Downloads: resumable across interruptions and restarts, verified, cancellable, planned."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from engine.hub.downloads import (
    Destination,
    Progress,
    Status,
    discard,
    download,
    pending_downloads,
    plan_download,
    with_free_bytes,
)
from engine.hub.errors import (
    DownloadInProgressError,
    HubNotFoundError,
    HubOfflineError,
    IntegrityError,
    NotEnoughDiskError,
)
from engine.paths import paths
from tests.engine.hub_fixtures import go_offline, hub_fixture  # noqa: F401
from tests.helpers.hub_server import HubServer, write_split_llama

REPO = "someone/Big-GGUF"
NAME = "big-Q4_K_M.gguf"


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 MB of random bytes: several network blocks, so a download can stop midway."""
    path = tmp_path_factory.mktemp("blobs") / NAME
    path.write_bytes(os.urandom(8 << 20))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ranges(hub: HubServer) -> list[str]:
    return [r for method, path, r in hub.requests if method == "GET" and "/cdn/" in path]


def test_download_lands_in_the_model_folder_verified_with_progress(
        hub: HubServer, big_file: Path, llama_gguf: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    hub.add_file(REPO, "big-Q8_0.gguf", llama_gguf)
    seen: list[Progress] = []
    result = download(f"{REPO}:Q4_K_M", progress=seen.append)
    assert result.status is Status.COMPLETE
    assert result.model_path == paths().models / REPO / NAME
    assert _sha(result.model_path) == _sha(big_file)
    assert seen and seen[-1].done_bytes == seen[-1].total_bytes == big_file.stat().st_size
    assert [p.done_bytes for p in seen] == sorted(p.done_bytes for p in seen)
    assert not list(result.model_path.parent.glob("*.part")) and not pending_downloads()
    from engine.hub.library import find_downloaded

    assert find_downloaded(f"hf:{REPO}/{NAME}") == result.model_path
    assert find_downloaded(f"hf:{REPO}/big-Q8_0.gguf") is None


def test_dropped_connection_resumes_from_where_it_stopped(
        hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    hub.cut_after[NAME] = 3_000_000
    result = download(f"{REPO}:Q4_K_M")
    assert result.status is Status.COMPLETE
    assert _sha(result.model_path) == _sha(big_file)
    ranges = _ranges(hub)
    assert len(ranges) == 2 and ranges[0] == "bytes=0-"
    resumed_at = int(ranges[1].removeprefix("bytes=").rstrip("-"))
    assert 2_000_000 < resumed_at <= 3_000_000
    # only what was lost in flight is fetched twice
    assert hub.served(NAME) == big_file.stat().st_size + 3_000_000 - resumed_at


def test_paused_download_resumes_after_a_restart_and_verifies(
        hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    stop = threading.Event()
    paused = download(f"{REPO}:Q4_K_M", progress=lambda p: stop.set(), cancel=stop)
    assert paused.status is Status.PAUSED
    (pending,) = pending_downloads()
    assert 0 < pending.have_bytes < pending.size == big_file.stat().st_size
    # a new process would find the partial file through a fresh plan
    plan = plan_download(f"{REPO}:Q4_K_M")
    assert plan.items[0].have_bytes == pending.have_bytes
    assert plan.remaining_bytes == pending.size - pending.have_bytes
    served_before = hub.served(NAME)
    result = download(plan)
    assert result.status is Status.COMPLETE
    assert _sha(result.model_path) == _sha(big_file)
    assert _ranges(hub)[-1] == f"bytes={pending.have_bytes}-"
    assert result.bytes_downloaded == pending.size - pending.have_bytes
    assert hub.served(NAME) - served_before <= pending.size - pending.have_bytes
    assert not pending_downloads()


def test_corrupted_download_is_detected_and_removed(hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    hub.corrupt.add(NAME)
    with pytest.raises(IntegrityError, match="sha256"):
        download(f"{REPO}:Q4_K_M")
    folder = paths().models / REPO
    assert not (folder / NAME).exists() and not list(folder.glob("*.part"))
    assert not pending_downloads()


def test_refuses_to_start_without_room_on_disk(hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    plan = plan_download(f"{REPO}:Q4_K_M")
    assert plan.free_bytes > 0 and plan.fits_on_disk
    with pytest.raises(NotEnoughDiskError, match="free"):
        download(with_free_bytes(plan, big_file.stat().st_size // 2))
    assert hub.served(NAME) == 0
    assert not (paths().models / REPO).exists()


def test_cancel_for_good_removes_the_partial(hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    stop = threading.Event()
    download(f"{REPO}:Q4_K_M", progress=lambda p: stop.set(), cancel=stop)
    plan = plan_download(f"{REPO}:Q4_K_M")
    assert discard(plan) > 0
    assert not pending_downloads() and not list((paths().models / REPO).glob("*.part"))


def test_split_model_into_the_hub_cache(hub: HubServer, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    shards = write_split_llama(tmp_path / "tiny-F16.gguf", shards=2)
    for p in shards:
        hub.add_file("someone/Tiny-GGUF", f"F16/{p.name}", p)
    result = download("someone/Tiny-GGUF:F16", destination=Destination.HUB_CACHE)
    assert result.status is Status.COMPLETE and len(result.files) == 2
    repo_dir = tmp_path / "hf-cache" / "models--someone--Tiny-GGUF"
    commit = (repo_dir / "refs" / "main").read_text()
    for got, src in zip(result.files, shards, strict=True):
        assert got.parent == repo_dir / "snapshots" / commit / "F16"
        assert got.is_symlink() and got.resolve().parent == repo_dir / "blobs"
        assert got.resolve().name == _sha(src) and _sha(got) == _sha(src)
    from engine.hub.library import find_downloaded

    assert find_downloaded(f"hf:someone/Tiny-GGUF/F16/{shards[0].name}") == result.files[0]
    # pulled again (or its blobs already cached): nothing moves over the network
    served = sum(hub.served(f"F16/{p.name}") for p in shards)
    again = download("someone/Tiny-GGUF:F16", destination=Destination.HUB_CACHE)
    assert again.status is Status.COMPLETE and again.bytes_downloaded == 0
    assert sum(hub.served(f"F16/{p.name}") for p in shards) == served


def test_a_complete_file_is_not_downloaded_again(hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    download(f"{REPO}:Q4_K_M")
    plan = plan_download(f"{REPO}:Q4_K_M")
    assert plan.remaining_bytes == 0
    assert download(plan).bytes_downloaded == 0
    assert hub.served(NAME) == big_file.stat().st_size


def test_unknown_quant_lists_what_the_repo_has(hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    with pytest.raises(HubNotFoundError, match="Q4_K_M"):
        plan_download(f"{REPO}:Q2_K")


def test_offline_fails_at_once_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    go_offline(monkeypatch)
    with pytest.raises(HubOfflineError, match="offline"):
        download(f"{REPO}:Q4_K_M")


def test_one_writer_per_download_stale_locks_are_taken_over(
        hub: HubServer, big_file: Path) -> None:
    import subprocess
    import sys

    hub.add_file(REPO, NAME, big_file)
    plan = plan_download(f"{REPO}:Q4_K_M")
    lock = plan.items[0].partial.with_name(plan.items[0].partial.name + ".lock")
    lock.parent.mkdir(parents=True)
    lock.write_text(str(os.getppid()))  # a live process holds it
    with pytest.raises(DownloadInProgressError, match="process"):
        download(plan)
    assert hub.served(NAME) == 0 and lock.exists()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    lock.write_text(gone)  # left by a process that has exited
    assert download(plan).status is Status.COMPLETE
    assert not lock.exists()


def test_the_same_download_twice_in_one_process_is_refused(
        hub: HubServer, big_file: Path) -> None:
    hub.add_file(REPO, NAME, big_file)
    started, release = threading.Event(), threading.Event()

    def slow(progress: Progress) -> None:
        started.set()
        release.wait(10)

    worker = threading.Thread(target=download, args=(f"{REPO}:Q4_K_M",),
                              kwargs={"progress": slow})
    worker.start()
    try:
        assert started.wait(10)
        with pytest.raises(DownloadInProgressError, match="already"):
            download(f"{REPO}:Q4_K_M")
    finally:
        release.set()
        worker.join(10)
    assert _sha(paths().models / REPO / NAME) == _sha(big_file)


def test_a_network_that_goes_quiet_ends_in_a_timeout_and_keeps_the_partial(
        hub: HubServer, big_file: Path) -> None:
    import time

    hub.add_file(REPO, NAME, big_file)
    hub.stall_after[NAME] = 1 << 20
    started = time.monotonic()
    with pytest.raises(HubOfflineError):
        download(f"{REPO}:Q4_K_M", timeout=0.5)
    assert time.monotonic() - started < 10
    (pending,) = pending_downloads()
    assert pending.have_bytes >= 1 << 20
