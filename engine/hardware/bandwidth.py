"""Short, bounded memory bandwidth probes: host RAM (numpy) and GPUs (torch, optional).

Figures are GB/s (10^9 bytes per second) of memory traffic: a copy of N bytes moves 2N.
The host probe copies buffers far larger than any CPU cache, one slice per thread
(numpy releases the GIL while copying), and keeps the best of a few rounds inside a
time budget, so a busy neighbour costs accuracy, never time.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

MIB = 2**20


def host_bandwidth(threads: int, size_bytes: int = 256 * MIB, budget_s: float = 0.4,
                   cancelled: Callable[[], bool] = lambda: False) -> float:
    """Measured host RAM copy bandwidth in GB/s (best round within ``budget_s``).

    Args:
        threads: how many threads copy at once (the CPUs llama.cpp would use).
        size_bytes: bytes copied per round (source and destination each this large).
        budget_s: wall-clock budget for the timed rounds (one untimed warm-up precedes).
        cancelled: polled between rounds.

    Returns:
        The best round's traffic (read + write) per second, in GB/s.
    """
    import numpy as np  # here, not at the top: a warm detect measures nothing

    threads = max(1, min(threads, 16))
    count = size_bytes // 8 // threads * threads
    src = np.ones(count, dtype=np.float64)
    dst = np.empty_like(src)
    step = count // threads
    slices = [slice(i * step, (i + 1) * step) for i in range(threads)]

    def copy_round() -> float:
        barrier = threading.Barrier(threads + 1)

        def work(part: slice) -> None:
            barrier.wait()
            np.copyto(dst[part], src[part])

        workers = [threading.Thread(target=work, args=(p,), daemon=True) for p in slices]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        return time.perf_counter() - start

    copy_round()  # first touch: page faults, not bandwidth
    best = math.inf
    deadline = time.perf_counter() + budget_s
    rounds = 0
    while rounds < 2 or time.perf_counter() < deadline:
        best = min(best, copy_round())
        rounds += 1
        if cancelled() or rounds >= 20:
            break
    gbps = 2 * count * 8 / best / 1e9
    log.info("host copy bandwidth %.1f GB/s (%d threads, %d rounds)", gbps, threads, rounds)
    return round(gbps, 1)


@dataclass(frozen=True)
class TorchGpuProbe:
    """One GPU as torch measured it: device-memory copy and host-to-device bandwidth."""

    ordinal: int
    name: str
    total_bytes: int
    bandwidth_gbps: float
    h2d_gbps: float


def load_torch() -> Any | None:
    """The ``torch`` module when it is installed (the ``loadout[probe]`` extra), else None."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch
    except Exception as exc:  # a broken CUDA install must not stop detection
        log.info("torch not importable: %s", exc)
        return None
    return torch


def torch_gpu_bandwidth(torch: Any, size_bytes: int = 512 * MIB, rounds: int = 5,
                        cancelled: Callable[[], bool] = lambda: False) -> list[TorchGpuProbe]:
    """Measure every GPU torch sees (CUDA or ROCm); empty when it sees none.

    Each GPU copies ``size_bytes`` device-to-device and host(pinned)-to-device ``rounds``
    times; the fastest round counts. Buffers are freed before the next GPU.
    """
    if not torch.cuda.is_available():
        return []
    found: list[TorchGpuProbe] = []
    for i in range(torch.cuda.device_count()):
        if cancelled():
            break
        try:
            found.append(_torch_one(torch, i, size_bytes, rounds))
        except Exception as exc:  # out of memory on a busy GPU, a lost device ...
            log.warning("GPU %d bandwidth probe failed: %s", i, exc)
        finally:
            torch.cuda.empty_cache()
    return found


def _timed(torch: Any, fn: Callable[[], Any], rounds: int) -> float:
    best = math.inf
    fn()
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def _torch_one(torch: Any, i: int, size_bytes: int, rounds: int) -> TorchGpuProbe:
    props = torch.cuda.get_device_properties(i)
    device = torch.device("cuda", i)
    with torch.cuda.device(i):
        size = min(size_bytes, int(props.total_memory) // 8)
        src = torch.empty(size, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        copy_s = _timed(torch, lambda: dst.copy_(src), rounds)
        host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        h2d_s = _timed(torch, lambda: dst.copy_(host, non_blocking=True), rounds)
    return TorchGpuProbe(ordinal=i, name=str(props.name), total_bytes=int(props.total_memory),
                         bandwidth_gbps=round(2 * size / copy_s / 1e9, 1),
                         h2d_gbps=round(size / h2d_s / 1e9, 1))
