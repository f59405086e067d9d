"""The cluster: RPC workers added by address, probed off the UI thread, their devices
appended to this machine's inventory (the one plans are made for).

The list of addresses lives in the settings (``rpc_workers``); what each worker answered
lives here. Only the workers are probed again when the list changes, never the whole
machine. A worker the engine lost mid-answer is left out until it is checked again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, Signal

from app import services
from app.settings_store import worker_address
from app.state import AppState
from app.workers import Job, WorkerRunner
from planner.inventory import Gpu, Inventory

log = logging.getLogger(__name__)

CHECKING, REACHABLE, UNREACHABLE, LOST = "checking", "reachable", "unreachable", "lost"
_NOTE = "worker_unreachable:"


@dataclass(frozen=True)
class WorkerStatus:
    """What is known of one worker.

    ``state`` is checking / reachable / unreachable / lost; ``reason`` a code for the last
    two (refused, timeout, busy, version, protocol, no_devices, lost, or
    ``unreachable: <system message>``).
    """

    endpoint: str
    state: str = CHECKING
    devices: tuple[Gpu, ...] = ()
    reason: str = ""


class ClusterControl(QObject):
    """What the Cluster section's Add / Remove / Check again and the lost-worker offer do.

    Args:
        state: the app's shared state (settings, this machine, the machine planned for).
        runner: where workers are probed (lane ``workers``).
        in_use: the workers the engine is using now (not probed: a worker serves one
            client at a time, so a probe would find it busy).

    Signals:
        sig_workers_changed: a worker's status changed (the section shows them again).
    """

    sig_workers_changed = Signal()

    def __init__(self, state: AppState, runner: WorkerRunner,
                 in_use: Callable[[], tuple[str, ...]] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._runner = runner
        self._in_use = in_use or (lambda: ())
        self._wanted: tuple[str, ...] = state.settings.rpc_workers
        self._status: dict[str, WorkerStatus] = {e: WorkerStatus(e) for e in self._wanted}
        state.sig_local_detected.connect(self._on_state_local_detected)
        state.sig_settings_changed.connect(self._on_state_settings_changed)
        if state.local is not None:
            self.check()

    # -- what the section shows -------------------------------------------------------
    def workers(self) -> tuple[WorkerStatus, ...]:
        """Every worker of the settings' list, in its order."""
        return tuple(self._status.get(e, WorkerStatus(e)) for e in self._wanted)

    def status(self, endpoint: str) -> WorkerStatus | None:
        """What is known of ``endpoint`` (None: not in the list)."""
        return self._status.get(endpoint) if endpoint in self._wanted else None

    # -- actions ----------------------------------------------------------------------
    def add(self, text: str) -> str:
        """Add the worker at ``text`` (``HOST:PORT``) and probe it; returns its address.

        Raises:
            ValueError: ``text`` is not a worker address (nothing is changed).
        """
        address = worker_address(text)
        if address in self._wanted:
            self.check((address,))
        else:
            self._set_wanted((*self._wanted, address))
        return address

    def remove(self, endpoint: str) -> None:
        """Take ``endpoint`` off the list (its devices leave the machine at once)."""
        self._set_wanted(tuple(e for e in self._wanted if e != endpoint))

    def check(self, endpoints: tuple[str, ...] | None = None) -> None:
        """Probe these workers again (default: all of them, lost ones included)."""
        busy = set(self._in_use())
        for endpoint in endpoints if endpoints is not None else self._wanted:
            known = self._status.get(endpoint, WorkerStatus(endpoint))
            if endpoint in busy and known.state == REACHABLE:
                continue  # the engine is using it: what it answered before still holds
            self._status[endpoint] = replace(known, state=CHECKING)
        self.sig_workers_changed.emit()
        self._probe()

    def leave_out(self, endpoints: tuple[str, ...]) -> None:
        """Plan without these workers (the engine lost them); they stay in the list,
        shown as lost, until checked again."""
        for endpoint in endpoints:
            if endpoint in self._wanted:
                self._status[endpoint] = WorkerStatus(endpoint, LOST, reason="lost")
            else:
                log.warning("lost worker %s is not in the cluster list", endpoint)
        self._publish()

    # -- work -------------------------------------------------------------------------
    def _set_wanted(self, wanted: tuple[str, ...]) -> None:
        self._state.update_settings(self._state.settings.with_changes(rpc_workers=wanted))

    def _probe(self) -> None:
        local = self._state.local
        pending = tuple(e for e in self._wanted if self._status[e].state == CHECKING)
        if local is None or not pending:
            return  # probed once this machine is detected

        def probe(job: Job) -> dict[str, Inventory]:
            return services.probe_workers(job, local, pending)

        # every request carries all the workers still checking: a newer one replaces it
        self._runner.submit("workers", probe, lambda found: self._on_probed(local, found),
                            on_failed=lambda exc: self._on_probe_failed(pending, exc))

    def _on_probed(self, local: Inventory, found: dict[str, Inventory]) -> None:
        if local is not self._state.local:
            return  # this machine was detected again: its own probe follows
        for endpoint, inventory in found.items():
            if self._status.get(endpoint, WorkerStatus(endpoint)).state != CHECKING:
                continue
            devices = inventory.gpus[len(local.gpus):]
            reasons = [n.removeprefix(f"{_NOTE}{endpoint}:") for n in inventory.notes
                       if n.startswith(f"{_NOTE}{endpoint}:")]
            if devices:
                self._status[endpoint] = WorkerStatus(endpoint, REACHABLE, devices)
            else:
                reason = reasons[0] if reasons else "no_devices"
                self._status[endpoint] = WorkerStatus(endpoint, UNREACHABLE, reason=reason)
        self._publish()

    def _on_probe_failed(self, endpoints: tuple[str, ...], exc: BaseException) -> None:
        for endpoint in endpoints:
            if self._status.get(endpoint, WorkerStatus(endpoint)).state == CHECKING:
                self._status[endpoint] = WorkerStatus(endpoint, UNREACHABLE,
                                                      reason=f"unreachable: {exc}")
        self._publish()

    def _publish(self) -> None:
        """Append the reachable workers' devices to this machine, in the list's order."""
        self.sig_workers_changed.emit()
        local = self._state.local
        if local is None:
            return
        gpus, notes = list(local.gpus), list(local.notes)
        for worker in self.workers():
            if worker.state == REACHABLE:
                gpus.extend(worker.devices)
            elif worker.state in (UNREACHABLE, LOST):
                notes.append(f"{_NOTE}{worker.endpoint}:{worker.reason}")
        machine = replace(local.with_gpus(tuple(gpus)), notes=tuple(notes))
        if machine != self._state.detected:
            self._state.set_with_workers(machine)

    # -- state events -----------------------------------------------------------------
    def _on_state_local_detected(self) -> None:
        # the worker devices found before belong to the previous inventory: ask again
        self.check()

    def _on_state_settings_changed(self) -> None:
        wanted = self._state.settings.rpc_workers
        if wanted == self._wanted:
            return
        added = tuple(e for e in wanted if e not in self._wanted)
        self._wanted = wanted
        self._status = {e: s for e, s in self._status.items() if e in wanted}
        if added:
            self.check(added)
        self._publish()
