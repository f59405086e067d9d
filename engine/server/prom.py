"""Prometheus text exposition (format 0.0.4): counters, gauges and histograms.

Small on purpose: the server needs a handful of metric families with at most a couple
of labels, so we write the text format ourselves instead of adding a dependency.
All updates take one lock; rendering copies under it and formats outside.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

LabelValues = tuple[str, ...]

# Buckets in seconds for latencies and in tokens/s for speeds. The speed buckets span a
# CPU running a 70B model (~1 t/s) to a GPU running a tiny one (thousands).
TTFT_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                                   30.0, 60.0)
SPEED_BUCKETS: tuple[float, ...] = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
                                    1000.0, 2500.0, 5000.0, 10000.0)
RATIO_BUCKETS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def _fmt(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _labels(names: Sequence[str], values: Sequence[str],
            extra: tuple[str, str] | None = None) -> str:
    pairs = [f'{n}="{_escape_label(v)}"' for n, v in zip(names, values, strict=True)]
    if extra is not None:
        pairs.append(f'{extra[0]}="{_escape_label(extra[1])}"')
    return "{" + ",".join(pairs) + "}" if pairs else ""


@dataclass
class _Family:
    name: str
    help: str
    kind: str
    label_names: tuple[str, ...]
    lock: threading.Lock

    def _check(self, labels: Sequence[str]) -> LabelValues:
        if len(labels) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, got {tuple(labels)}")
        return tuple(str(v) for v in labels)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]

    def render(self) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass
class Counter(_Family):
    """A monotonically increasing count, per label combination."""

    values: dict[LabelValues, float] = field(default_factory=dict)

    def inc(self, amount: float = 1.0, labels: Sequence[str] = ()) -> None:
        """Add ``amount`` (>= 0) to the series named by ``labels``."""
        if amount < 0:
            raise ValueError("a counter only goes up")
        key = self._check(labels)
        with self.lock:
            self.values[key] = self.values.get(key, 0.0) + amount

    def get(self, labels: Sequence[str] = ()) -> float:
        with self.lock:
            return self.values.get(self._check(labels), 0.0)

    def render(self) -> list[str]:
        with self.lock:
            items = sorted(self.values.items())
        lines = self.header()
        if not items and not self.label_names:
            items = [((), 0.0)]
        lines += [f"{self.name}{_labels(self.label_names, k)} {_fmt(v)}" for k, v in items]
        return lines


@dataclass
class Gauge(_Family):
    """A value that goes up and down; optionally read from a callback at render time."""

    values: dict[LabelValues, float] = field(default_factory=dict)
    source: Callable[[], Iterable[tuple[LabelValues, float]]] | None = None

    def set(self, value: float, labels: Sequence[str] = ()) -> None:
        key = self._check(labels)
        with self.lock:
            self.values[key] = float(value)

    def render(self) -> list[str]:
        if self.source is not None:
            try:
                items = sorted((tuple(k), float(v)) for k, v in self.source())
            except Exception:  # a failing probe must not break the whole scrape
                log.exception("gauge %s: source failed", self.name)
                items = []
        else:
            with self.lock:
                items = sorted(self.values.items())
        return self.header() + [
            f"{self.name}{_labels(self.label_names, k)} {_fmt(v)}" for k, v in items
        ]


@dataclass
class _HistogramSeries:
    counts: list[int]
    total: float = 0.0
    count: int = 0


@dataclass
class Histogram(_Family):
    """Observations counted into cumulative buckets, with their sum and count."""

    buckets: tuple[float, ...] = TTFT_BUCKETS
    series: dict[LabelValues, _HistogramSeries] = field(default_factory=dict)

    def observe(self, value: float, labels: Sequence[str] = ()) -> None:
        """Record one observation (NaN is ignored)."""
        if math.isnan(value):
            return
        key = self._check(labels)
        with self.lock:
            s = self.series.get(key)
            if s is None:
                s = self.series[key] = _HistogramSeries(counts=[0] * len(self.buckets))
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    s.counts[i] += 1
            s.total += value
            s.count += 1

    def count(self, labels: Sequence[str] = ()) -> int:
        with self.lock:
            s = self.series.get(self._check(labels))
            return s.count if s else 0

    def render(self) -> list[str]:
        with self.lock:
            items = sorted((k, (list(s.counts), s.total, s.count))
                           for k, s in self.series.items())
        if not items and not self.label_names:
            items = [((), ([0] * len(self.buckets), 0.0, 0))]
        lines = self.header()
        for key, (counts, total, count) in items:
            for bound, c in zip(self.buckets, counts, strict=True):
                lines.append(f"{self.name}_bucket"
                             f"{_labels(self.label_names, key, ('le', _fmt(bound)))} {c}")
            lines.append(f"{self.name}_bucket"
                         f"{_labels(self.label_names, key, ('le', '+Inf'))} {count}")
            lines.append(f"{self.name}_sum{_labels(self.label_names, key)} {_fmt(total)}")
            lines.append(f"{self.name}_count{_labels(self.label_names, key)} {count}")
        return lines


class Registry:
    """A set of metric families rendered together in registration order."""

    CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, _Family] = {}

    def _add(self, family: _Family) -> None:
        if family.name in self._families:
            raise ValueError(f"metric {family.name} registered twice")
        self._families[family.name] = family

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        """Register and return a counter."""
        c = Counter(name, help, "counter", tuple(labels), self._lock)
        self._add(c)
        return c

    def gauge(self, name: str, help: str, labels: Sequence[str] = (),
              source: Callable[[], Iterable[tuple[LabelValues, float]]] | None = None) -> Gauge:
        """Register and return a gauge; ``source`` (if given) is read at every render."""
        g = Gauge(name, help, "gauge", tuple(labels), self._lock, source=source)
        self._add(g)
        return g

    def counter_from(self, name: str, help: str,
                     source: Callable[[], Iterable[tuple[LabelValues, float]]]) -> Gauge:
        """Register a counter whose value is read from ``source`` at every render (a
        count kept elsewhere, e.g. the engine's decode steps)."""
        g = Gauge(name, help, "counter", (), self._lock, source=source)
        self._add(g)
        return g

    def histogram(self, name: str, help: str, buckets: Sequence[float],
                  labels: Sequence[str] = ()) -> Histogram:
        """Register and return a histogram with the given upper bounds (sorted)."""
        bounds = tuple(sorted(float(b) for b in buckets))
        h = Histogram(name, help, "histogram", tuple(labels), self._lock, buckets=bounds)
        self._add(h)
        return h

    def render(self) -> str:
        """The whole exposition, one family after another, ending in a newline."""
        lines: list[str] = []
        for family in list(self._families.values()):
            lines += family.render()
        return "\n".join(lines) + "\n"
