"""Where models are read from: the block device under a folder, its kind, its read speed.

The read probe is bounded (``max_bytes`` and ``budget_s``): it reads the largest file in
the folder (a model, ideally) or, when the folder holds nothing large, a temporary file it
writes and deletes. Before reading it asks the kernel to drop the file's cached pages
(``posix_fadvise(DONTNEED)``); where that is impossible, or the result is faster than any
disk, the figure is flagged as possibly served from the page cache.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from engine.hardware.sysfs import read_int, read_text
from planner.inventory import DiskKind

log = logging.getLogger(__name__)

MIB = 2**20
# Faster than PCIe 5.0 x4 NVMe: the read came from RAM, not from the disk.
PAGE_CACHE_SUSPECT_GBPS = 16.0
# Nominal sequential reads (GB/s) when nothing could be measured.
NOMINAL_READ_GBPS = {DiskKind.NVME: 3.0, DiskKind.SSD: 0.5, DiskKind.HDD: 0.15,
                     DiskKind.UNKNOWN: 0.5}


@dataclass(frozen=True)
class BlockDevice:
    """The whole-disk block device a folder lives on (``name`` empty when unknown)."""

    name: str
    kind: DiskKind
    size_sectors: int = 0
    notes: tuple[str, ...] = ()

    @property
    def cache_key(self) -> str:
        """Key of this disk's measurements in the probe cache (empty when unknown)."""
        return f"{self.name}:{self.size_sectors}" if self.name else ""


def _mount_source(path: Path, proc_root: Path) -> str:
    """The device a path's mount comes from (``/dev/...``), via ``mountinfo``."""
    text = read_text(proc_root / "self" / "mountinfo") or ""
    best, source = "", ""
    target = str(path)
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 2:
            continue
        mount = fields[4]
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, source = mount, tail[1]
    return source


def _whole_disk(sys_block: Path, sys_root: Path, depth: int = 0) -> BlockDevice:
    """Classify a ``/sys/class/block/X`` entry, climbing partitions and dm/md layers."""
    real = sys_block.resolve()
    if (real / "partition").exists():
        real = real.parent
    name = real.name
    slaves = sorted((real / "slaves").glob("*")) if (real / "slaves").is_dir() else []
    if slaves and depth < 4:
        return _whole_disk(sys_root / "class" / "block" / slaves[0].name, sys_root, depth + 1)
    size = read_int(real / "size") or 0
    if name.startswith("nvme"):
        return BlockDevice(name, DiskKind.NVME, size)
    if name.startswith(("loop", "zram", "ram")):
        return BlockDevice(name, DiskKind.UNKNOWN, size, ("virtual_block_device",))
    rotational = read_text(real / "queue" / "rotational")
    if name.startswith(("vd", "xvd")):  # virtio / Xen disks report rotational=1 blindly
        return BlockDevice(name, DiskKind.UNKNOWN, size, ("virtual_disk",))
    if rotational == "0":
        return BlockDevice(name, DiskKind.SSD, size)
    if rotational == "1":
        return BlockDevice(name, DiskKind.HDD, size)
    return BlockDevice(name, DiskKind.UNKNOWN, size)


def block_device(folder: Path, sys_root: Path = Path("/sys"),
                 proc_root: Path = Path("/proc")) -> BlockDevice:
    """The block device a folder lives on and its kind (NVMe / SSD / HDD / unknown)."""
    try:
        st = os.stat(folder)
    except OSError:
        return BlockDevice("", DiskKind.UNKNOWN, notes=("folder_missing",))
    if sys.platform == "win32":  # no device numbers and no sysfs: the kind is unknown
        return BlockDevice("", DiskKind.UNKNOWN, notes=("device_unknown",))
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    entry = sys_root / "dev" / "block" / f"{major}:{minor}"
    if major != 0 and entry.exists():
        return _whole_disk(entry, sys_root)
    source = _mount_source(folder.resolve(), proc_root)  # btrfs, zfs, overlay ...
    if source.startswith("/dev/"):
        entry = sys_root / "class" / "block" / Path(source).resolve().name
        if entry.exists():
            return _whole_disk(entry, sys_root)
    if source in {"tmpfs", "ramfs"}:
        return BlockDevice("", DiskKind.UNKNOWN, notes=("ram_backed",))
    return BlockDevice("", DiskKind.UNKNOWN, notes=("device_unknown",))


@dataclass(frozen=True)
class ReadProbe:
    """A measured sequential read: GB/s, bytes read, and flags about its reliability."""

    read_gbps: float
    bytes_read: int
    notes: tuple[str, ...] = ()


# Downloads in progress (ours and common tools'): their size is not their data yet.
PARTIAL_SUFFIXES = (".part", ".tmp", ".incomplete", ".partial", ".download", ".crdownload")


def is_fully_written(entry: os.DirEntry[str]) -> bool:
    """False for a download in progress or a sparse file (holes read as RAM, not disk)."""
    if entry.name.lower().endswith(PARTIAL_SUFFIXES):
        return False
    st = entry.stat()
    blocks = getattr(st, "st_blocks", None)
    return blocks is None or blocks * 512 >= st.st_size


def largest_file(folder: Path, max_entries: int = 2000) -> Path | None:
    """The largest regular, fully written file under ``folder`` (three levels deep,
    bounded scan). Sparse files and downloads in progress are skipped: their holes read
    at memory speed."""
    best: tuple[int, Path] | None = None
    stack: list[tuple[Path, int]] = [(folder, 0)]
    seen = 0
    while stack and seen < max_entries:
        current, depth = stack.pop()
        try:
            with os.scandir(current) as it:
                for entry in it:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False) and depth < 3:
                        stack.append((Path(entry.path), depth + 1))
                    elif entry.is_file() and is_fully_written(entry):
                        size = entry.stat().st_size
                        if best is None or size > best[0]:
                            best = (size, Path(entry.path))
        except OSError:
            continue
    return best[1] if best else None


def _drop_cache(fd: int) -> bool:
    """Ask the OS to forget the file's cached pages; False where it cannot (Windows)."""
    if sys.platform == "linux":
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            return False
        return True
    if sys.platform == "darwin":
        import fcntl

        try:  # F_NOCACHE: this descriptor's reads bypass the unified buffer cache
            fcntl.fcntl(fd, getattr(fcntl, "F_NOCACHE", 48), 1)
        except OSError:
            return False
        return True
    return False


def resident_fraction(fd: int, length: int) -> float | None:
    """How much of a file's first ``length`` bytes sits in the page cache (0..1).

    ``None`` where ``mincore`` is unavailable (not Linux) or fails.
    """
    if not sys.platform.startswith("linux") or length <= 0:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    except (OSError, AttributeError):
        return None
    page = os.sysconf("SC_PAGE_SIZE")
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        pages = (length + page - 1) // page
        vec = ctypes.create_string_buffer(pages)
        if libc.mincore(ctypes.c_void_p(addr), length, vec) != 0:
            return None
        return sum(b & 1 for b in vec.raw) / pages
    finally:
        libc.munmap(ctypes.c_void_p(addr), length)


def _timed_read(path: Path, max_bytes: int, budget_s: float, chunk: int) -> ReadProbe:
    buf = bytearray(chunk)
    view = memoryview(buf)
    notes: list[str] = []
    with open(path, "rb", buffering=0) as raw:  # binary and unbuffered on every OS
        fd = raw.fileno()
        if not _drop_cache(fd):
            notes.append("page_cache_not_dropped")
        # Pages another process keeps mapped (a loaded model) survive the drop: reading
        # them measures RAM, not the disk.
        resident = resident_fraction(fd, min(max_bytes, os.fstat(fd).st_size))
        if resident is not None and resident > 0.25:
            notes.append("page_cache_suspected")
        done = 0
        start = time.perf_counter()
        while done < max_bytes and time.perf_counter() - start < budget_s:
            n = raw.readinto(view)
            if not n:
                break
            done += n
        elapsed = time.perf_counter() - start
        _drop_cache(fd)  # leave the page cache as we found it, more or less
    gbps = done / elapsed / 1e9 if elapsed > 0 and done else 0.0
    if gbps > PAGE_CACHE_SUSPECT_GBPS and "page_cache_suspected" not in notes:
        notes.append("page_cache_suspected")
    return ReadProbe(round(gbps, 3), done, tuple(notes))


def probe_read(folder: Path, max_bytes: int = 256 * MIB, budget_s: float = 1.0,
               min_file_bytes: int = 64 * MIB, temp_bytes: int = 64 * MIB,
               chunk: int = 8 * MIB) -> ReadProbe:
    """Measure sequential read bandwidth in ``folder`` (bounded in bytes and time).

    Reads the largest file there when it has at least ``min_file_bytes``; otherwise
    writes a ``temp_bytes`` file, flushes it, drops it from the cache, reads it and
    deletes it.

    Raises:
        OSError: the folder cannot be read or written.
    """
    big = largest_file(folder)
    if big is not None and big.stat().st_size >= min_file_bytes:
        return _timed_read(big, max_bytes, budget_s, chunk)
    temp = folder / f".loadout-read-probe-{os.getpid()}.tmp"
    block = os.urandom(MIB)  # incompressible, so a compressing filesystem cannot cheat
    try:
        # O_BINARY: Windows would otherwise write every newline byte as two
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
        fd = os.open(temp, flags, 0o600)
        try:
            for _ in range(max(1, temp_bytes // MIB)):
                os.write(fd, block)
            os.fsync(fd)  # only clean pages can be dropped from the cache
        finally:
            os.close(fd)
        result = _timed_read(temp, min(max_bytes, temp_bytes), budget_s, chunk)
        return ReadProbe(result.read_gbps, result.bytes_read, (*result.notes, "temp_file"))
    finally:
        temp.unlink(missing_ok=True)
