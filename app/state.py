"""What every page shares: the machine, the selected model, the settings.

Pages read from one :class:`AppState` and listen to its signals; they never reach into
each other. The machine planned for is the detected one unless a what-if rig is set; the
detected one is this machine (``local``) with the devices of the cluster's reachable RPC
workers appended once they are probed (:class:`app.cluster_control.ClusterControl`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.settings_store import AppSettings, save_settings
from planner.inventory import Inventory
from planner.plan_types import Plan
from planner.profile import ModelProfile
from planner.projector import ProjectorProfile

log = logging.getLogger(__name__)


class AppState(QObject):
    """Shared, observable state of the app (lives on the UI thread)."""

    sig_local_detected = Signal()
    sig_detected_changed = Signal()
    sig_machine_changed = Signal()
    sig_model_changed = Signal()
    sig_settings_changed = Signal()
    sig_plan_changed = Signal(object)  # the Plan (None: no plan)
    sig_runs_recorded = Signal()  # this machine's measured runs changed: plan again

    def __init__(self, settings: AppSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.local: Inventory | None = None      # this machine alone
        self.detected: Inventory | None = None   # this machine and its reachable workers
        self.whatif: Inventory | None = None
        self.model_path: Path | None = None
        self.profile: ModelProfile | None = None
        self.projector: ProjectorProfile | None = None  # the model's vision projector
        self.plan: Plan | None = None

    def machine(self) -> Inventory | None:
        """The inventory plans are made for: the what-if rig, else this machine."""
        return self.whatif if self.whatif is not None else self.detected

    def set_detected(self, inventory: Inventory) -> None:
        """Record the result of hardware detection (this machine alone, until the
        workers' devices are added with :meth:`set_with_workers`)."""
        self.local = inventory
        self._set_machine(inventory)
        self.sig_local_detected.emit()

    def set_with_workers(self, inventory: Inventory) -> None:
        """Plan for this machine with the reachable workers' devices appended."""
        self._set_machine(inventory)

    def _set_machine(self, inventory: Inventory) -> None:
        self.detected = inventory
        self.sig_detected_changed.emit()
        if self.whatif is None:
            self.sig_machine_changed.emit()

    def set_whatif(self, inventory: Inventory | None) -> None:
        """Plan for an edited rig (None: back to this machine)."""
        self.whatif = inventory
        self.sig_machine_changed.emit()

    def set_model(self, path: Path, profile: ModelProfile,
                  projector: ProjectorProfile | None = None) -> None:
        """Make ``path`` the selected model (``projector``: its vision projector)."""
        self.model_path, self.profile, self.projector = path, profile, projector
        self.sig_model_changed.emit()

    def set_plan(self, plan: Plan | None) -> None:
        """Record the newest plan (the status bar and Home show its roles)."""
        self.plan = plan
        self.sig_plan_changed.emit(plan)

    def remember_model(self, path: Path) -> None:
        """Save ``path`` as the model to load at the next start (nothing is replanned)."""
        if self.settings.last_model == str(path):
            return
        self.settings = self.settings.with_changes(last_model=str(path))
        try:
            save_settings(self.settings)
        except OSError:
            log.exception("could not save the settings")

    def update_settings(self, settings: AppSettings) -> None:
        """Replace and save the settings."""
        if settings == self.settings:
            return
        self.settings = settings
        try:
            save_settings(settings)
        except OSError:
            log.exception("could not save the settings")
        self.sig_settings_changed.emit()
