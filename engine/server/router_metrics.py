"""Per-model Prometheus counters of a router: requests, tokens, loads and unloads."""

from __future__ import annotations

from engine.metrics import Metrics
from engine.server import prom
from engine.server.state import ServerState


class RouterMetrics:
    """The families labelled by model, registered beside the server's own."""

    def __init__(self, registry: prom.Registry) -> None:
        self.requests = registry.counter("loadout_model_requests_total",
                                         "Generations finished (or left by their client), "
                                         "by model", ("model",))
        self.prompt_tokens = registry.counter("loadout_model_prompt_tokens_total",
                                              "Prompt tokens of finished requests, by model",
                                              ("model",))
        self.generated_tokens = registry.counter("loadout_model_generated_tokens_total",
                                                 "Tokens generated, by model", ("model",))
        self.loads = registry.counter("loadout_model_loads_total", "Model loads, by model",
                                      ("model",))
        self.unloads = registry.counter("loadout_model_unloads_total",
                                        "Model unloads, by model and reason (idle, room)",
                                        ("model", "reason"))
        self._state: ServerState | None = None
        registry.gauge("loadout_model_resident", "1 while the model is loaded", ("model",),
                       source=self._resident)

    def attach(self, state: ServerState) -> None:
        """Count ``state``'s router's generations, loads and unloads from now on."""
        assert state.router is not None
        self._state = state
        state.on_generation = self.generation_done
        state.router.events = self.event

    def _resident(self) -> list[tuple[prom.LabelValues, float]]:
        if self._state is None or self._state.router is None:
            return []
        return [((e.id,), 1.0 if e.state == "loaded" else 0.0)
                for e in self._state.router.models.values()]

    def generation_done(self, model_id: str, m: Metrics | None) -> None:
        self.requests.inc(labels=(model_id,))
        if m is not None:
            self.prompt_tokens.inc(m.prompt_tokens, labels=(model_id,))
            self.generated_tokens.inc(m.generated_tokens, labels=(model_id,))

    def event(self, kind: str, model_id: str, reason: str) -> None:
        if kind == "load":
            self.loads.inc(labels=(model_id,))
        else:
            short = "idle" if "idle" in reason else "room" if "room" in reason else "other"
            self.unloads.inc(labels=(model_id, short))
