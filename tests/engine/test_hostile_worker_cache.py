"""``loadout worker --cache`` cannot fill the disk: the tensor cache stays under its bound
(least recently used files go first), in a real worker process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.rpc import prune_cache
from tests.engine.test_rpc_worker import ROOT, _free_port, _wait_listening


def _fill(folder: Path, count: int, size: int, start: float) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(count):
        path = folder / f"{i:064x}"
        path.write_bytes(os.urandom(size))
        os.utime(path, (start + i, start + i))
        files.append(path)
    return files


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_prune_keeps_the_most_recently_used(tmp_path: Path) -> None:
    files = _fill(tmp_path, 10, 1000, time.time() - 100)
    assert prune_cache(tmp_path, 3500) == 7000
    assert [p.exists() for p in files] == [False] * 7 + [True] * 3
    assert prune_cache(tmp_path, 3500) == 0


@pytest.mark.slow
def test_a_worker_keeps_its_cache_under_the_bound(loadout_home: Path) -> None:
    cache = loadout_home / "cache" / "rpc"
    _fill(cache, 20, 10_000, time.time() - 100)  # left by an earlier run
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadout", "worker", "--port", str(port), "--cache",
         "--cache-max-gb", str(50_000 / (1 << 30))],
        cwd=ROOT, env={**os.environ, "LOADOUT_HOME": str(loadout_home)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_listening(port, proc)
        assert _size(cache) <= 50_000
        _fill(cache / "more", 20, 10_000, time.time())  # what mains send while it runs
        deadline = time.monotonic() + 15
        while _size(cache) > 50_000 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _size(cache) <= 50_000
    finally:
        proc.kill()
        proc.wait(timeout=10)
