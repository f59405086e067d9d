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
from app.engine_launch import Binding, launch_spec_from_plan
from app.engine_process import EngineProcess
from app.plan_jobs import run_plan, with_gpu_reserve
from app.state import AppState
from app.workers import Job, WorkerRunner
from engine.launch import LaunchSpec, ReplanLadder, safer_spec
from engine.rpc import worker_lost
from planner.request import Request

log = logging.getLogger(__name__)


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
        sig_load_refused(str): a load was asked for and not started, with why:
            ``no_plan`` (no model or no plan yet), ``does_not_fit`` (its plan says the
            model does not fit this machine) or ``whatif`` (the plan is for a what-if rig).
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
        self._ladder = ReplanLadder()
        self._loaded: _Loaded | None = None
        self._death_log = ""

    def load_plan(self) -> bool:
        """Start the engine with the plan shown for the selected model; False (and
        ``sig_load_refused`` says why) when that plan cannot be loaded here."""
        path, plan = self._state.model_path, self._state.plan
        refused = self.refusal()
        if refused is not None or path is None or plan is None:
            self.sig_load_refused.emit(refused or "no_plan")
            return False
        self.load(path, launch_spec_from_plan(path, plan), self._request())
        return True

    def refusal(self) -> str | None:
        """Why the plan shown cannot be loaded (a ``sig_load_refused`` code), else None."""
        plan = self._state.plan
        if self._state.model_path is None or plan is None:
            return "no_plan"
        if self._state.whatif is not None:  # planned for hardware that is not here
            return "whatif"
        if not getattr(plan, "fits", True):  # llama.cpp would run out of memory
            return "does_not_fit"
        return None

    def load(self, path: Path, spec: LaunchSpec, request: Request | None = None) -> None:
        """Start the engine on ``path`` carrying out ``spec`` (planned for ``request``)."""
        same = self._state.model_path is not None and \
            Path(self._state.model_path).resolve() == Path(path).resolve()
        self._loaded = _Loaded(Path(path), request, self._state.profile if same else None)
        self.attempt = 0
        self.retry_plan = None
        self._death_log = ""
        self._ladder = ReplanLadder()
        self._ladder.loading(spec, self._state.plan)
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
        """Load again after the engine died, one rung down the out-of-memory ladder
        (:class:`engine.launch.ReplanLadder`, the CLI's too): with the request and model
        the engine was planned from, the planner plans again with what ran out given less
        (the GPU the log names, else the host reserve; an engine killed without a word
        also gets fewer GPU layers), and the spec holds smaller batches than the one that
        died. Without them, the spec itself is made safer (:func:`safer_spec`).

        Returns:
            False when nothing was loaded yet, or the ladder is at its end (the failure
            is reported again instead).
        """
        spec, loaded = self.engine.spec, self._loaded
        if spec is None or loaded is None:
            return False
        ladder = self._ladder
        if ladder.exhausted:
            log.warning("no safer retry left after %d loads", ladder.attempt + 1)
            self.sig_engine_failed.emit(self._death_log, self.engine.exit_code, ())
            return False
        log.info("%s", ladder.failed(self._death_log))
        self.attempt = ladder.attempt
        n_layers = int(getattr(loaded.profile, "n_layers", 0) or 0)
        machine = self._state.machine()
        binding = self.engine.binding

        def unplanned(_exc: object = None) -> None:
            self._start_retry(safer_spec(spec, n_layers, 1), binding)

        if loaded.request is None or loaded.profile is None or machine is None:
            unplanned()
            return True
        inventory = with_gpu_reserve(ladder.inventory(machine),
                                     self._state.settings.gpu_reserve_bytes)
        request = ladder.request(loaded.request, n_layers)
        profile, path = loaded.profile, loaded.path

        def replan(_job: Job) -> Any:
            return run_plan(inventory, profile, request)

        def planned(plan: Any) -> None:
            self.retry_plan = plan
            self._start_retry(ladder.spec(launch_spec_from_plan(path, plan)), binding, plan)

        self._runner.submit("safer-plan", replan, planned, on_failed=unplanned)
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

    def _start_retry(self, spec: LaunchSpec, binding: Binding, plan: Any = None) -> None:
        log.info("retrying with a safer plan: %d GPU layers, batch %d, context %d",
                 spec.n_gpu_layers, spec.n_batch, spec.n_ctx)
        self._ladder.loading(spec, plan)
        self.engine.load(spec, binding)

    def unload(self) -> None:
        """Stop the engine."""
        self.engine.unload()

    def shutdown(self) -> None:
        """Stop the engine and wait for it."""
        self.engine.shutdown()
