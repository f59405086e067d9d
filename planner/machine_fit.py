"""Learning this machine: a bounded correction of the speed model from its own runs.

Every measured run on a machine (bench, chat, server) is recorded with the plan's
regime (backend, dense or MoE, offloaded or not, speculative or not), its raw predicted
figures and the measured ones (``engine/run_records.py``). From those samples this module
fits, for the regime a new plan falls in, one factor for decode and one for prefill: the
median of measured / predicted over the model's own latest runs when there are enough
(its residual), else over the regime's (each model's median counted once: the machine's
part, which carries to a similar model), bounded so a few odd runs cannot run away with
it. Where the regime has no run yet, the backend's runs are used at half strength.

Pure: samples in, a correction out; the Plan keeps its raw prediction beside the
corrected one and says how many runs the correction rests on.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from planner.inventory import Inventory
from planner.plan_types import MachineCorrection, Plan
from planner.profile import ModelProfile
from planner.request import RunSample as RunSample  # its home before; imported from here
from planner.request import SpecMode
from planner.speed import HOST, Speed, gpu_of

log = logging.getLogger(__name__)

LOW, HIGH = 1 / 3, 3.0      # the correction never goes further than this
# A regime whose host part is priced with this machine's measured core rates (Host.
# core_prefill_gflops) says so: runs predicted with the published constants (3x slower
# here) must not correct a plan priced with the measured rates, nor the other way round.
CORE_MEASURED = "/core"
RECENT = 20                 # the latest runs of a regime that count
SAME_MODEL_MIN = 2          # runs of the same model that outweigh the regime's
MIN_DECODE_TOKENS = 16      # a shorter answer's decode figure is noise
MIN_PROMPT_TOKENS = 32      # ... and a shorter prompt's prefill figure


NO_CORRECTION = MachineCorrection()


def regime_of(backend: str, moe: bool, offloaded: bool, speculative: bool) -> str:
    """The regime key: ``backend/dense|moe/resident|offloaded/plain|spec`` (a plan whose
    host part is priced with measured core rates adds :data:`CORE_MEASURED`)."""
    return "/".join((backend, "moe" if moe else "dense",
                     "offloaded" if offloaded else "resident",
                     "spec" if speculative else "plain"))


def plan_regime(inventory: Inventory, profile: ModelProfile, plan: Plan) -> str:
    """The regime of ``plan``: the backend of its main device (``cpu`` when it runs on the
    host), whether layers or experts sit on the host beside a GPU, whether it speculates."""
    layout = plan.layout
    devices = set(layout.placement.layer_devices) if layout else {HOST}
    experts = set(layout.placement.expert_devices) if layout else set()
    gpus = sorted(d for d in devices | experts if d != HOST)
    backend = "cpu"
    if gpus:
        gpu = gpu_of(inventory, gpus[0])
        backend = gpu.backend.value if gpu is not None else "cpu"
    offloaded = bool(gpus) and HOST in (devices | experts)
    regime = regime_of(backend, profile.is_moe, offloaded,
                       plan.speculative.mode != SpecMode.OFF)
    return regime + CORE_MEASURED if HOST in (devices | experts) and \
        inventory.host.core_prefill_gflops > 0 else regime


def _same_basis(a: str, b: str) -> bool:
    """Whether two regimes' host parts were priced alike (measured cores or constants)."""
    return a.endswith(CORE_MEASURED) == b.endswith(CORE_MEASURED)


def model_key(profile: ModelProfile) -> str:
    """How runs of the same model are recognised: its name and file size."""
    return f"{profile.name}:{profile.file_bytes}"


def _log_median(ratios: Sequence[float]) -> float | None:
    logs = [math.log(r) for r in ratios if r > 0 and math.isfinite(r)]
    return statistics.median(logs) if logs else None


def _factor(samples: Sequence[RunSample], figure: str, per_model: bool) -> float:
    """The bounded median of ``figure`` over ``samples``; ``per_model``: the median of each
    model's median (every model counts once, however often it ran: what the regime's
    models share is this machine, what one model adds is its own)."""
    if per_model:
        models: dict[str, list[float]] = {}
        for s in samples:
            value = getattr(s, figure)
            if value:
                models.setdefault(s.model, []).append(value)
        medians = [m for m in (_log_median(v) for v in models.values()) if m is not None]
        center = statistics.median(medians) if medians else None
    else:
        center = _log_median([v for v in (getattr(s, figure) for s in samples) if v])
    if center is None:
        return 1.0
    return min(HIGH, max(LOW, math.exp(center)))


def fit_correction(samples: Sequence[RunSample], regime: str, model: str = ""
                   ) -> MachineCorrection:
    """The correction for a plan in ``regime`` (of ``model``) from this machine's runs.

    Runs of the same model in the regime are used when there are at least
    :data:`SAME_MODEL_MIN` (the model's own residual); else the regime's runs, each model
    counted once (the median of the models' medians: what carries to another model is
    the machine's part); else the runs on the same backend, likewise, at half strength
    (geometric halfway to no correction). The latest :data:`RECENT` runs count; samples
    are in the order they were recorded.
    """
    in_regime = [s for s in samples if s.regime == regime][-RECENT:]
    same = [s for s in in_regime if model and s.model == model]
    pool, scope, strength = in_regime, "regime", 1.0
    if len(same) >= SAME_MODEL_MIN:
        pool, scope = same, "model"
    elif not in_regime:
        backend = regime.split("/", 1)[0]
        pool = [s for s in samples if s.regime.split("/", 1)[0] == backend
                and _same_basis(s.regime, regime)][-RECENT:]
        scope, strength = "backend", 0.5
    if not pool:
        return replace(NO_CORRECTION, regime=regime)
    per_model = scope != "model"
    return MachineCorrection(
        decode_factor=_factor(pool, "decode_ratio", per_model) ** strength,
        prefill_factor=_factor(pool, "prefill_ratio", per_model) ** strength,
        runs=len(pool), regime=regime, scope=scope)


def corrected(speed: Speed, c: MachineCorrection) -> Speed:
    """``speed`` with the correction applied (TTFT from the corrected prefill)."""
    if c.runs == 0:
        return speed
    decode = speed.decode_tps * c.decode_factor
    prefill = speed.prefill_tps * c.prefill_factor
    prompt_s = speed.prompt_tokens / prefill if prefill > 0 else 0.0
    first_s = 1.0 / decode if decode > 0 else 0.0
    return replace(speed, decode_tps=decode, prefill_tps=prefill, ttft_s=prompt_s + first_s,
                   token_s=speed.token_s / c.decode_factor)


def calibrate(inventory: Inventory, profile: ModelProfile, plan: Plan,
              samples: Sequence[RunSample]) -> Plan:
    """``plan`` with its prediction corrected by this machine's runs (raw kept)."""
    regime = plan_regime(inventory, profile, plan)
    c = fit_correction(samples, regime, model_key(profile))
    if c.runs == 0:
        return replace(plan, calibration=c)
    return replace(plan, predicted=corrected(plan.predicted, c), raw_predicted=plan.predicted,
                   calibration=c)


def run_features(inventory: Inventory, profile: ModelProfile, plan: Plan) -> dict[str, Any]:
    """What a run made with ``plan`` is recorded with: the regime, the model's identity,
    the raw prediction and how decode slows with depth (to predict at the run's depth)."""
    raw = plan.raw_predicted or plan.predicted
    kv_s = sum(d.kv_s for d in raw.devices)
    slope = kv_s / raw.depth if raw.depth > 0 else 0.0
    return {"regime": plan_regime(inventory, profile, plan), "model": model_key(profile),
            "architecture": profile.architecture, "spec": plan.speculative.mode.value,
            "decode_tps": raw.decode_tps, "prefill_tps": raw.prefill_tps,
            "token_s": raw.token_s, "depth": raw.depth, "kv_s_per_cell": slope}


def predicted_decode_at(features: dict[str, Any], depth: int) -> float:
    """The raw predicted decode t/s of ``features`` at another cache depth."""
    tps = float(features.get("decode_tps") or 0.0)
    token_s = float(features.get("token_s") or 0.0)
    if tps <= 0 or token_s <= 0:
        return tps
    shifted = token_s + float(features.get("kv_s_per_cell") or 0.0) * (
        depth - int(features.get("depth") or 0))
    return tps * token_s / max(shifted, token_s * 0.05)


def sample_of(features: dict[str, Any], measured: dict[str, Any]) -> RunSample | None:
    """The sample of one finished run (``measured``: the engine's metrics), or None when
    it measured nothing usable (too short, or a prediction missing)."""
    regime, model = features.get("regime"), features.get("model")
    if not isinstance(regime, str) or not isinstance(model, str):
        return None
    prompt = int(measured.get("prompt_tokens") or 0) - int(measured.get("cached_tokens") or 0)
    generated = int(measured.get("generated_tokens") or 0)
    if generated < MIN_DECODE_TOKENS:  # a warm-up or a one-word answer: not a run
        return None
    decode = measured.get("decode_tps")
    prefill = measured.get("prefill_tps")
    d_ratio = p_ratio = None
    if isinstance(decode, (int, float)) and decode > 0 and generated >= MIN_DECODE_TOKENS:
        depth = int(measured.get("prompt_tokens") or 0) + generated // 2
        pred = predicted_decode_at(features, depth)
        d_ratio = decode / pred if pred > 0 else None
    pred_p = float(features.get("prefill_tps") or 0.0)
    if isinstance(prefill, (int, float)) and prefill > 0 and prompt >= MIN_PROMPT_TOKENS \
            and pred_p > 0:
        p_ratio = prefill / pred_p
    if d_ratio is None and p_ratio is None:
        return None
    return RunSample(regime, model, d_ratio, p_ratio)
