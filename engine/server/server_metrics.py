"""The server's Prometheus metrics: what was asked, what was generated, how fast.

Speeds are the figures of docs/speed-figures.md, observed once per finished request from the
engine's own :class:`engine.metrics.Metrics`; slot and queue gauges are read from the
engine's status at scrape time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from engine.metrics import Metrics
from engine.server import prom

log = logging.getLogger(__name__)

StatusSource = Callable[[], Mapping[str, Any] | None]


class ServerMetrics:
    """Every metric family of one server, registered on its own registry."""

    def __init__(self, status: StatusSource) -> None:
        self._status = status
        r = self.registry = prom.Registry()
        self.requests = r.counter("loadout_requests_total",
                                  "HTTP requests answered, by endpoint and status code",
                                  ("endpoint", "status"))
        self.finished = r.counter("loadout_generations_total",
                                  "Generations finished, by finish reason", ("reason",))
        self.prompt_tokens = r.counter("loadout_prompt_tokens_total",
                                       "Prompt tokens of finished requests (cached included)")
        self.cached_tokens = r.counter("loadout_prompt_cached_tokens_total",
                                       "Prompt tokens reused from a slot's cache")
        self.generated_tokens = r.counter("loadout_generated_tokens_total",
                                          "Tokens generated")
        self.drafted_tokens = r.counter("loadout_spec_drafted_tokens_total",
                                        "Tokens drafted when speculating")
        self.accepted_tokens = r.counter("loadout_spec_accepted_tokens_total",
                                         "Drafted tokens accepted when speculating")
        self.ttft = r.histogram("loadout_ttft_seconds",
                                "Time to first token: request received to first token",
                                prom.TTFT_BUCKETS)
        self.prefill = r.histogram("loadout_prefill_tokens_per_second",
                                   "Prefill speed: new prompt tokens / prompt time",
                                   prom.SPEED_BUCKETS)
        self.decode = r.histogram("loadout_decode_tokens_per_second",
                                  "Decode speed: tokens after the first / first to last token",
                                  prom.SPEED_BUCKETS)
        self.e2e = r.histogram("loadout_e2e_tokens_per_second",
                               "End-to-end speed: tokens / request received to last token",
                               prom.SPEED_BUCKETS)
        self.acceptance = r.histogram("loadout_spec_acceptance_ratio",
                                      "Accepted / drafted tokens per request when speculating",
                                      prom.RATIO_BUCKETS)
        self.in_flight = r.gauge("loadout_requests_in_flight",
                                 "Generation requests being answered now")
        r.gauge("loadout_slots_active", "Slots generating or prefilling now",
                source=lambda: self._from_status("slots_active"))
        r.gauge("loadout_slots_total", "Parallel slots of the engine",
                source=lambda: self._from_status("slots_total"))
        r.gauge("loadout_queue_length", "Requests waiting for a free slot",
                source=lambda: self._from_status("queued"))
        r.gauge("loadout_model_loaded", "1 once the model is loaded and serving",
                source=lambda: [((), 1.0 if self._snapshot is not None else 0.0)])
        self.in_flight.set(0)
        self._snapshot: Mapping[str, Any] | None = None
        # also told of every finished generation (llama-server's metric names, ...)
        self.listeners: list[Callable[[Metrics], None]] = []

    def _from_status(self, key: str) -> Iterable[tuple[prom.LabelValues, float]]:
        status = self._snapshot
        if status is None:
            return []
        value = status.get(key)
        return [((), float(value))] if isinstance(value, int | float) else []

    def request_done(self, endpoint: str, status: int) -> None:
        """Count one answered HTTP request."""
        self.requests.inc(labels=(endpoint, str(status)))

    def generation_done(self, reason: str, m: Metrics) -> None:
        """Record the figures of one finished generation."""
        self.finished.inc(labels=(reason,))
        self.prompt_tokens.inc(m.prompt_tokens)
        self.cached_tokens.inc(m.cached_tokens)
        self.generated_tokens.inc(m.generated_tokens)
        if m.drafted_tokens:
            self.drafted_tokens.inc(m.drafted_tokens)
            self.accepted_tokens.inc(m.accepted_tokens)
        for hist, value in ((self.ttft, m.ttft_s), (self.prefill, m.prefill_tps),
                            (self.decode, m.decode_tps), (self.e2e, m.e2e_tps),
                            (self.acceptance, m.acceptance)):
            if value is not None:
                hist.observe(value)
        for listener in self.listeners:
            listener(m)

    def render(self) -> str:
        """The exposition text; the engine's status is read once for all its gauges."""
        self._snapshot = self._status()
        return self.registry.render()

    @property
    def snapshot(self) -> Mapping[str, Any] | None:
        """The engine's status as read by the scrape being rendered."""
        return self._snapshot
