"""What the server serves: the engine once loaded, or the progress or failure of its load.

With a router (``loadout serve --models DIR``) the server serves many models: the request's
``model`` field picks one. :func:`select_model` (awaited by the body reader, so every
route gets it) waits until that model is loaded and leases it for the request;
``require()`` then answers with that model's engine, as it does with one model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.server.engine_like import RETRY_AFTER_S as RETRY_AFTER_S
from engine.server.engine_like import EngineLike as EngineLike
from engine.server.engine_like import template_renders_tools as template_renders_tools
from engine.server.grammar_probe import GrammarProbe
from engine.server.openai_schema import ApiError, ServedModel
from engine.server.request_model import shown

if TYPE_CHECKING:
    from engine.metrics import Metrics
    from engine.server.router import RoutedModel, Router

log = logging.getLogger(__name__)

# a request sending this header with "0" is answered 503 while its model loads
WAIT_HEADER = "x-loadout-wait"


@dataclass
class RequestModels:
    """The model one request was routed to, and the leases it holds until it ends."""

    entry: RoutedModel | None = None
    name: str | None = None  # the model the request named
    leases: list[RoutedModel] = field(default_factory=list)


_request_models: ContextVar[RequestModels | None] = ContextVar("loadout_request_models",
                                                               default=None)


class ServerState:
    """What the app serves: the engine once loaded, or the load's progress or failure.

    With ``router`` set, many models: see the module's docstring.
    """

    def __init__(self, model_id: str | None = None, aliases: Sequence[str] = (),
                 router: Router | None = None) -> None:
        self.router = router
        self.engine: EngineLike | None = None
        self.served: ServedModel | None = None
        self.model_id = model_id
        self.aliases = frozenset(aliases)
        self.tags: tuple[str, ...] = ()  # listed with the model (llama-server's --tags)
        self.alias_names: tuple[str, ...] = ()  # the --alias names, listed as aliases
        self.load_progress = 0.0
        self.load_error: str | None = None
        self.started = time.time()
        self.in_flight = 0
        # tries each request's grammar in a child process first (None: not checked so)
        self._grammar_probe: GrammarProbe | None = None
        self._lock = threading.Lock()
        # called with (model id, the finished generation's metrics), for per-model counts
        self.on_generation: Any = None

    @property
    def grammar_probe(self) -> GrammarProbe | None:
        """The grammar checker of the request's model."""
        if self.router is not None:
            entry = self._routed()
            return entry.probe if entry is not None else None
        return self._grammar_probe

    @grammar_probe.setter
    def grammar_probe(self, probe: GrammarProbe | None) -> None:
        self._grammar_probe = probe

    def attach(self, engine: EngineLike) -> None:
        """Serve ``engine`` from now on (called once it has loaded).

        The model id is ``model_id`` (the file's stem for ``loadout serve``) or else the
        model's own name; the other names are accepted as aliases.
        """
        name = self.model_id or engine.model_name
        aliases = {a for a in self.aliases if a} | {engine.model_name}
        self.served = ServedModel(id=name, aliases=frozenset(aliases - {name}),
                                  n_ctx_per_seq=engine.n_ctx_per_seq,
                                  template_tools=template_renders_tools(engine),
                                  spec_modes=engine.speculation_modes,
                                  spec_refusal=engine.speculation_refusal,
                                  vision_refusal=getattr(engine, "vision_refusal",
                                                         "this engine takes no images"),
                                  n_vocab=getattr(engine, "n_vocab", None),
                                  # one model: any name is served by it, as llama-server
                                  lenient=self.router is None, tags=self.tags,
                                  alias_names=self.alias_names)
        self.load_progress = 1.0
        self.engine = engine

    def fail(self, message: str) -> None:
        self.load_error = message

    @property
    def state(self) -> str:
        if self.engine is not None or self.router is not None:
            return "ready"
        return "error" if self.load_error else "loading"

    def _routed(self) -> RoutedModel | None:
        holder = _request_models.get()
        return holder.entry if holder is not None else None

    async def select(self, body: Any, headers: Mapping[str, str] | None = None) -> None:
        """Route this request by its body's ``model``: wait until that model is loaded and
        lease it until the request ends. Does nothing with one model, or when the body
        names no model this router serves (``require`` then answers why).

        Raises:
            ApiError: 503 (its queue is full, or it is loading and the request sent
                ``X-Loadout-Wait: 0``), 507 (it cannot fit), 500 (its load failed).
        """
        router = self.router
        name = body.get("model") if isinstance(body, Mapping) else None
        if router is not None and name is not None and not isinstance(name, str):
            raise ApiError(400, "'model' must be a string", param="model",
                           code="invalid_type")
        if router is None or not isinstance(name, str):
            return
        entry = router.find(name)
        holder = _request_models.get()
        if holder is not None:
            holder.name = name
        if entry is None or holder is None or holder.entry is entry:
            return
        wait = (headers or {}).get(WAIT_HEADER, "1").strip().lower() not in ("0", "no",
                                                                            "false")
        await router.acquire(entry, wait=wait)
        holder.entry = entry
        holder.leases.append(entry)

    def require(self, model: str | None = None) -> tuple[EngineLike, ServedModel]:
        """The engine and model, or a 503 while loading / 500 after a failed load.

        With a router: the model ``model`` names, or else the one this request was routed
        to (:meth:`select`); 400 when the request names none, 404 for an unknown name.
        """
        if self.router is not None:
            return self._require_routed(model)
        if self.engine is not None and self.served is not None:
            return self.engine, self.served
        if self.load_error:  # the reason (it may name paths) is in the server's log
            raise ApiError(500, "the model failed to load", code="model_load_failed")
        raise ApiError(503, f"the model is loading ({self.load_progress:.0%})",
                       code="model_loading", headers={"Retry-After": RETRY_AFTER_S})

    def _require_routed(self, model: str | None) -> tuple[EngineLike, ServedModel]:
        router = self.router
        assert router is not None
        entry = router.find(model) if model is not None else self._routed()
        if model is None and entry is None:
            holder = _request_models.get()
            model = holder.name if holder is not None else None
        if entry is None:
            if model is None:
                raise ApiError(400, "'model' is required: this server serves "
                                    f"{', '.join(router.ids())}", param="model",
                               code="missing_required_parameter")
            raise ApiError(404, f"the model '{shown(model, 80)}' does not exist; this server "
                                f"serves {', '.join(router.ids())}", param="model",
                           code="model_not_found")
        if entry.engine is None or entry.served is None:
            raise ApiError(503, f"the model '{entry.id}' is not loaded "
                                f"({entry.state})", code="model_loading",
                           headers={"Retry-After": RETRY_AFTER_S})
        return entry.engine, entry.served

    def generation_done(self, model_id: str, metrics: Metrics | None) -> None:
        """A generation of ``model_id`` ended (``metrics`` None: its client left)."""
        if self.on_generation is not None:
            self.on_generation(model_id, metrics)

    def models_document(self) -> dict[str, Any]:
        """The ``/v1/models`` list: the one model, or every model of the router with its
        state, aliases, planned memory and predicted decode speed."""
        from engine.server import openai_responses as docs

        if self.router is None:
            return docs.models_list(self.require()[1])
        router = self.router
        return {"object": "list", "data": [
            {"id": e.id, "object": "model", "created": int(self.started),
             "owned_by": "loadout", **router.describe(e)} for e in router.models.values()]}

    def engine_status(self) -> dict[str, Any] | None:
        """The engine's status with the three summary keys the metrics read (with a
        router: their sums over the loaded models, and each model's under ``models``)."""
        if self.router is not None:
            return self._router_status()
        if self.engine is None:
            return None
        return _summarised(self.engine.status())

    def _router_status(self) -> dict[str, Any]:
        """Over the loaded models: the summary sums (the decode t/s of all requests too),
        every slot (with its ``model``), the devices' memory (one reading: it is the
        machine's) and ``planned_bytes`` per device summed; each model's own under
        ``models``."""
        assert self.router is not None
        models: dict[str, Any] = {}
        totals = {"slots_total": 0, "slots_active": 0, "queued": 0}
        slots: list[dict[str, Any]] = []
        devices: list[Any] = []
        planned: dict[str, int] = {}
        decode = 0.0  # every loaded model's decode t/s of all requests, together
        for e in self.router.models.values():
            doc = self.router.describe(e)
            if e.engine is not None:
                status = _summarised(e.engine.status())
                for key in totals:
                    totals[key] += int(status.get(key) or 0)
                decode += float(status.get("decode_tps_all_requests") or 0.0)
                slots += [{**s, "model": e.id} for s in status.get("slots") or ()
                          if isinstance(s, Mapping)]
                devices = devices or list(status.get("devices") or ())
                for device, n in e.planned.items():
                    planned[device] = planned.get(device, 0) + n
                doc["engine"] = status
            models[e.id] = doc
        return {**totals, "decode_tps_all_requests": decode, "slots": slots,
                "devices": devices or _device_readings(),
                "planned_bytes": planned, "models": models}


def _device_readings() -> list[dict[str, Any]]:
    """Each device's free and total memory now (none when they cannot be read)."""
    from engine.ggml_devices import engine_devices

    try:
        return [{"name": d.name, "kind": d.kind, "free_bytes": d.free_bytes,
                 "total_bytes": d.total_bytes} for d in engine_devices()]
    except Exception:  # status must always answer
        return []


def _summarised(raw: Mapping[str, Any]) -> dict[str, Any]:
    """An engine's status with ``slots_total``, ``slots_active`` and ``queued``."""
    status = dict(raw)
    slots = status.get("slots") or []
    status.setdefault("slots_total", len(slots))
    status.setdefault("slots_active", sum(
        1 for s in slots if isinstance(s, Mapping) and s.get("state") not in (None, "idle")))
    queued = status.get("queue_length", status.get("queued", 0))
    status.setdefault("queued", queued)
    return status


class RouteRequests:
    """ASGI middleware: each request may be routed to a model (:meth:`ServerState.select`);
    the leases it took are released when its answer has been sent (streams included)."""

    def __init__(self, app: Any, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        router = self.state.router
        if scope["type"] != "http" or router is None:
            await self.app(scope, receive, send)
            return
        holder = RequestModels()
        token = _request_models.set(holder)
        try:
            await self.app(scope, receive, send)
        finally:
            _request_models.reset(token)
            for entry in holder.leases:
                router.release(entry)
