"""Measured figures, cached in the user cache folder and keyed by a hardware fingerprint.

A different CPU, RAM size or set of GPUs changes the fingerprint and drops every cached
figure; disks are keyed by their block device, so adding one re-measures only it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SCHEMA = "loadout.probes/1"
FILE_NAME = "hardware-probes.json"
REFINE_EVERY_S = 24 * 3600.0  # a figure taken while busy is measured again at most this often


def fingerprint(cpu: str, threads: int, ram_total: int, gpus: Iterable[tuple[str, int]]) -> str:
    """A short stable hash of what decides the measured figures."""
    gib = round(ram_total / 2**30)
    parts = [cpu, str(threads), str(gib), *sorted(f"{n}|{round(t / 2**30)}" for n, t in gpus)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass
class ProbeCache:
    """The cached measurements of one machine (mutable while detection runs)."""

    fingerprint: str
    host: dict[str, Any] = field(default_factory=dict)
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    disks: dict[str, dict[str, Any]] = field(default_factory=dict)
    cpu: dict[str, Any] = field(default_factory=dict)  # one core's rates (core_rate.py)

    @staticmethod
    def load(folder: Path, fingerprint: str) -> ProbeCache:
        """The cache in ``folder`` if it belongs to this fingerprint, else an empty one."""
        try:
            doc = json.loads((folder / FILE_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ProbeCache(fingerprint)
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or \
                doc.get("fingerprint") != fingerprint:
            return ProbeCache(fingerprint)
        try:
            return ProbeCache(fingerprint, host=dict(doc.get("host", {})),
                              gpus={str(k): dict(v) for k, v in doc.get("gpus", {}).items()},
                              disks={str(k): dict(v) for k, v in doc.get("disks", {}).items()},
                              cpu=dict(doc.get("cpu", {})))
        except (TypeError, ValueError, AttributeError):
            return ProbeCache(fingerprint)

    def refine_due(self, now: float, every_s: float = REFINE_EVERY_S) -> bool:
        """Whether a host figure taken while the machine was busy (RAM bandwidth, a CPU
        core's rates) was last measured ``every_s`` or more before ``now``: the
        background pass then measures it again. A figure without a time is due."""
        for entry in (self.host, self.cpu):
            if entry.get("busy") is not True:
                continue
            at = entry.get("measured_at")
            if not isinstance(at, int | float) or isinstance(at, bool) or now - at >= every_s:
                return True
        return False

    def save(self, folder: Path) -> None:
        """Write atomically; a failure is logged, never raised (the cache is optional)."""
        doc = {"schema": SCHEMA, "fingerprint": self.fingerprint, "host": self.host,
               "gpus": self.gpus, "disks": self.disks, "cpu": self.cpu}
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{FILE_NAME}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
            os.replace(tmp, folder / FILE_NAME)
        except OSError as exc:
            log.warning("could not save hardware probes to %s: %s", folder, exc)
