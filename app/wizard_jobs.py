"""The model wizard's work, run off the UI thread: rank the catalog, plan and download.

Plain functions over values; no widget is touched here. Expected outcomes (the hub is
unreachable, the disk is too full, a pause) come back as values the wizard shows; only
real faults raise, and reach the app's one error handler.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from engine.hub.errors import (
    DownloadInProgressError,
    HubError,
    HubNotFoundError,
    HubOfflineError,
    IntegrityError,
    UnverifiedFileError,
)
from planner.inventory import Inventory

if TYPE_CHECKING:
    from engine.hub.downloads import DownloadPlan
    from engine.hub.recommend import Recommendations

log = logging.getLogger(__name__)


class Problem(StrEnum):
    """Why a step could not go on (the wizard says what to do about each)."""

    OFFLINE = "offline"              # the hub cannot be reached
    NOT_FOUND = "not_found"          # the hub has no such repo or file
    NOTHING_JUDGED = "nothing_judged"  # no catalog model could be planned
    NO_ROOM = "no_room"              # not enough free disk for the download
    CORRUPT = "corrupt"              # sha256 differs from the hub's; the file was removed
    BUSY = "busy"                    # the same file is downloading elsewhere
    UNVERIFIED = "unverified"        # the hub gives no sha256, and that was not allowed
    HUB = "hub"                      # any other refusal by the hub


@dataclass(frozen=True)
class RecommendOutcome:
    """The ranked choices for a machine and task, or why there are none.

    ``downloaded`` maps a choice's ``spec`` to its local copy, for those already here.
    ``estimated``: the hub could not be reached, so the choices are sized and planned
    from the catalog's published shapes and none can be downloaded (``detail`` says why).
    """

    task: str
    result: Recommendations | None = None
    problem: Problem | None = None
    detail: str = ""
    downloaded: dict[str, Path] = field(default_factory=dict)
    estimated: bool = False


def find_recommendations(inventory: Inventory, task: str, catalog_file: Path | None,
                         progress: Callable[[int, int], None] | None = None
                         ) -> RecommendOutcome:
    """Rank the catalog for ``inventory`` and ``task`` (reads listings and headers).

    Args:
        inventory: the machine to plan for (GPU reserve already applied).
        task: chat / code / agent / math / creative.
        catalog_file: another catalog than the bundled one (None: the bundled one).
        progress: called with (models judged, models in the catalog).
    """
    from engine.hub.catalog import load_catalog
    from engine.hub.estimate import estimated_recommendations
    from engine.hub.library import find_downloaded
    from engine.hub.recommend import recommend

    catalog = None
    result: Recommendations | None = None
    try:
        catalog = load_catalog(path=catalog_file)
        result = recommend(inventory, task, catalog=catalog, progress=progress)
    except HubOfflineError as exc:
        detail = str(exc)
    except HubError as exc:
        return RecommendOutcome(task, problem=Problem.HUB, detail=str(exc))
    else:
        detail = "; ".join(f"{m}: {why}" for m, why in result.skipped) \
            or result.catalog_status
    if result is None or not result.items:
        offline = result is None or result.catalog_status.startswith("offline") \
            or catalog is None or not catalog.online
        if offline and catalog is not None:  # sized and planned from the catalog alone
            estimate = estimated_recommendations(inventory, task, catalog, progress)
            if estimate.items:
                return RecommendOutcome(task, result=estimate, problem=None, detail=detail,
                                        estimated=True)
        return RecommendOutcome(task, result=result,
                                problem=Problem.OFFLINE if offline else Problem.NOTHING_JUDGED,
                                detail=detail)
    downloaded = {r.spec: path for r in result.items
                  if (path := find_downloaded(r.spec)) is not None}
    return RecommendOutcome(task, result=result, downloaded=downloaded)


class DownloadStage(StrEnum):
    """Where a download stands once a job on it has ended."""

    PLANNED = "planned"      # nothing moved yet: sizes and free space known
    COMPLETE = "complete"    # every file here and verified
    PAUSED = "paused"        # stopped; the partial file stays for a resume
    DISCARDED = "discarded"  # cancelled for good; the partial file removed
    FAILED = "failed"        # see ``problem``


@dataclass(frozen=True)
class DownloadOutcome:
    """The result of planning, running or discarding one download."""

    stage: DownloadStage
    plan: DownloadPlan | None = None
    path: Path | None = None         # the model file, once complete
    problem: Problem | None = None
    detail: str = ""


class AnyEvent(threading.Event):
    """Reads as set when any of ``events`` is (a pause, or the app closing)."""

    def __init__(self, *events: threading.Event) -> None:
        super().__init__()
        self._events = events

    def is_set(self) -> bool:
        return super().is_set() or any(e.is_set() for e in self._events)


def _failure(exc: HubError, plan: DownloadPlan | None = None) -> DownloadOutcome:
    kinds: tuple[tuple[type[HubError], Problem], ...] = (
        (HubOfflineError, Problem.OFFLINE), (HubNotFoundError, Problem.NOT_FOUND),
        (IntegrityError, Problem.CORRUPT), (DownloadInProgressError, Problem.BUSY),
        (UnverifiedFileError, Problem.UNVERIFIED))
    problem = next((p for kind, p in kinds if isinstance(exc, kind)), Problem.HUB)
    return DownloadOutcome(DownloadStage.FAILED, plan=plan, problem=problem, detail=str(exc))


def plan_model_download(spec: str) -> DownloadOutcome:
    """What downloading ``spec`` means here: sizes, partial bytes kept, free disk.

    A model already downloaded is COMPLETE without asking the hub.
    """
    from engine.hub.downloads import plan_download
    from engine.hub.library import find_downloaded

    here = find_downloaded(spec)
    if here is not None:
        return DownloadOutcome(DownloadStage.COMPLETE, path=here)
    try:
        plan = plan_download(spec)
    except HubError as exc:
        return _failure(exc)
    if not plan.fits_on_disk:
        return DownloadOutcome(DownloadStage.FAILED, plan=plan, problem=Problem.NO_ROOM)
    return DownloadOutcome(DownloadStage.PLANNED, plan=plan)


def run_download(spec: str, stop: threading.Event,
                 progress: Callable[[object], None] | None = None,
                 allow_unverified: bool = False) -> DownloadOutcome:
    """Download ``spec`` (resuming what is here) until done, failed or ``stop`` is set;
    a file the hub gives no sha256 for only with ``allow_unverified``.

    The plan is made again first, so a resume starts from the bytes really on disk and
    the free-space check sees the disk as it is now.
    """
    from engine.hub.downloads import Status, download

    planned = plan_model_download(spec)
    plan = planned.plan
    if planned.stage is not DownloadStage.PLANNED or plan is None:
        return planned
    try:
        result = download(plan, progress=progress, cancel=stop,
                          allow_unverified=allow_unverified)
    except HubError as exc:
        return _failure(exc, plan)
    if result.status is Status.PAUSED:
        return DownloadOutcome(DownloadStage.PAUSED, plan=plan)
    return DownloadOutcome(DownloadStage.COMPLETE, plan=plan, path=result.model_path)


def discard_download(plan: DownloadPlan) -> DownloadOutcome:
    """Cancel for good: remove the partial files of ``plan`` (a DownloadPlan)."""
    from engine.hub.downloads import discard

    freed = discard(plan)
    log.info("download of %s cancelled; %d bytes removed", plan.repo, freed)
    return DownloadOutcome(DownloadStage.DISCARDED, plan=plan)


def free_disk_bytes(folder: Path) -> int:
    """Free bytes on the disk that holds ``folder`` (or its nearest existing parent)."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return int(shutil.disk_usage(probe).free)
    except OSError:
        return 0


def models_folder() -> Path:
    """Where downloaded models go."""
    from engine.paths import paths

    return paths().models
