"""Loading and unloading from the app: the Plan becomes a LaunchSpec, a crash becomes a
safer retry (or, when an RPC worker went away, an offer to plan without it). Owns the
:class:`EngineProcess`; pages talk to it, never to each other."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from app import services
from app.engine_launch import GIB, Binding, launch_spec_from_plan, safer_spec
from app.engine_process import EngineProcess
from app.plan_jobs import run_plan, with_gpu_reserve
from app.state import AppState
from app.workers import Job, WorkerRunner
from engine.launch import LaunchSpec, gpu_out_of_memory_in_log, shrink_after_out_of_memory
from engine.rpc import worker_lost
from planner.request import Request

log = logging.getLogger(__name__)

GPU_RESERVE_STEP = GIB       # more kept free on every GPU per retry
HOST_RESERVE_STEP = 2 * GIB  # more kept free in RAM per retry


@dataclasses.dataclass(frozen=True)
class _Loaded:
    """What the running engine was loaded from (to make a safer plan of it)."""

    path: Path
    request: Request | None
    profile: Any


class EngineControl(QObject):
    """What the Load / Unload / Retry buttons do.

    Args:
        state: the app's shared state (model, machine, plan, settings).
        runner: where the safer plan is made (off the UI thread).
        binding: where the engine should listen (the server panel's choice).
        request: the Request the plan shown was made for.

    Signals:
        sig_load_refused(str): nothing to load yet (no model or no plan).
        sig_engine_failed(str, object, tuple): the engine died: its last log lines, its
            exit code, and the RPC workers it lost (empty when it did not die of that).
    """

    sig_load_refused = Signal(str)
    sig_engine_failed = Signal(str, object, tuple)

    def __init__(self, state: AppState, runner: WorkerRunner,
                 binding: Callable[[], Binding] | None = None,
                 request: Callable[[], Request | None] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._runner = runner
        self._binding = binding or Binding
        self._request = request or (lambda: None)
        self.engine = EngineProcess(self)
        self.engine.library = state.settings.serve_library
        self.engine.sig_engine_died.connect(self._on_engine_died)
        self.attempt = 0
        self.retry_plan: Any = None
        self._loaded: _Loaded | None = None
        self._death_log = ""

    def load_plan(self) -> bool:
        """Start the engine with the plan shown for the selected model."""
        path, plan = self._state.model_path, self._state.plan
        if path is None or plan is None:
            self.sig_load_refused.emit("no_plan")
            return False
        self.load(path, launch_spec_from_plan(path, plan), self._request())
        return True

    def load(self, path: Path, spec: LaunchSpec, request: Request | None = None) -> None:
        """Start the engine on ``path`` carrying out ``spec`` (planned for ``request``)."""
        same = self._state.model_path is not None and \
            Path(self._state.model_path).resolve() == Path(path).resolve()
        self._loaded = _Loaded(Path(path), request, self._state.profile if same else None)
        self.attempt = 0
        self.retry_plan = None
        self._death_log = ""
        self.engine.load(spec, self._binding())

    def reload(self) -> bool:
        """Start the engine again as it was last started (after a crash or an unload);
        False when none was started yet."""
        spec, loaded = self.engine.spec, self._loaded
        if spec is None or loaded is None or self.engine.state in ("loading", "ready"):
            return False
        self.engine.load(spec, self._binding())
        return True

    def retry_safer(self) -> bool:
        """Load again with a safer plan: larger reserves and fewer GPU layers.

        With the request and model the engine was planned from, the planner plans again
        with the reserves raised (its plan prices and checks the result); the spec then
        also holds fewer GPU layers and smaller batches than the one that died.
        """
        spec, loaded = self.engine.spec, self._loaded
        if spec is None or loaded is None:
            return False
        self.attempt += 1
        n_layers = int(getattr(loaded.profile, "n_layers", 0) or 0)
        safer = safer_spec(spec, n_layers, 1)
        machine = self._state.machine()
        binding = self.engine.binding
        if loaded.request is None or loaded.profile is None or machine is None:
            self._start_retry(safer, binding)
            return True
        gpu_reserve = self._state.settings.gpu_reserve_bytes + GPU_RESERVE_STEP * self.attempt
        failed_plan = self.retry_plan or self._state.plan
        if gpu_out_of_memory_in_log(self._death_log) and failed_plan is not None:
            # a GPU ran out: it is given half of what the failed plan put there
            machine = shrink_after_out_of_memory(machine, failed_plan)
        inventory = with_gpu_reserve(machine, gpu_reserve)
        request = dataclasses.replace(
            loaded.request, n_gpu_layers=safer.n_gpu_layers, advise=False,
            host_reserve_bytes=loaded.request.host_reserve_bytes
            + HOST_RESERVE_STEP * self.attempt)
        profile, path = loaded.profile, loaded.path

        def replan(_job: Job) -> Any:
            return run_plan(inventory, profile, request)

        def planned(plan: Any) -> None:
            self.retry_plan = plan
            planned_spec = launch_spec_from_plan(path, plan)
            self._start_retry(dataclasses.replace(
                planned_spec, n_gpu_layers=min(planned_spec.n_gpu_layers, safer.n_gpu_layers)
                if planned_spec.n_gpu_layers >= 0 else safer.n_gpu_layers,
                n_batch=min(planned_spec.n_batch, safer.n_batch),
                n_ubatch=min(planned_spec.n_ubatch, safer.n_ubatch)), binding)

        self._runner.submit("safer-plan", replan, planned,
                            on_failed=lambda _exc: self._start_retry(safer, binding))
        return True

    def set_library(self, on: bool) -> None:
        """Serve every model of the library (``on``, the model loaded kept loaded) or the
        planned model alone; saved in the settings. A running engine restarts so."""
        self._state.update_settings(self._state.settings.with_changes(serve_library=on))
        if self.engine.library == on:
            return
        self.engine.library = on
        spec = self.engine.spec
        if spec is not None and self.engine.state in ("loading", "ready"):
            self.engine.load(spec, self._binding())

    def workers_in_use(self) -> tuple[str, ...]:
        """The RPC workers the engine is loading onto or running on now."""
        spec = self.engine.spec
        if spec is None or self.engine.state not in ("loading", "ready"):
            return ()
        return tuple(spec.rpc_workers)

    def lost_workers(self, log_text: str) -> tuple[str, ...]:
        """The workers the engine died of, read from its last log lines (empty: it did
        not die of a lost worker). When the log names none, every worker it used."""
        spec = self.engine.spec
        if spec is None or not spec.rpc_workers:
            return ()
        if worker_lost(log_text, list(spec.rpc_workers)) is None:
            return ()
        named = tuple(w for w in spec.rpc_workers if w in log_text)
        return named or tuple(spec.rpc_workers)

    def _on_engine_died(self, log_text: str) -> None:
        self._death_log = log_text
        code = self.engine.exit_code
        suspects = self.lost_workers(log_text)
        if len(suspects) < 2:
            self.sig_engine_failed.emit(log_text, code, suspects)
            return

        # the log does not say which worker went away: ask them (the living ones answer)
        def probe(_job: Job) -> tuple[str, ...]:
            return services.gone_workers(suspects)

        self._runner.submit(
            "lost-workers", probe,
            lambda gone: self.sig_engine_failed.emit(log_text, code, gone or suspects),
            on_failed=lambda _exc: self.sig_engine_failed.emit(log_text, code, suspects))

    def _start_retry(self, spec: LaunchSpec, binding: Binding) -> None:
        log.info("retrying with a safer plan: %d GPU layers, batch %d, context %d",
                 spec.n_gpu_layers, spec.n_batch, spec.n_ctx)
        self.engine.load(spec, binding)

    def unload(self) -> None:
        """Stop the engine."""
        self.engine.unload()

    def shutdown(self) -> None:
        """Stop the engine and wait for it."""
        self.engine.shutdown()
