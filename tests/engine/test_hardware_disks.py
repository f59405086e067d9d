"""Model-folder disks: device kind from (fake) sysfs, and the bounded real read probe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.hardware import Sources, detect
from engine.hardware.disks import block_device, largest_file, probe_read
from planner.inventory import DiskKind


def _sources(cache: Path) -> Sources:
    """Detection with its figures cached in ``cache``; the CPU core probe (a second in
    a child process, tested in test_hardware_host.py) reports nothing here."""
    return Sources(cache_dir=cache, core_probe=lambda cancelled: None)


MIB = 2**20


def _fake_block(root: Path, folder: Path, disk: str, part: str | None, rotational: str,
                slave_of: str | None = None) -> Path:
    """Make ``/sys/dev/block/<folder's dev>`` point at a fake disk (or a partition of it)."""
    st = os.stat(folder)
    devices = root / "devices" / "virtual" / "block"
    disk_dir = devices / disk
    (disk_dir / "queue").mkdir(parents=True)
    (disk_dir / "queue" / "rotational").write_text(rotational + "\n")
    (disk_dir / "size").write_text("1000215216\n")
    target = disk_dir
    if part:
        target = disk_dir / part
        target.mkdir()
        (target / "partition").write_text("2\n")
    (root / "class" / "block").mkdir(parents=True, exist_ok=True)
    (root / "class" / "block" / disk).symlink_to(disk_dir)
    if slave_of:  # a device-mapper volume on top of the disk
        dm = devices / slave_of
        (dm / "slaves").mkdir(parents=True)
        (dm / "slaves" / disk).symlink_to(disk_dir)
        target = dm
    (root / "dev" / "block").mkdir(parents=True)
    (root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(target)
    return root


@pytest.mark.skipif(not hasattr(os, "major"), reason="sysfs and device numbers are Linux's")
@pytest.mark.parametrize(("disk", "part", "rotational", "slave_of", "kind"), [
    ("nvme0n1", "nvme0n1p2", "0", None, DiskKind.NVME),
    ("sda", "sda1", "0", None, DiskKind.SSD),
    ("sdb", None, "1", None, DiskKind.HDD),
    ("nvme1n1", None, "0", "dm-0", DiskKind.NVME),
    ("vda", "vda1", "1", None, DiskKind.UNKNOWN),
])
def test_device_kind_from_sysfs(tmp_path: Path, disk: str, part: str | None, rotational: str,
                                slave_of: str | None, kind: DiskKind) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    root = _fake_block(tmp_path / "sys", folder, disk, part, rotational, slave_of)
    device = block_device(folder, sys_root=root)
    assert (device.name, device.kind) == (disk, kind)
    assert device.cache_key == f"{disk}:1000215216"


@pytest.mark.skipif(not hasattr(os, "major"), reason="device numbers are POSIX's")
def test_real_device_of_this_checkout_is_found() -> None:
    device = block_device(Path(__file__).parent)
    st = os.stat(Path(__file__).parent)
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if link.exists():
        assert device.name and device.name in link.resolve().parts
    assert block_device(Path("/no/such/folder")).notes == ("folder_missing",)


def test_read_probe_reads_the_largest_file_within_its_bounds(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    big = tmp_path / "sub" / "model.gguf"
    with big.open("wb") as f:
        for _ in range(40):
            f.write(os.urandom(MIB))
    (tmp_path / "small.txt").write_text("x")
    assert largest_file(tmp_path) == big
    result = probe_read(tmp_path, max_bytes=16 * MIB, min_file_bytes=32 * MIB, chunk=4 * MIB)
    assert result.bytes_read == 16 * MIB and result.read_gbps > 0
    assert "temp_file" not in result.notes
    whole = probe_read(tmp_path, max_bytes=256 * MIB, min_file_bytes=32 * MIB)
    assert whole.bytes_read == 40 * MIB  # a file smaller than the bound is read once


def test_read_probe_writes_and_removes_a_temp_file_when_nothing_is_large(
        tmp_path: Path) -> None:
    (tmp_path / "small.gguf").write_bytes(b"GGUF" * 100)
    result = probe_read(tmp_path, temp_bytes=8 * MIB)
    assert result.bytes_read == 8 * MIB and "temp_file" in result.notes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.gguf"]


def test_a_missing_model_folder_is_explained(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    inv = detect(model_dirs=[missing], sources=_sources(tmp_path / "c"))
    (disk,) = inv.disks
    assert not disk.measured and "folder_missing" in disk.notes


def test_two_folders_on_one_disk_are_measured_once(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    inv = detect(model_dirs=[a, b], sources=_sources(tmp_path / "c"))
    first, second = inv.disks
    assert first.measured and second.measured
    assert first.read_gbps == second.read_gbps and first.device == second.device


def test_remeasure_reads_each_disk_again_and_keeps_the_others(tmp_path: Path) -> None:
    import json

    from engine.hardware.cache import FILE_NAME

    models = tmp_path / "models"
    models.mkdir()
    sources = _sources(tmp_path / "c")
    detect(model_dirs=[models], sources=sources)
    saved = json.loads((tmp_path / "c" / FILE_NAME).read_text())
    (key,) = saved["disks"]
    saved["disks"][key]["read_gbps"] = 777.0
    saved["disks"]["elsewhere:1"] = {"read_gbps": 3.5, "notes": []}
    (tmp_path / "c" / FILE_NAME).write_text(json.dumps(saved))
    assert detect(model_dirs=[models], sources=sources).disks[0].read_gbps == 777.0
    again = detect(model_dirs=[models], remeasure=True, sources=sources)
    assert again.disks[0].read_gbps != 777.0 and again.disks[0].measured
    disks = json.loads((tmp_path / "c" / FILE_NAME).read_text())["disks"]
    assert disks["elsewhere:1"]["read_gbps"] == 3.5


def _model_file(folder: Path, mib: int) -> Path:
    path = folder / "model.gguf"
    with path.open("wb") as f:
        for _ in range(mib):
            f.write(os.urandom(MIB))
        f.flush()
        os.fsync(f.fileno())  # clean pages: the probe can drop them
    return path


def test_a_file_another_process_keeps_mapped_is_flagged_as_cached(tmp_path: Path) -> None:
    import mmap

    path = _model_file(tmp_path, 66)  # above the 64 MiB a model file needs
    clean = probe_read(tmp_path, min_file_bytes=MIB)
    assert "page_cache_suspected" not in clean.notes
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mapped:
        assert sum(mapped[i] for i in range(0, len(mapped), 4096)) >= 0  # fault every page in
        cached = probe_read(tmp_path, min_file_bytes=MIB)
        assert "page_cache_suspected" in cached.notes
        inv = detect(model_dirs=[tmp_path], sources=_sources(tmp_path / "c"))
    (disk,) = inv.disks
    assert not disk.measured and "read_nominal" in disk.notes  # a RAM speed is not kept


def test_sparse_and_partial_files_are_not_read_as_the_disk(tmp_path: Path) -> None:
    sparse = tmp_path / "big-70b.gguf"
    with sparse.open("wb") as f:
        f.truncate(512 * MIB)  # all hole: reads come from zero pages, not the disk
    if sparse.stat().st_blocks * 512 >= sparse.stat().st_size:
        pytest.skip("this filesystem does not keep sparse files")
    (tmp_path / "next.gguf.part").write_bytes(os.urandom(3 * MIB))
    (tmp_path / "x.incomplete").write_bytes(os.urandom(3 * MIB))
    small = tmp_path / "small.gguf"
    small.write_bytes(os.urandom(MIB))
    assert largest_file(tmp_path) == small
    result = probe_read(tmp_path, min_file_bytes=MIB // 2, temp_bytes=8 * MIB)
    assert "temp_file" not in result.notes and result.bytes_read == MIB
    small.unlink()
    fallback = probe_read(tmp_path, min_file_bytes=MIB, temp_bytes=8 * MIB)
    assert "temp_file" in fallback.notes and fallback.bytes_read == 8 * MIB


def test_a_models_folder_that_cannot_be_created_is_explained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setenv("LOADOUT_HOME", str(blocker))
    inv = detect(measure=False, sources=_sources(tmp_path / "c"))
    (disk,) = inv.disks
    assert disk.path == str(blocker / "models") and not disk.measured
    assert "models_folder_unusable" in disk.notes and "read_nominal" in disk.notes
    assert "models_folder_unusable" in inv.notes


def _as_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as Windows's Python sees the OS: no device numbers, no fadvise, no
    readv, no pread, no load average (what ``loadout detect`` crashed on there)."""
    import sys

    monkeypatch.setattr(sys, "platform", "win32")
    for name in ("major", "minor", "posix_fadvise", "readv", "pread", "getloadavg",
                 "sched_getaffinity"):
        monkeypatch.delattr(os, name, raising=False)


def test_on_windows_the_disk_kind_is_unknown_and_detection_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _as_windows(monkeypatch)
    device = block_device(tmp_path)
    assert (device.name, device.kind, device.notes) == ("", DiskKind.UNKNOWN,
                                                        ("device_unknown",))
    assert block_device(tmp_path / "gone").notes == ("folder_missing",)


def test_on_windows_the_read_probe_reads_and_says_the_cache_stayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "model.gguf"
    big.write_bytes(os.urandom(4 * MIB) * 10)
    _as_windows(monkeypatch)
    result = probe_read(tmp_path, max_bytes=16 * MIB, min_file_bytes=32 * MIB, chunk=4 * MIB)
    assert result.bytes_read == 16 * MIB and result.read_gbps > 0
    assert "page_cache_not_dropped" in result.notes
    empty = tmp_path / "empty"
    empty.mkdir()
    written = probe_read(empty, temp_bytes=4 * MIB)  # written in binary: 4 MiB, not more
    assert written.bytes_read == 4 * MIB and "temp_file" in written.notes
    assert list(empty.iterdir()) == []


def test_on_windows_host_threads_and_gguf_reads_need_no_posix_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    from engine.gguf_file import file_read_at
    from engine.hardware import _busy
    from engine.hardware.host import usable_threads

    data = tmp_path / "blob"
    data.write_bytes(bytes(range(256)) * 4)
    affinity = len(psutil.Process().cpu_affinity() or [])
    _as_windows(monkeypatch)
    assert usable_threads() == affinity  # psutil's affinity, as on Windows
    assert _busy(1) is False  # no load average: never called busy
    with data.open("rb") as handle:
        read_at = file_read_at(handle)
        assert read_at(250, 10) == bytes([250, 251, 252, 253, 254, 255, 0, 1, 2, 3])
        assert read_at(0, 2) == b"\x00\x01"
