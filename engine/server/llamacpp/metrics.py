"""llama-server's metric names (``llamacpp:...``) beside Loadout's own on ``/metrics``.

They are fed by the same finished generations as Loadout's families, with llama-server's
definitions: ``prompt_tokens_total`` counts the prompt tokens processed (the ones reused
from a slot's cache are ``prompt_tokens_cached_total``), ``tokens_predicted_seconds_total``
the time from each answer's first to its last token, ``predicted_tokens_seconds`` the
tokens after the first per that time (Loadout's decode t/s over all requests so far).
``spec_decode_num_drafts_total`` counts the requests that drafted (Loadout keeps no count
of single drafts). ``n_decode_total`` and ``n_busy_slots_per_decode`` are the engine's
decode steps, read at the scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from engine.metrics import Metrics
from engine.server import prom
from engine.server.llamacpp.native_docs import llama_timings
from engine.server.server_metrics import ServerMetrics


class LlamaMetrics:
    """The ``llamacpp:`` families on a server's registry."""

    def __init__(self, metrics: ServerMetrics, in_flight: Callable[[], int]) -> None:
        self._metrics = metrics
        self._in_flight = in_flight
        self._lock = threading.Lock()
        self._prompt_s = 0.0
        self._predicted_s = 0.0
        self._n_tokens_max = 0
        r = metrics.registry
        p = "llamacpp:"
        self.prompt_tokens = r.counter(p + "prompt_tokens_total",
                                       "Number of prompt tokens processed.")
        self.cached = r.counter(p + "prompt_tokens_cached_total",
                                "Number of prompt tokens reused from a slot's cache.")
        self.prompt_seconds = r.counter(p + "prompt_seconds_total",
                                        "Prompt process time (seconds).")
        self.predicted = r.counter(p + "tokens_predicted_total",
                                   "Number of generation tokens processed.")
        self.predicted_seconds = r.counter(p + "tokens_predicted_seconds_total",
                                           "Predict process time (seconds), first to last "
                                           "token of each answer.")
        r.counter_from(p + "n_decode_total", "Total number of llama_decode() calls.",
                       lambda: self._step("steps"))
        r.counter_from(p + "n_tokens_max",
                       "Largest number of tokens one request held (prompt + answer).",
                       lambda: [((), float(self._n_tokens_max))])
        self.drafted = r.counter(p + "spec_decode_num_draft_tokens_total",
                                 "Number of tokens drafted when speculating.")
        self.accepted = r.counter(p + "spec_decode_num_accepted_tokens_total",
                                  "Number of drafted tokens accepted.")
        self.drafts = r.counter(p + "spec_decode_num_drafts_total",
                                "Number of requests that drafted tokens.")
        r.gauge(p + "prompt_tokens_seconds", "Average prompt throughput in tokens/s.",
                source=lambda: [((), self._rate(self.prompt_tokens, self._prompt_s))])
        r.gauge(p + "predicted_tokens_seconds",
                "Average generation throughput in tokens/s (tokens after each answer's "
                "first).", source=self._decode_rate)
        # the requests being answered (exact), not the slots' snapshot, which may lag
        # the end of a request by one decode step
        r.gauge(p + "requests_processing", "Number of requests processing.",
                source=lambda: [((), float(self._in_flight()))])
        r.gauge(p + "requests_deferred", "Number of requests deferred.",
                source=lambda: self._status("queued"))
        r.gauge(p + "n_busy_slots_per_decode", "Average number of busy slots per "
                "llama_decode() call.", source=self._busy_per_decode)
        self._steps_after_first = 0
        metrics.listeners.append(self.generation_done)

    def generation_done(self, m: Metrics) -> None:
        """Count one finished generation."""
        t = llama_timings(m)
        self.prompt_tokens.inc(t["prompt_n"])
        self.cached.inc(t["cache_n"])
        self.predicted.inc(t["predicted_n"])
        self.prompt_seconds.inc(t["prompt_ms"] / 1e3)
        self.predicted_seconds.inc(t["predicted_ms"] / 1e3)
        if m.drafted_tokens:
            self.drafted.inc(m.drafted_tokens)
            self.accepted.inc(m.accepted_tokens)
            self.drafts.inc()
        with self._lock:
            self._prompt_s += t["prompt_ms"] / 1e3
            self._predicted_s += t["predicted_ms"] / 1e3
            self._steps_after_first += max(0, m.generated_tokens - 1) \
                if t["predicted_ms"] > 0 else 0
            self._n_tokens_max = max(self._n_tokens_max, m.prompt_tokens + m.generated_tokens)

    @staticmethod
    def _rate(counter: prom.Counter, seconds: float) -> float:
        return counter.get() / seconds if seconds > 0 else 0.0

    def _decode_rate(self) -> Iterable[tuple[prom.LabelValues, float]]:
        with self._lock:
            steps, seconds = self._steps_after_first, self._predicted_s
        return [((), steps / seconds if seconds > 0 else 0.0)]

    def _status(self, key: str) -> Iterable[tuple[prom.LabelValues, float]]:
        status = self._metrics.snapshot or {}
        value = status.get(key)
        return [((), float(value) if isinstance(value, int | float) else 0.0)]

    def _steps(self) -> dict[str, Any]:
        status = self._metrics.snapshot or {}
        steps = status.get("steps")
        return steps if isinstance(steps, dict) else {}

    def _step(self, key: str) -> Iterable[tuple[prom.LabelValues, float]]:
        value = self._steps().get(key)
        return [((), float(value) if isinstance(value, int | float) else 0.0)]

    def _busy_per_decode(self) -> Iterable[tuple[prom.LabelValues, float]]:
        steps = self._steps()
        n, busy = steps.get("steps") or 0, steps.get("generating_slots") or 0
        return [((), float(busy) / n if isinstance(n, int | float) and n else 0.0)]
