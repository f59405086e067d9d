"""The app's calls into the engine and planner, as plain functions run inside jobs.

Nothing here touches Qt widgets: each function takes a :class:`app.workers.Job` (for
progress and cancellation) and returns a value the UI thread then shows.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from app.workers import Job
from planner.inventory import Inventory
from planner.profile import ModelProfile

log = logging.getLogger(__name__)


def detect_machine(job: Job, model_dirs: tuple[Path, ...] = ()) -> Inventory:
    """Detect this machine's GPUs, RAM and disks (seconds: it measures bandwidths).

    Progress is reported as ``(step, fraction)``; the job's cancel flag stops it.
    """
    from engine import hardware

    def progress(step: str, fraction: float) -> None:
        job.progress((step, fraction))

    result: Inventory = hardware.detect(
        model_dirs=[Path(d) for d in model_dirs] or None, progress=progress,
        cancel=job.cancel_event)
    return result


def read_profile(path: Path) -> ModelProfile:
    """Read a model's header into its profile."""
    from engine.gguf_file import load_profile

    profile: ModelProfile = load_profile(path)
    return profile


def read_rig(path: Path) -> Inventory:
    """Load a rig file (the ``detect --json`` document)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return Inventory.from_json(doc)


def write_rig(inventory: Inventory, path: Path) -> Path:
    """Save ``inventory`` as a rig file."""
    target = Path(path)
    target.write_text(json.dumps(inventory.to_json(), indent=2), encoding="utf-8")
    return target
