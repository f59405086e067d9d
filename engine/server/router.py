"""Many models behind one server: load on demand, plan residency, unload what must go.

Everything here runs on the server's event loop; the slow parts (planning, loading,
closing an engine) run in worker threads, one load or unload at a time. A request for a
model takes a *lease* on it (:meth:`Router.acquire`): while the model loads, the request
waits in that model's queue (``queue_size`` at most, past it 503); once loaded, the lease
keeps the model resident until the request ends (:meth:`Router.release`).

Residency (see :mod:`planner.residency`): a model is planned into what the resident ones
leave; when that plan does not fit, the least recently used unpinned models are unloaded
(busy ones last, after their requests end); a load the memory model says cannot fit is
never started: its requests get 507 with the bytes needed and free.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import EngineError, ModelLoadCancelled, OutOfMemoryError
from engine.launch import LaunchSpec
from engine.server.engine_like import RETRY_AFTER_S, EngineLike, template_renders_tools
from engine.server.grammar_probe import GrammarProbe
from engine.server.model_catalog import CatalogModel
from engine.server.openai_schema import ApiError, ServedModel
from engine.server.residency_guard import ResidencyGuard
from engine.server.router_plan import (
    RouterPlanner,
    budget_of,
    fits,
    gib,
    need_of,
    shortfall_text,
)
from planner.residency import Resident, idle_expired, make_room, remaining

log = logging.getLogger(__name__)

ON_DISK, LOADING, LOADED, UNLOADING = "on_disk", "loading", "loaded", "unloading"
EngineLoader = Callable[[LaunchSpec, Callable[[float], bool]], EngineLike]


@dataclass(frozen=True)
class RouterOptions:
    """How the router keeps models.

    Attributes:
        queue_size: requests that may wait for one model (loading, or for a slot).
        pinned: ids of models never unloaded (loaded at start).
        idle_timeout_s: unload a model idle this long (None: never for idleness).
        models_max: the most models resident at once (None: memory decides alone).
        embeddings: chat models serve ``/v1/embeddings`` too (an embedding model always
            does).
        min_residency_s: a model loaded less than this long ago is not unloaded for
            another while it has requests (in flight or waiting).
        max_swaps: loads that unload another model, at most this many in any
            ``swap_window_s`` (past it: 503 with Retry-After; None: no limit).
        swap_window_s: the window of ``max_swaps``.
    """

    queue_size: int = 64
    pinned: frozenset[str] = frozenset()
    idle_timeout_s: float | None = None
    models_max: int | None = None
    embeddings: bool = False
    min_residency_s: float = 15.0
    max_swaps: int | None = 4
    swap_window_s: float = 60.0


@dataclass(eq=False)
class RoutedModel:
    """One model of the router and its state."""

    model: CatalogModel
    pinned: bool = False
    state: str = ON_DISK
    engine: EngineLike | None = None
    served: ServedModel | None = None
    probe: GrammarProbe | None = None
    planned: dict[str, int] = field(default_factory=dict)
    predicted_decode_tps: float | None = None
    last_used: float = 0.0
    leases: int = 0
    waiting: int = 0
    load_progress: float = 0.0
    load_error: str | None = None
    loaded_at: float = 0.0
    task: asyncio.Task[None] | None = None
    failed_stamp: tuple[int, int] | None = None  # the file (size, mtime) that failed to load

    @property
    def id(self) -> str:
        return self.model.id

    @property
    def busy(self) -> bool:
        return self.leases > 0 or self.waiting > 0

    def resident(self) -> Resident:
        return Resident(self.id, tuple(sorted(self.planned.items())), self.last_used,
                        pinned=self.pinned, busy=self.busy)


def _default_loader(queue_size: int, embeddings: bool = False) -> EngineLoader:
    def load(spec: LaunchSpec, progress: Callable[[float], bool]) -> EngineLike:
        from engine.embedding_engine import open_engine

        return open_engine(spec, queue_size=queue_size, progress=progress,
                           embeddings=embeddings)

    return load


class Router:
    """The models of one server, loaded and unloaded by the residency rule.

    Args:
        catalog: the models served.
        planner: plans each model beside the resident ones.
        options: queue size, pins, idle timeout, count cap.
        loader: loads one spec (the real engine by default).
        events: called with ``(event, model_id, reason)`` on each load and unload (the
            metrics count them).
    """

    def __init__(self, catalog: Sequence[CatalogModel], planner: RouterPlanner,
                 options: RouterOptions = RouterOptions(),
                 loader: EngineLoader | None = None,
                 events: Callable[[str, str, str], None] | None = None) -> None:
        self.options = options
        self.planner = planner
        self.models = {m.id: RoutedModel(m, pinned=m.id in options.pinned) for m in catalog}
        self._names = {n: e for e in self.models.values() for n in e.model.names()}
        self._loader = loader or _default_loader(options.queue_size, options.embeddings)
        self.events = events or (lambda *_: None)
        self._lock = asyncio.Lock()
        self._stopping = False
        self._reaper: asyncio.Task[None] | None = None
        self._predicting: asyncio.Task[None] | None = None
        self.residency = ResidencyGuard(options.min_residency_s, options.max_swaps,
                                        options.swap_window_s)

    # -- lookups --------------------------------------------------------------------------
    def find(self, name: str) -> RoutedModel | None:
        """The model a request names (its id or an alias), or None."""
        return self._names.get(name)

    def ids(self) -> list[str]:
        return list(self.models)

    def resident(self) -> list[RoutedModel]:
        return [e for e in self.models.values() if e.state in (LOADED, UNLOADING)]

    # -- requests -------------------------------------------------------------------------
    async def acquire(self, entry: RoutedModel, wait: bool = True) -> None:
        """Take a lease on ``entry`` once it is loaded (loading it when needed).

        Raises:
            ApiError: 503 with ``Retry-After`` when the model's queue is full, or while it
                loads when ``wait`` is False; 507 when the memory model says it cannot
                fit; 500 when its load failed.
        """
        self._start_reaper()
        if entry.state == LOADED:
            entry.leases += 1
            entry.last_used = time.monotonic()
            return
        if entry.state == ON_DISK and (entry.task is None or entry.task.done()):
            self._refuse_known_bad(entry)  # without a load started: no 503 to retry forever
            self._refuse_unfit(entry)
        if entry.waiting >= self.options.queue_size:
            raise ApiError(503, f"the model '{entry.id}' is loading and its queue is full; "
                                "retry shortly", code="queue_full",
                           headers={"Retry-After": RETRY_AFTER_S})
        if not wait:
            self._ensure_task(entry)
            raise ApiError(503, f"the model '{entry.id}' is loading "
                                f"({entry.load_progress:.0%})", code="model_loading",
                           headers={"Retry-After": RETRY_AFTER_S})
        entry.waiting += 1
        try:
            while entry.state != LOADED:
                await asyncio.shield(self._ensure_task(entry))
        finally:
            entry.waiting -= 1
        entry.leases += 1  # no await since the check: the model is still loaded
        entry.last_used = time.monotonic()

    def release(self, entry: RoutedModel) -> None:
        """End a lease taken by :meth:`acquire`."""
        entry.leases = max(0, entry.leases - 1)
        entry.last_used = time.monotonic()

    def _ensure_task(self, entry: RoutedModel, reason: str = "requested"
                     ) -> asyncio.Task[None]:
        if entry.task is None or entry.task.done():
            entry.task = asyncio.get_running_loop().create_task(self._load(entry, reason))
        return entry.task

    # -- loading --------------------------------------------------------------------------
    async def _load(self, entry: RoutedModel, reason: str = "requested") -> None:
        async with self._lock:
            if self._stopping:
                raise ApiError(503, "the server is shutting down", code="engine_closed")
            if entry.state == LOADED:
                return
            stamp = self._refuse_known_bad(entry)
            entry.state, entry.load_progress, entry.load_error = LOADING, 0.0, None
            try:
                await self._load_locked(entry, reason)
                entry.failed_stamp = None
            except BaseException as exc:
                entry.state = ON_DISK
                entry.planned = {}
                self._predict_alone(entry)
                deferred = isinstance(exc, ApiError) and exc.status == 503
                entry.load_error = None if deferred else _without_paths(str(exc),
                                                                        entry.model.path)
                if isinstance(exc, EngineError) and not isinstance(
                        exc, OutOfMemoryError | ModelLoadCancelled):
                    entry.failed_stamp = stamp
                if isinstance(exc, ApiError):
                    log.warning("not loading %s: %s", entry.id, exc.message)
                    raise
                if isinstance(exc, OutOfMemoryError):
                    log.warning("loading %s ran out of memory: %s", entry.id, exc)
                    raise ApiError(507, f"the model '{entry.id}' ran out of memory while "
                                        "loading", code="insufficient_memory") from exc
                if isinstance(exc, EngineError):
                    log.warning("loading %s failed: %s", entry.id, exc)
                    raise ApiError(500, f"the model '{entry.id}' failed to load",
                                   code="model_load_failed") from exc
                raise

    @staticmethod
    def _refuse_known_bad(entry: RoutedModel) -> tuple[int, int]:
        """The model file's (size, mtime); a 500 before anything is unloaded to make room
        when the file is gone or is the very file that failed to load before (a request
        for a broken model must not evict the healthy ones, again and again)."""
        try:
            st = entry.model.path.stat()
        except OSError:
            entry.load_error = "the model file is missing"
            raise ApiError(500, f"the model '{entry.id}' failed to load: its file is "
                                "missing", code="model_load_failed") from None
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp == entry.failed_stamp:
            raise ApiError(500, f"the model '{entry.id}' failed to load (its file has not "
                                "changed since)", code="model_load_failed")
        return stamp

    def _refuse_unfit(self, entry: RoutedModel) -> None:
        """A 507 when the model's plan alone (once made) does not fit this machine."""
        alone = self.planner.alone_if_planned(entry.model.path)
        if alone is not None and not fits(alone):
            need, budget = need_of(alone), budget_of(alone)
            raise ApiError(507, f"the model '{entry.id}' does not fit this machine even "
                                f"alone: {shortfall_text(need, budget)}",
                           code="insufficient_memory")

    async def _load_locked(self, entry: RoutedModel, reason: str) -> None:
        path = entry.model.path
        try:
            alone = await asyncio.to_thread(self.planner.alone, path)
        except Exception as exc:  # an unreadable header
            log.warning("cannot plan %s: %s", entry.id, exc)
            raise ApiError(500, f"the model '{entry.id}' cannot be planned: "
                                f"{type(exc).__name__}", code="model_load_failed") from exc
        entry.predicted_decode_tps = alone.predicted.decode_tps
        self._refuse_unfit(entry)
        others = [e for e in self.resident() if e is not entry]
        p = await asyncio.to_thread(self.planner.beside, path, [e.resident() for e in others])
        over = self.options.models_max is not None and len(others) + 1 > self.options.models_max
        if not fits(p) or over:
            await self._make_room(entry, need_of(alone), budget_of(alone), others)
            others = [e for e in self.resident() if e is not entry]
            p = await asyncio.to_thread(self.planner.beside, path,
                                        [e.resident() for e in others])
            if not fits(p):
                free = remaining(budget_of(alone), [e.resident() for e in others])
                raise ApiError(507, f"the model '{entry.id}' does not fit beside the "
                                    f"pinned or busy models: "
                                    f"{shortfall_text(need_of(alone), free)}",
                               code="insufficient_memory")
        spec = self.planner.spec(path, p)
        entry.planned = need_of(p)
        entry.predicted_decode_tps = p.predicted.decode_tps  # the plan it runs with
        t0 = time.monotonic()
        engine = await asyncio.to_thread(self._loader, spec, self._progress(entry))
        served = await asyncio.to_thread(self._served, entry, engine)
        entry.engine, entry.served = engine, served
        # its child starts on the first grammar; an embedding model takes none
        entry.probe = None if _refuses_generation(engine) else GrammarProbe(str(path))
        entry.state, entry.load_progress = LOADED, 1.0
        entry.loaded_at = entry.last_used = time.monotonic()
        log.info("loaded %s (%s) in %.2f s: %s planned", entry.id, reason,
                 entry.loaded_at - t0, ", ".join(f"{gib(n)} {'RAM' if d == 'host' else d}"
                                                 for d, n in sorted(entry.planned.items())))
        self.events("load", entry.id, reason)

    def _predict_alone(self, entry: RoutedModel) -> None:
        alone = self.planner.alone_if_planned(entry.model.path)
        if alone is not None:
            entry.predicted_decode_tps = alone.predicted.decode_tps

    def _progress(self, entry: RoutedModel) -> Callable[[float], bool]:
        def progress(value: float) -> bool:
            entry.load_progress = value
            return not self._stopping

        return progress

    @staticmethod
    def _served(entry: RoutedModel, engine: EngineLike) -> ServedModel:
        names = entry.model.aliases | {engine.model_name}
        return ServedModel(id=entry.id, aliases=frozenset(names - {entry.id}),
                           n_ctx_per_seq=engine.n_ctx_per_seq,
                           template_tools=template_renders_tools(engine),
                           spec_modes=engine.speculation_modes,
                           spec_refusal=engine.speculation_refusal,
                           vision_refusal=getattr(engine, "vision_refusal",
                                                  "this engine takes no images"),
                           n_vocab=getattr(engine, "n_vocab", None))

    async def _make_room(self, entry: RoutedModel, need: dict[str, int],
                         budget: dict[str, int], others: list[RoutedModel]) -> None:
        decision = make_room(budget, [e.resident() for e in others], need,
                             self.options.models_max)
        if not decision.fits:
            text = shortfall_text({s.device: s.need_bytes for s in decision.shortfall},
                                  {s.device: s.free_bytes for s in decision.shortfall})
            what = text or f"{self.options.models_max} models are resident and pinned"
            raise ApiError(507, f"the model '{entry.id}' cannot be loaded: {what} "
                                "(the rest is held by pinned or busy models)",
                           code="insufficient_memory")
        free = remaining(budget, [e.resident() for e in others])
        short = {d: n for d, n in need.items() if n > free.get(d, 0)}
        why = (f"to make room for {entry.id}: {shortfall_text(short, free)}" if short
               else f"to make room for {entry.id}: --models-max {self.options.models_max}")
        victims = [self.models[v] for v in decision.evict]
        self.residency.check(entry.id, [(v.id, v.loaded_at, v.busy) for v in victims])
        for victim_id in decision.evict:
            await self._unload(self.models[victim_id], why)

    async def _unload(self, entry: RoutedModel, reason: str) -> None:
        """Unload ``entry`` once its requests end (new ones wait for its reload)."""
        if entry.state != LOADED:
            return
        entry.state = UNLOADING
        while entry.leases > 0:
            await asyncio.sleep(0.02)
        engine, probe = entry.engine, entry.probe
        entry.engine = entry.served = entry.probe = None
        if engine is not None:
            close = getattr(engine, "close", None)
            if close is not None:
                await asyncio.to_thread(close)
        if probe is not None:
            await asyncio.to_thread(probe.close)
        entry.state, entry.planned, entry.load_progress = ON_DISK, {}, 0.0
        self._predict_alone(entry)
        log.info("unloaded %s %s", entry.id, reason)
        self.events("unload", entry.id, reason)

    # -- idle timeout and start --------------------------------------------------------
    def _start_reaper(self) -> None:
        if self._reaper is None and self.options.idle_timeout_s is not None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        timeout = self.options.idle_timeout_s
        assert timeout is not None
        while not self._stopping:
            await asyncio.sleep(min(1.0, max(0.05, timeout / 4)))
            now = time.monotonic()
            for model_id in idle_expired([e.resident() for e in self.resident()
                                          if e.state == LOADED], now, timeout):
                entry = self.models[model_id]
                async with self._lock:  # used while this waited for the lock: it stays
                    idle = time.monotonic() - entry.last_used
                    if entry.state == LOADED and not entry.busy and idle >= timeout:
                        await self._unload(entry, f"(idle {idle:.0f} s)")

    async def start(self) -> None:
        """Begin serving: load the pinned models (in the background) and the idle timer."""
        self._start_reaper()
        for entry in self.models.values():
            if entry.pinned:
                task = self._ensure_task(entry, "pinned")
                task.add_done_callback(_log_failure)
        self._predicting = asyncio.get_running_loop().create_task(
            asyncio.to_thread(self.predict_all))

    def stopping(self) -> None:
        """The server is stopping: cancel loads under way, start no more."""
        self._stopping = True

    def stop(self) -> None:
        """Close every engine (called once the server has stopped serving)."""
        self._stopping = True
        for entry in self.models.values():
            engine, probe = entry.engine, entry.probe
            entry.engine = entry.served = entry.probe = None
            entry.state = ON_DISK
            close = getattr(engine, "close", None)
            if close is not None:
                close()
            if probe is not None:
                probe.close()

    # -- what /v1/models and the status show ------------------------------------------
    def describe(self, entry: RoutedModel) -> dict[str, Any]:
        """One model's state for ``/v1/models`` (extra properties of the model object)."""
        doc: dict[str, Any] = {
            "state": entry.state, "aliases": sorted(entry.model.aliases),
            "pinned": entry.pinned, "size_bytes": entry.model.size_bytes,
            "planned_bytes": dict(entry.planned),
            "predicted_decode_tps": round(entry.predicted_decode_tps, 2)
            if entry.predicted_decode_tps is not None else None,
            "requests_in_flight": entry.leases, "requests_waiting": entry.waiting,
        }
        if entry.state == LOADING:
            doc["load_progress"] = round(entry.load_progress, 3)
        if entry.load_error and entry.state == ON_DISK:
            doc["load_error"] = entry.load_error
        return doc

    def predict_all(self) -> None:
        """Plan every model alone, for its predicted speed (blocking; in a thread)."""
        for entry in self.models.values():
            if entry.predicted_decode_tps is None and not self._stopping:
                try:
                    entry.predicted_decode_tps = self.planner.alone(
                        entry.model.path).predicted.decode_tps
                except Exception as exc:  # shown as unknown; its load will say why
                    log.info("cannot plan %s: %s", entry.id, exc)


def _refuses_generation(engine: EngineLike) -> bool:
    """An engine that only embeds (chat and completions are refused)."""
    from engine.embedding_engine import EmbeddingEngine

    return isinstance(engine, EmbeddingEngine)


def _without_paths(text: str, path: Path) -> str:
    """``text`` with the model's folder left out (``/v1/models`` shows it to clients;
    the server's log keeps the whole reason)."""
    for full in {str(path), str(path.resolve())}:
        text = text.replace(full, Path(full).name)
    return text


def _log_failure(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None and not isinstance(exc, ApiError | ModelLoadCancelled):
        log.warning("loading a pinned model failed: %s", exc)
