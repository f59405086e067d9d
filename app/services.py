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
from planner.projector import ProjectorProfile

log = logging.getLogger(__name__)


def warm_up() -> None:
    """Import the heavy modules jobs need, on the UI thread before the window shows.

    A first import holds the GIL for its whole native initialisation (numpy: ~0.2 s), which
    would freeze the UI if a worker did it in the middle of a detection.
    """
    try:
        import numpy  # noqa: F401  (the host bandwidth probe uses it)

        import engine.hardware  # noqa: F401
        import planner.plan  # noqa: F401
    except ImportError:  # the job that needs it will report it through the error handler
        log.exception("warming up the app's imports failed")
        return
    from app import plan_process

    plan_process.start()


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


def refine_machine(job: Job, detected: Inventory, model_dirs: tuple[Path, ...] = ()
                   ) -> Inventory | None:
    """The daily background pass after ``detected`` (this machine's detection): when a
    figure was taken while the machine was busy and not measured again for a day, measure
    the RAM bandwidth and a CPU core's rates again (the best kept while still busy) and
    return the new Inventory; None when nothing is due (the usual case: it reads one
    small file)."""
    from engine import hardware

    if not hardware.refine_due(detected):
        return None
    log.info("measuring this machine again in the background (figures taken while busy)")
    result: Inventory = hardware.detect(model_dirs=[Path(d) for d in model_dirs] or None,
                                        refine=True, cancel=job.cancel_event)
    return result


WORKER_TIMEOUT_S = 3.0  # bound on each network call to a worker


def probe_workers(job: Job, local: Inventory, endpoints: tuple[str, ...]
                  ) -> dict[str, Inventory]:
    """Probe each RPC worker (bounded: never hangs) and measure its link.

    Returns, per endpoint, ``local`` with that worker's devices appended (or, when it
    cannot be used, with a ``worker_unreachable:ENDPOINT:REASON`` note), so the caller
    can combine the workers it still wants without probing them again. Workers not
    reached before the job is cancelled are left out of the result.
    """
    from engine.hardware.workers import add_workers

    found: dict[str, Inventory] = {}
    for endpoint in endpoints:
        if job.cancelled:
            break
        found[endpoint] = add_workers(local, [endpoint], timeout_s=WORKER_TIMEOUT_S)
    return found


def gone_workers(endpoints: tuple[str, ...]) -> tuple[str, ...]:
    """The workers that no longer answer at all (a busy one still runs, so it is not
    gone); bounded by :data:`WORKER_TIMEOUT_S` each."""
    from engine.rpc import probe_worker

    return tuple(e for e in endpoints
                 if probe_worker(e, WORKER_TIMEOUT_S).reason not in (None, "busy"))


def read_profile(path: Path) -> ModelProfile:
    """Read a model's header into its profile."""
    from engine.gguf_file import load_profile

    profile: ModelProfile = load_profile(path)
    return profile


def read_projector(model_path: Path) -> ProjectorProfile | None:
    """The profile of the vision projector paired with a model (None: none, or unreadable)."""
    from engine.gguf_file import load_projector
    from engine.models import paired_projector

    path = paired_projector(Path(model_path))
    if path is None:
        return None
    try:
        return load_projector(path)
    except (OSError, ValueError) as exc:
        log.warning("the projector %s could not be read: %s", path.name, exc)
        return None


def read_rig(path: Path) -> Inventory:
    """Load a rig file (the ``detect --json`` document)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return Inventory.from_json(doc)


def write_rig(inventory: Inventory, path: Path) -> Path:
    """Save ``inventory`` as a rig file."""
    target = Path(path)
    target.write_text(json.dumps(inventory.to_json(), indent=2), encoding="utf-8")
    return target
