"""What the server serves: the engine once loaded, or the progress or failure of its load."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from engine.requests import GenerationRequest, RequestHandle
from engine.server import tools as toolcalls
from engine.server.grammar_probe import GrammarProbe
from engine.server.openai_schema import ApiError, ServedModel

log = logging.getLogger(__name__)

RETRY_AFTER_S = "1"


class EngineLike(Protocol):
    """The part of :class:`engine.runtime.Engine` the server uses."""

    def submit(self, request: GenerationRequest) -> RequestHandle: ...
    def render_chat(self, messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None = None,
                    add_generation_prompt: bool = True) -> str: ...
    def status(self) -> dict[str, Any]: ...
    @property
    def model_name(self) -> str: ...
    @property
    def n_ctx_per_seq(self) -> int: ...
    @property
    def speculation_modes(self) -> tuple[str, ...]: ...
    speculation_refusal: str | None


def template_renders_tools(engine: EngineLike) -> bool:
    """Whether the model's chat template shows declared tools to the model."""
    try:
        text = engine.render_chat([{"role": "user", "content": "hi"}],
                                  tools=toolcalls.probe_tools())
    except Exception:  # a template that chokes on tools does not support them
        log.debug("chat template failed with tools", exc_info=True)
        return False
    return toolcalls.PROBE_TOOL_NAME in text


class ServerState:
    """What the app serves: the engine once loaded, or the load's progress or failure."""

    def __init__(self, model_id: str | None = None, aliases: Sequence[str] = ()) -> None:
        self.engine: EngineLike | None = None
        self.served: ServedModel | None = None
        self.model_id = model_id
        self.aliases = frozenset(aliases)
        self.load_progress = 0.0
        self.load_error: str | None = None
        self.started = time.time()
        self.in_flight = 0
        # tries each request's grammar in a child process first (None: not checked so)
        self.grammar_probe: GrammarProbe | None = None
        self._lock = threading.Lock()

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
                                  n_vocab=getattr(engine, "n_vocab", None))
        self.load_progress = 1.0
        self.engine = engine

    def fail(self, message: str) -> None:
        self.load_error = message

    @property
    def state(self) -> str:
        if self.engine is not None:
            return "ready"
        return "error" if self.load_error else "loading"

    def require(self) -> tuple[EngineLike, ServedModel]:
        """The engine and model, or a 503 while loading / 500 after a failed load."""
        if self.engine is not None and self.served is not None:
            return self.engine, self.served
        if self.load_error:  # the reason (it may name paths) is in the server's log
            raise ApiError(500, "the model failed to load", code="model_load_failed")
        raise ApiError(503, f"the model is loading ({self.load_progress:.0%})",
                       code="model_loading", headers={"Retry-After": RETRY_AFTER_S})

    def engine_status(self) -> dict[str, Any] | None:
        """The engine's status with the three summary keys the metrics read."""
        if self.engine is None:
            return None
        status = dict(self.engine.status())
        slots = status.get("slots") or []
        status.setdefault("slots_total", len(slots))
        status.setdefault("slots_active", sum(
            1 for s in slots if isinstance(s, Mapping) and s.get("state") not in (None, "idle")))
        queued = status.get("queue_length", status.get("queued", 0))
        status.setdefault("queued", queued)
        return status
