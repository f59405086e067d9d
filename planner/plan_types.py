"""The Plan and its parts: frozen values, no planning.

:func:`planner.plan.plan` builds a :class:`Plan`; the planning modules (advice,
attention, speculation, the report) and everything downstream (the engine, the app)
import these types from here, so no planning module needs to import the planner back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.codes import Code
from planner.placement import Layout
from planner.projector import ProjectorUse, image_ttft_s
from planner.roles import GpuRole
from planner.speed import SpecOutcome, Speed

SCHEMA = "loadout.plan/1"


@dataclass(frozen=True)
class Bottleneck:
    """Which device and which bytes dominate the time per token."""

    kind: Code          # CAPACITY_BOUND / BANDWIDTH_BOUND / COMPUTE_BOUND / ...
    device: str
    what: str           # weights | experts | kv | overhead | disk | transfer
    share: float        # of the time per plain token
    ms: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "device": self.device, "what": self.what,
                "share": round(self.share, 3), "ms_per_token": round(self.ms, 3)}


@dataclass(frozen=True)
class Advice:
    """One what-if: a change, its predicted decode speed, and whether it helps."""

    code: Code
    decode_tps: float
    fits: bool
    helps: bool
    numbers: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, "decode_tps": round(self.decode_tps, 2),
                "fits": self.fits, "helps": self.helps, **dict(self.numbers)}


@dataclass(frozen=True)
class MachineCorrection:
    """The factors applied to a plan's raw prediction, and what they rest on."""

    decode_factor: float = 1.0
    prefill_factor: float = 1.0
    runs: int = 0                 # runs the factors rest on (0: no correction)
    regime: str = ""
    scope: str = "none"           # "model", "regime", "backend" or "none"

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "scope": self.scope, "regime": self.regime,
                "decode_factor": round(self.decode_factor, 4),
                "prefill_factor": round(self.prefill_factor, 4)}


@dataclass(frozen=True)
class Note:
    """A reason, warning or decision: a code and the numbers behind it."""

    code: Code
    numbers: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code.value, **dict(self.numbers)}


@dataclass(frozen=True)
class DeviceUse:
    """One device's share of the plan: bytes by purpose, and the blocks it holds."""

    id: str
    kind: str                      # gpu | host | disk
    name: str
    weights_bytes: int
    kv_bytes: int
    compute_bytes: int
    other_bytes: int               # output layer, per-device overhead
    reserve_bytes: int
    capacity_bytes: int
    layers: tuple[tuple[int, int], ...] = ()        # block ranges [first, last)
    expert_layers: tuple[tuple[int, int], ...] = ()  # ranges whose routed experts live here
    projector_bytes: int = 0       # a vision projector's weights + compute buffer

    @property
    def used_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.compute_bytes + self.other_bytes \
            + self.projector_bytes

    @property
    def free_bytes(self) -> int:
        return self.capacity_bytes - self.reserve_bytes - self.used_bytes

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name,
                "weights_bytes": self.weights_bytes, "kv_bytes": self.kv_bytes,
                "compute_bytes": self.compute_bytes, "other_bytes": self.other_bytes,
                "reserve_bytes": self.reserve_bytes, "capacity_bytes": self.capacity_bytes,
                "free_bytes": self.free_bytes, "layers": [list(r) for r in self.layers],
                "expert_layers": [list(r) for r in self.expert_layers],
                "projector_bytes": self.projector_bytes}


@dataclass(frozen=True)
class Spill:
    """Bytes moved to a slower tier, with what they cost per token."""

    kind: Code                      # EXPERTS_TO_RAM / LAYERS_TO_RAM / WEIGHTS_ON_DISK
    layers: tuple[tuple[int, int], ...]
    bytes: int
    to: str
    cost_ms: float                  # time per token spent on them there (incl. hops)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "layers": [list(r) for r in self.layers],
                "bytes": self.bytes, "to": self.to, "cost_ms_per_token": round(self.cost_ms, 3)}


@dataclass(frozen=True)
class Plan:
    """The plan: roles, per-device memory, context, KV, speculation, speeds, advice."""

    fits: bool
    reasons: tuple[Code, ...]
    roles: tuple[GpuRole, ...]
    devices: tuple[DeviceUse, ...]
    context: int
    parallel: int
    kv_type: str
    flash_attn: bool
    quant: str
    speculative: SpecOutcome
    predicted: Speed
    warnings: tuple[Note, ...]
    engine: dict[str, Any]
    spills: tuple[Spill, ...] = ()
    decisions: tuple[Note, ...] = ()
    bottleneck: Bottleneck | None = None
    advice: tuple[Advice, ...] = ()
    model: str = ""
    draft_model: str | None = None
    layout: Layout | None = field(default=None, repr=False, compare=False)
    raw_predicted: Speed | None = None        # the model's own figures, when corrected
    calibration: MachineCorrection | None = None  # this machine's correction, if asked
    projector: ProjectorUse | None = None     # the vision projector (planner.vision_plan)

    @property
    def streams_from_disk(self) -> bool:
        return any(s.kind == Code.WEIGHTS_ON_DISK for s in self.spills)

    @property
    def speed_nominal(self) -> bool:
        """True when a software device holds weights: the speeds are not this machine's."""
        return any(w.code == Code.SOFTWARE_DEVICE_SPEED for w in self.warnings)

    def to_json(self) -> dict[str, Any]:
        """The ``loadout.plan/1`` JSON document."""
        return {
            "schema": SCHEMA, "model": self.model, "fits": self.fits,
            "reasons": [r.value for r in self.reasons],
            "roles": [r.to_json() for r in self.roles],
            "devices": [d.to_json() for d in self.devices],
            "context": self.context, "parallel": self.parallel, "kv_type": self.kv_type,
            "flash_attn": self.flash_attn, "quant": self.quant,
            "speculative": {"mode": self.speculative.mode.value,
                            "draft_tokens": self.speculative.draft_tokens,
                            "acceptance": round(self.speculative.acceptance, 3),
                            "tokens_per_step": round(self.speculative.tokens_per_step, 3),
                            "draft_model": self.draft_model},
            "predicted": self._predicted_json(),
            "spill": [s.to_json() for s in self.spills],
            "bottleneck": self.bottleneck.to_json() if self.bottleneck else None,
            "advice": [a.to_json() for a in self.advice],
            "decisions": [d.to_json() for d in self.decisions],
            "warnings": [w.to_json() for w in self.warnings],
            "engine": dict(self.engine),
            "projector": self._projector_json(),
        }

    def _projector_json(self) -> dict[str, Any] | None:
        if self.projector is None:
            return None
        doc = self.projector.to_json()
        doc["image_ttft_s"] = round(image_ttft_s(self.predicted.ttft_s,
                                                 self.predicted.prefill_tps, self.projector), 3)
        return doc


    def _predicted_json(self) -> dict[str, Any]:
        out = self.predicted.to_json()
        out["nominal"] = self.speed_nominal
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_json()
        if self.raw_predicted is not None:
            raw = self.raw_predicted
            out["raw"] = {"decode_tps": round(raw.decode_tps, 2),
                          "prefill_tps": round(raw.prefill_tps, 1),
                          "ttft_s": round(raw.ttft_s, 3)}
        return out


__all__ = ["SCHEMA", "Advice", "Bottleneck", "DeviceUse", "MachineCorrection", "Note", "Plan",
           "Spill"]
