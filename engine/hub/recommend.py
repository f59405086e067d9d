"""The recommender: catalog x inventory x task -> ranked (model, quantization) choices.

Every choice is planned with :func:`planner.plan.plan` on the given inventory, so its fit
badge, predicted decode speed and TTFT are the planner's. One header is read per model
(ranged reads, cached); the other quantizations of that model are the same tensors
resized to the file sizes the hub lists (``exact_profile`` False), which moves the
memory and speed figures by well under a percent of the weights.

Ranking: first the tier (usable here / fits but slow / streams from disk / does not fit),
then a score that adds the model's rated strength for the task, its size (log2 of
effective parameters: MoE counted as sqrt(total x active)), a penalty below ~4.5 bits
(steep at <= 3 bits, steeper for agent and code work) and a bounded speed term.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from typing import Any

from engine.hub.catalog import Catalog, CatalogModel, QuantOption, load_catalog
from engine.hub.errors import HubError
from planner.errors import PlannerError
from planner.inventory import Inventory
from planner.plan import Plan, plan
from planner.profile import ModelProfile, TensorKind
from planner.quant import bits_of, choose
from planner.request import Request, TaskKind

log = logging.getLogger(__name__)

PARALLEL_HEADERS = 6        # hub headers read at once on a first run
USABLE_TPS: dict[str, float] = {"chat": 10.0, "code": 15.0, "agent": 15.0, "math": 10.0,
                                "creative": 8.0}


class Fit(StrEnum):
    """Where a choice's weights live, best first."""

    ALL_ON_GPU = "all_on_gpu"
    EXPERTS_IN_RAM = "experts_in_ram"
    PARTLY_IN_RAM = "partly_in_ram"
    IN_RAM = "in_ram"                    # no GPU: the CPU reads everything from RAM
    STREAMS_FROM_DISK = "streams_from_disk"
    DOES_NOT_FIT = "does_not_fit"


def fit_badge(p: Plan) -> Fit:
    """The fit badge of a plan."""
    from planner.codes import Code

    kinds = {s.kind for s in p.spills}
    if not p.fits:
        return Fit.DOES_NOT_FIT
    if p.streams_from_disk:
        return Fit.STREAMS_FROM_DISK
    if not any(r.role.value != "off" for r in p.roles):
        return Fit.IN_RAM
    if Code.LAYERS_TO_RAM in kinds:
        return Fit.PARTLY_IN_RAM
    if Code.EXPERTS_TO_RAM in kinds:
        return Fit.EXPERTS_IN_RAM
    return Fit.ALL_ON_GPU


def badge_for(profile: ModelProfile, inventory: Inventory, task: str = "chat") -> Fit:
    """The fit badge of one model (e.g. a library entry) on ``inventory``."""
    return fit_badge(_plan(inventory, profile, TaskKind(task)))


def quality_tier(bits: float) -> str:
    """near_lossless / high / good / fair / low (<= ~3 bits: the quality cliff)."""
    if bits >= 7.5:
        return "near_lossless"
    if bits >= 5.5:
        return "high"
    if bits >= 4.2:
        return "good"
    if bits > 3.1:
        return "fair"
    return "low"


@dataclass(frozen=True)
class Recommendation:
    """One (model, quantization) planned on the inventory."""

    model_id: str
    name: str
    repo: str
    quant: str
    spec: str
    fit: Fit
    decode_tps: float
    prefill_tps: float
    ttft_s: float
    context: int
    quality_tier: str
    bits: float
    warnings: tuple[str, ...]
    speculative: str           # off / ngram / draft / mtp, as the plan chose for the task
    download_bytes: int
    score: float
    tier: int                  # 0 usable, 1 slow, 2 streams from disk, 3 does not fit
    kind: str
    licence: str
    exact_profile: bool
    plan: Plan | None = field(default=None, repr=False, compare=False)
    estimated: bool = False    # sized and planned from the catalog's shape (offline)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of one choice (``loadout recommend --json``)."""
        return {"model": self.model_id, "name": self.name, "repo": self.repo,
                "quant": self.quant, "spec": self.spec, "fit": self.fit.value,
                "predicted": {"decode_tps": round(self.decode_tps, 2),
                              "prefill_tps": round(self.prefill_tps, 1),
                              "ttft_s": round(self.ttft_s, 3)},
                "context": self.context, "quality_tier": self.quality_tier,
                "bits_per_weight": round(self.bits, 2), "warnings": list(self.warnings),
                "speculative": self.speculative,
                "download_bytes": self.download_bytes, "score": round(self.score, 3),
                "kind": self.kind, "licence": self.licence,
                "exact_profile": self.exact_profile, "estimated": self.estimated}


@dataclass(frozen=True)
class Recommendations:
    """The ranked choices, what could not be judged, and where the catalog came from."""

    task: str
    items: tuple[Recommendation, ...]
    skipped: tuple[tuple[str, str], ...]      # (model id, why)
    catalog_status: str

    def to_json(self) -> dict[str, Any]:
        return {"schema": "loadout.recommend/1", "task": self.task,
                "catalog": self.catalog_status,
                "recommendations": [r.to_json() for r in self.items],
                "skipped": [{"model": m, "reason": r} for m, r in self.skipped]}


ProfileSource = Callable[[CatalogModel], ModelProfile]


def hub_profiles(timeout: float = 10.0) -> ProfileSource:
    """The profile of one file per model (Q4_K_M when listed), from its header on the hub.

    Headers are cached (:mod:`engine.hub.remote`), so a second run reads nothing.
    """
    from engine.hub.remote import load_remote_profile

    def get(model: CatalogModel) -> ModelProfile:
        options = model.available
        ref = next((o for o in options if o.quant == "Q4_K_M"), options[0])
        assert ref.spec is not None
        return load_remote_profile(ref.spec, timeout)

    return get


def resized(profile: ModelProfile, file_type: str, file_bytes: int) -> ModelProfile:
    """The same model as another quantization whose files total ``file_bytes``.

    Every non-F32 tensor scales by one ratio so that the weights add up to the new size;
    F32 tensors (norms) and the header stay as they are.
    """
    if file_bytes == profile.file_bytes:
        return replace(profile, file_type=file_type.removeprefix("UD-"))
    weights = profile.weights_bytes
    fixed = sum(t.nbytes for t in profile.tensors if t.ggml_type == "F32")
    overhead = max(0, profile.file_bytes - weights)
    ratio = max(0.01, (file_bytes - overhead - fixed) / max(1, weights - fixed))
    tensors = tuple(t if t.ggml_type == "F32" else replace(t, nbytes=int(t.nbytes * ratio))
                    for t in profile.tensors)
    layers = tuple(replace(layer, bytes_by_kind=tuple(
        (k, b if k is TensorKind.NORM else int(b * ratio)) for k, b in layer.bytes_by_kind))
        for layer in profile.layers)
    return replace(profile, file_type=file_type.removeprefix("UD-"), file_bytes=file_bytes,
                   tensors=tensors,
                   layers=layers, token_embd_bytes=int(profile.token_embd_bytes * ratio),
                   output_bytes=int(profile.output_bytes * ratio),
                   other_bytes=int(profile.other_bytes * ratio),
                   quant_bytes=((file_type, sum(t.nbytes for t in tensors)),))


def effective_params(profile: ModelProfile) -> float:
    """Parameters that decide quality: all of a dense model; sqrt(total x active) for MoE."""
    total = float(profile.n_params)
    if not profile.is_moe or not profile.weights_bytes:
        return total
    experts = sum(layer.bytes_of(TensorKind.EXPERTS) for layer in profile.layers)
    share = experts / profile.weights_bytes
    active = total * (1 - share + share * profile.expert_used_count / profile.expert_count)
    return math.sqrt(total * active)


def _score(model: CatalogModel, profile: ModelProfile, task: str, decode_tps: float,
           fit: Fit) -> tuple[int, float]:
    usable = USABLE_TPS.get(task, 10.0)
    bits = bits_of(profile)
    if fit is Fit.DOES_NOT_FIT:
        tier = 3
    elif fit is Fit.STREAMS_FROM_DISK:
        tier = 2
    else:
        tier = 0 if decode_tps >= usable else 1
    score = math.log2(max(effective_params(profile) / 1e9, 0.05)) + 0.8 * model.strength(task)
    if bits < 4.5:
        score -= 0.6 * (4.5 - bits)
    if bits <= 3.1:
        score -= 2.0 if task in ("agent", "code") else 1.0
    ratio = max(decode_tps, 1e-3) / usable
    score += 0.5 * min(2.0, math.log2(ratio)) if ratio >= 1 else 2.0 * math.log2(ratio)
    return tier, score


@lru_cache(maxsize=256)
def _plan(inventory: Inventory, profile: ModelProfile, task: TaskKind) -> Plan:
    # the planner is pure, so a plan can be reused (the GUI re-ranks when the task changes)
    return plan(inventory, profile, Request(task=task, advise=False))


def _evaluate(model: CatalogModel, option: QuantOption, reference: ModelProfile,
              inventory: Inventory, task: str) -> tuple[Recommendation, ModelProfile]:
    assert option.group is not None and option.spec is not None
    size = option.group.size
    exact = reference.file_bytes == size
    profile = _sized(reference, option)
    p = _plan(inventory, profile, TaskKind(task))
    fit = fit_badge(p)
    tier, score = _score(model, profile, task, p.predicted.decode_tps, fit)
    bits = bits_of(profile)
    warnings = tuple(w.code.value for w in p.warnings)
    if bits <= 3.1 and "low_bits_for_task" not in warnings:
        warnings += ("low_bits",)  # below the quality cliff whatever the task
    return Recommendation(
        model_id=model.id, name=model.name, repo=model.repo, quant=option.quant,
        spec=option.spec, fit=fit, decode_tps=p.predicted.decode_tps,
        prefill_tps=p.predicted.prefill_tps, ttft_s=p.predicted.ttft_s, context=p.context,
        quality_tier=quality_tier(bits), bits=bits,
        warnings=warnings, speculative=p.speculative.mode.value, download_bytes=size,
        score=score,
        tier=tier, kind=model.kind, licence=model.licence, exact_profile=exact, plan=p), profile


def recommend(inventory: Inventory, task: str = "chat", catalog: Catalog | None = None,
              profiles: ProfileSource | None = None, all_quants: bool = False,
              limit: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> Recommendations:
    """Rank the catalog's (model, quantization) choices for ``inventory`` and ``task``.

    Args:
        inventory: this machine (``engine.hardware.detect()``) or a rig file's.
        task: chat / code / agent / math / creative.
        catalog: the catalog (default: :func:`load_catalog`, refreshed when online).
        profiles: where model profiles come from (default: hub headers, cached; several
            are read at once).
        all_quants: list every quantization, not only the best one per model.
        limit: at most this many choices.
        progress: called with (models judged, models in the catalog).

    Returns:
        Ranked choices; models that could not be judged (no listing, unreadable header,
        offline without cache) are in ``skipped`` with the reason.
    """
    task = TaskKind(task).value
    catalog = catalog or load_catalog()
    source = profiles or hub_profiles()
    ranked: list[Recommendation] = []
    skipped: list[tuple[str, str]] = []
    with ThreadPoolExecutor(max_workers=PARALLEL_HEADERS) as pool:
        pending = {m.id: pool.submit(source, m) for m in catalog.models if m.available}
        for done, model in enumerate(catalog.models, 1):
            if progress is not None:
                progress(done - 1, len(catalog.models))
            if model.id not in pending:
                skipped.append((model.id, "not listed" if model.listed_at is None
                                else "none of its quantizations is on the hub"))
                continue
            try:
                reference = pending[model.id].result()
            except (HubError, PlannerError) as exc:
                skipped.append((model.id, str(exc)))
                continue
            ranked += _choices(model, reference, inventory, task, all_quants)
    if progress is not None:
        progress(len(catalog.models), len(catalog.models))
    ranked.sort(key=lambda r: (r.tier, -r.score))
    return Recommendations(task=task, items=tuple(ranked[:limit] if limit else ranked),
                           skipped=tuple(skipped), catalog_status=catalog.status)


def _choices(model: CatalogModel, reference: ModelProfile, inventory: Inventory, task: str,
             all_quants: bool) -> list[Recommendation]:
    """Every quantization of ``model`` (all_quants), else the one the planner would pick.

    The pick follows :func:`planner.quant.choose` (the best quality that fits without disk
    streaming at a usable speed, else the fastest that fits); files are planned from the
    best quality down, so planning stops at the first that qualifies.
    """
    if all_quants:
        return [_evaluate(model, o, reference, inventory, task)[0] for o in model.available]
    usable = USABLE_TPS[task]
    options = sorted(model.available, key=lambda o: -bits_of(_sized(reference, o)))
    evaluated = []
    for option in options:
        choice, profile = _evaluate(model, option, reference, inventory, task)
        if choice.fit not in (Fit.DOES_NOT_FIT, Fit.STREAMS_FROM_DISK) \
                and choice.decode_tps >= usable:
            return [choice]
        evaluated.append((choice, profile))
    pick = choose([(prof, c.fit is not Fit.DOES_NOT_FIT, c.fit is Fit.STREAMS_FROM_DISK,
                    c.decode_tps) for c, prof in evaluated], usable)
    return [evaluated[pick.index][0]]


def _sized(reference: ModelProfile, option: QuantOption) -> ModelProfile:
    assert option.group is not None
    return resized(reference, option.quant, option.group.size)
