"""This machine's measured runs: one JSON line per finished request, in the data folder.

Each line holds the features and raw predicted figures of the plan the engine was loaded
with (``LaunchSpec.run_features``, written by :func:`planner.machine_fit.run_features`)
and the figures the engine measured for the request. :func:`samples` turns the file
into what the planner fits its per-machine correction on. Recording never disturbs a
request: a write that fails is logged and dropped. ``LOADOUT_RUN_RECORDS=off`` turns
recording off.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.paths import paths
from planner.machine_fit import RunSample, sample_of

log = logging.getLogger(__name__)

FILE_NAME = "run_records.jsonl"
KEEP = 1000                 # lines kept when the file is trimmed
TRIM_BYTES = 1 << 20        # ... once it grows past this
ENV = "LOADOUT_RUN_RECORDS"
RECORDED = ("stop", "length", "loop")   # finish reasons whose figures are measured runs
_lock = threading.Lock()


def records_path() -> Path:
    """The file this machine's runs are recorded in."""
    return paths().data / FILE_NAME


def enabled() -> bool:
    """Whether runs are recorded (``LOADOUT_RUN_RECORDS=off`` turns it off)."""
    return os.environ.get(ENV, "").lower() not in ("off", "0", "no", "false")


def append(record: dict[str, Any], path: Path | None = None) -> None:
    """Append one record (trimming the file to its latest :data:`KEEP` lines when large)."""
    path = path or records_path()
    line = json.dumps(record, separators=(",", ":")) + "\n"
    with _lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
        if path.stat().st_size > TRIM_BYTES:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[-KEEP:]
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(lines), encoding="utf-8")
            tmp.replace(path)


def load(path: Path | None = None) -> list[dict[str, Any]]:
    """Every readable record, oldest first (lines that do not parse are skipped)."""
    path = path or records_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def samples(path: Path | None = None) -> tuple[RunSample, ...]:
    """The recorded runs as the planner's fit takes them (unusable ones left out)."""
    out = []
    for doc in load(path):
        features, measured = doc.get("features"), doc.get("measured")
        if isinstance(features, dict) and isinstance(measured, dict):
            sample = sample_of(features, measured)
            if sample is not None:
                out.append(sample)
    return tuple(out)


def recorder(run_features: str, path: Path | None = None
             ) -> Callable[[dict[str, Any], str], None] | None:
    """A callback recording each finished request of an engine loaded with a plan whose
    features are ``run_features`` (JSON); None when there is nothing to record with."""
    if not run_features or not enabled():
        return None
    try:
        features = json.loads(run_features)
    except ValueError:
        log.warning("run features are not JSON; runs are not recorded")
        return None

    def finished(measured: dict[str, Any], reason: str) -> None:
        if reason not in RECORDED:
            return
        try:
            append({"time": time.time(), "reason": reason, "features": features,
                    "measured": measured}, path)
        except OSError as exc:
            log.warning("could not record the run: %s", exc)

    return finished
