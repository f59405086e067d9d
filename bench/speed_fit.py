"""Fitting the speed model's free constants to measured rows, and scoring it honestly.

Each row's plan splits one token's time into terms, each priced by one or two of the
free constants (a GPU's bandwidth fraction, its per-layer cost, the CPU's...). With the
placement held as planned, a constant scaled by ``k`` scales its terms by ``k`` or
``1 / k`` exactly, so a row's decode under any scaling is arithmetic on its terms:
that makes a fit cheap enough to repeat once per left-out row.

A speculative row's step is its plain token's time times the planned ratio (drafting and
the verified tokens' arithmetic follow the model's bytes and FLOPs) plus the fixed cost
a verify step adds per GPU layer (one free constant); tokens per step are as planned.

The fit minimises the mean absolute log error with a weak pull of every constant
toward its physical default (so a constant that few rows see stays near it), by
coordinate descent inside physical bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from planner.inventory import Backend, Inventory
from planner.speed import Speed, SpeedConstants, gpu_of, spec_step_seconds


@dataclass(frozen=True)
class Knob:
    """One free constant (or a set scaled together): its prior (a physical default set
    before any row was seen: FIELD-NOTES' bandwidth shares, a kernel launch per op) and
    the bounds of its value around that prior."""

    name: str
    constants: tuple[str, ...]
    prior: float        # of the first constant
    lo: float           # bounds, as multiples of the prior
    hi: float


KNOBS: tuple[Knob, ...] = (
    Knob("gpu_bw", ("gpu_bw_fraction",), 0.80, 0.5, 1.2),
    Knob("rocm_bw", ("rocm_bw_fraction",), 0.60, 0.5, 1.5),
    Knob("metal_bw", ("metal_bw_fraction",), 0.70, 0.6, 1.35),
    Knob("expert", ("gpu_expert_efficiency",), 0.70, 0.4, 1.4),
    Knob("gpu_layer", ("gpu_layer_s",), 45e-6, 0.25, 4.0),
    Knob("rocm_layer", ("rocm_layer_s",), 90e-6, 0.25, 4.0),
    Knob("spec_layer", ("spec_layer_s",), 45e-6, 0.1, 4.0),
    Knob("cpu_bw", ("cpu_bw_fraction", "cpu_core_gbps"), 0.80, 0.5, 1.2),
    Knob("cpu_layer", ("cpu_layer_s", "cpu_layer_thread_s", "cpu_recurrent_layer_s"),
         40e-6, 0.25, 4.0),
    Knob("hybrid", ("hybrid_arith_share",), 1.0, 0.25, 2.0),
)
K = {k.name: i for i, k in enumerate(KNOBS)}

# token-time terms of a row: (name, {knob: exponent of its scale})
TERMS: tuple[tuple[str, dict[str, int]], ...] = (
    ("gpu_weights", {"gpu_bw": -1}), ("gpu_experts", {"gpu_bw": -1, "expert": -1}),
    ("gpu_layers", {"gpu_layer": 1}),
    ("rocm_weights", {"rocm_bw": -1}), ("rocm_experts", {"rocm_bw": -1, "expert": -1}),
    ("rocm_layers", {"rocm_layer": 1}),
    ("metal_weights", {"metal_bw": -1}), ("metal_experts", {"metal_bw": -1, "expert": -1}),
    ("metal_layers", {"gpu_layer": 1}),
    ("host_reads", {"cpu_bw": -1}), ("host_layers", {"cpu_layer": 1}),
    ("hybrid_host_arith", {"hybrid": 1}),
    ("fixed", {}),
)
T = {name: i for i, (name, _) in enumerate(TERMS)}
EXPONENTS = np.zeros((len(TERMS), len(KNOBS)))
for _i, (_n, _e) in enumerate(TERMS):
    for _k, _x in _e.items():
        EXPONENTS[_i, K[_k]] = _x
PRIOR = 0.02          # weight of the pull toward the default, per unit of log-scale^2


def row_terms(inventory: Inventory, speed: Speed) -> np.ndarray:
    """One plain token's seconds of ``speed``, split into :data:`TERMS`."""
    out = np.zeros(len(TERMS))
    for d in speed.devices:
        gpu = gpu_of(inventory, d.device)
        if gpu is None:
            out[T["host_reads"]] += d.weights_s + d.experts_s + d.kv_s
            out[T["hybrid_host_arith"]] += d.arith_s
            out[T["host_layers"]] += d.overhead_s
        elif gpu.remote:
            out[T["fixed"]] += d.total_s
            continue
        else:
            kind = ("metal" if gpu.backend == Backend.METAL else
                    "rocm" if gpu.backend == Backend.ROCM else "gpu")
            out[T[f"{kind}_weights"]] += d.weights_s + d.kv_s
            out[T[f"{kind}_experts"]] += d.experts_s
            out[T[f"{kind}_layers"]] += d.overhead_s
        out[T["fixed"]] += d.disk_s
    out[T["fixed"]] += speed.transfer_s
    return out


@dataclass(frozen=True)
class FitRows:
    """The rows a fit sees: plain-token terms (n x terms), tokens per step, step over
    plain token (without the per-layer step cost), per-layer step seconds, measured t/s."""

    terms: np.ndarray
    tokens: np.ndarray
    ratio: np.ndarray
    step_layer_s: np.ndarray
    measured: np.ndarray

    def predict(self, theta: np.ndarray) -> np.ndarray:
        """Decode t/s of every row with the knobs' log-scales ``theta``."""
        scale = np.exp(EXPONENTS @ theta)
        step = (self.terms @ scale) * self.ratio \
            + self.step_layer_s * math.exp(theta[K["spec_layer"]])
        return self.tokens / step

    def take(self, mask: np.ndarray) -> FitRows:
        return FitRows(self.terms[mask], self.tokens[mask], self.ratio[mask],
                       self.step_layer_s[mask], self.measured[mask])


def prior_offsets(shipped: SpeedConstants) -> np.ndarray:
    """Each knob's prior as a log-scale of the shipped constant."""
    return np.array([math.log(k.prior / getattr(shipped, k.constants[0])) for k in KNOBS])


def fit(rows: FitRows, shipped: SpeedConstants, passes: int = 6) -> np.ndarray:
    """The knobs' log-scales (of the ``shipped`` constants the rows were planned with)
    that minimise mean |log(predicted / measured)| plus the pull toward the priors."""
    center = prior_offsets(shipped)
    theta = center.copy()
    seen = (rows.terms @ np.abs(EXPONENTS)) > 0   # rows x knobs: which rows a knob prices
    seen[:, K["spec_layer"]] = rows.step_layer_s > 0

    def loss(t: np.ndarray) -> float:
        err = np.abs(np.log(rows.predict(t) / rows.measured))
        return float(err.mean() + PRIOR * float((t - center) @ (t - center)))

    for _ in range(passes):
        for j, knob in enumerate(KNOBS):
            if not seen[:, j].any():
                continue
            lo, hi = center[j] + math.log(knob.lo), center[j] + math.log(knob.hi)
            theta[j] = _golden(lambda x, j=j: loss(_with(theta, j, x)), lo, hi)
    return theta


def _with(theta: np.ndarray, j: int, x: float) -> np.ndarray:
    t = theta.copy()
    t[j] = x
    return t


def _golden(f: Any, lo: float, hi: float, steps: int = 40) -> float:
    """Minimum of ``f`` on [lo, hi] by a coarse scan then golden-section refinement."""
    grid = np.linspace(lo, hi, 17)
    vals = [f(x) for x in grid]
    i = int(np.argmin(vals))
    a, b = grid[max(0, i - 1)], grid[min(len(grid) - 1, i + 1)]
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(steps):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return float((a + b) / 2)


def leave_one_out(rows: FitRows, shipped: SpeedConstants) -> np.ndarray:
    """Each row's decode predicted by knobs fitted on all the other rows."""
    n = len(rows.measured)
    out = np.zeros(n)
    for i in range(n):
        mask = np.ones(n, dtype=bool)
        mask[i] = False
        theta = fit(rows.take(mask), shipped)
        out[i] = rows.take(~mask).predict(theta)[0]
    return out


def spec_terms(inventory: Inventory, speed: Speed, c: SpeedConstants
               ) -> tuple[float, float, float]:
    """(tokens per step, step over plain token less the per-layer step cost, that cost)."""
    if speed.spec.draft_tokens == 0 or speed.token_s <= 0:
        return 1.0, 1.0, 0.0
    layer_s = spec_step_seconds(inventory, speed, c)
    step = speed.token_s * speed.spec.step_cost
    return speed.spec.tokens_per_step, (step - layer_s) / speed.token_s, layer_s


def constants_for(theta: np.ndarray, base: SpeedConstants) -> SpeedConstants:
    """The constants the knobs' log-scales ``theta`` stand for, from ``base``."""
    names = {f.name for f in fields(base)}
    changes: dict[str, float] = {}
    for j, knob in enumerate(KNOBS):
        for name in knob.constants:
            assert name in names, name
            changes[name] = getattr(base, name) * math.exp(theta[j])
    return replace(base, **changes)  # type: ignore[arg-type]


def leave_source_out(rows: FitRows, sources: list[str], fitted: np.ndarray,
                     shipped: SpeedConstants) -> np.ndarray:
    """Each row's decode predicted by knobs fitted on the ``fitted`` rows of every *other*
    source: a source's machine never teaches the model its own rows."""
    out = np.zeros(len(rows.measured))
    for source in sorted(set(sources)):
        mine = np.array([s == source for s in sources])
        theta = fit(rows.take(fitted & ~mine), shipped)
        out[mine] = rows.take(mine).predict(theta)
    return out
