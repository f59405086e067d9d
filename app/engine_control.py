"""Loading and unloading from the app: the Plan becomes a LaunchSpec, a crash becomes a
safer retry. Owns the :class:`EngineProcess`; pages talk to it, never to each other."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.engine_launch import Binding, launch_spec_from_plan, safer_spec
from app.engine_process import EngineProcess
from app.state import AppState
from engine.launch import LaunchSpec

log = logging.getLogger(__name__)


class EngineControl(QObject):
    """What the Load / Unload / Retry buttons do.

    Signals:
        sig_load_refused(str): nothing to load yet (no model or no plan).
    """

    sig_load_refused = Signal(str)

    def __init__(self, state: AppState, binding: Callable[[], Binding] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._binding = binding or Binding
        self.engine = EngineProcess(self)
        self.n_layers = 0
        self.attempt = 0

    def load_plan(self) -> bool:
        """Start the engine with the plan shown for the selected model."""
        path, plan = self._state.model_path, self._state.plan
        if path is None or plan is None:
            self.sig_load_refused.emit("no_plan")
            return False
        self.load(path, launch_spec_from_plan(path, plan))
        return True

    def load(self, path: Path, spec: LaunchSpec) -> None:
        """Start the engine on ``path`` carrying out ``spec``."""
        profile = self._state.profile
        same = self._state.model_path is not None and \
            Path(self._state.model_path).resolve() == Path(path).resolve()
        self.n_layers = int(getattr(profile, "n_layers", 0)) if same and profile else 0
        self.attempt = 0
        self.engine.load(spec, self._binding())

    def retry_safer(self) -> bool:
        """Load the last spec again, made safer once more (see :func:`safer_spec`)."""
        spec = self.engine.spec
        if spec is None:
            return False
        self.attempt += 1
        safer = safer_spec(spec, self.n_layers, 1)
        log.info("retrying with a safer plan: %d GPU layers (was %d), batch %d",
                 safer.n_gpu_layers, spec.n_gpu_layers, safer.n_batch)
        binding = self.engine.binding
        self.engine.load(safer, binding)
        return True

    def unload(self) -> None:
        """Stop the engine."""
        self.engine.unload()

    def shutdown(self) -> None:
        """Stop the engine and wait for it."""
        self.engine.shutdown()
