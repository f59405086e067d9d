"""The Plan and its parts: frozen values, no planning.

:func:`planner.plan.plan` builds a :class:`Plan`; the planning modules (advice,
attention, speculation, the report) and everything downstream (the engine, the app)
import these types from here, so no planning module needs to import the planner back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from planner.codes import Code
from planner.ggml_types import KvType
from planner.placement import Layout
from planner.projector import ProjectorUse, image_ttft_s
from planner.request import SpecMode
from planner.roles import GpuRole
from planner.speed import SpecOutcome, Speed

SCHEMA = "loadout.plan/1"


class SplitMode(StrEnum):
    """How llama.cpp splits a model over GPUs (``llama_split_mode``, by name)."""

    NONE = "none"
    LAYER = "layer"
    ROW = "row"

    @property
    def id(self) -> int:
        """The ``LLAMA_SPLIT_MODE_*`` value."""
        return list(SplitMode).index(self)

    @classmethod
    def of(cls, value: str | int) -> SplitMode:
        """The mode named ``value`` or with ``LLAMA_SPLIT_MODE_*`` value ``value``.

        Raises:
            ValueError: no such mode.
        """
        if isinstance(value, int) and not isinstance(value, bool):
            modes = list(cls)
            if not 0 <= value < len(modes):
                raise ValueError(f"split_mode {value} is not a llama.cpp split mode")
            return modes[value]
        return cls(str(value).lower())


@dataclass(frozen=True)
class EngineParams:
    """The llama.cpp parameters that carry a plan out (``Plan.engine``).

    Field names are :class:`engine.launch.LaunchSpec`'s (and llama-cpp-python's).
    ``tensor_overrides`` pairs a tensor-name regex with a llama.cpp device name (``CPU``,
    ``CUDA0``, ``RPC1`` ...); ``devices`` and ``rpc_workers`` are set only when a worker's
    device is used, the speculation fields only when the plan speculates, ``run_features``
    by :func:`planner.plan.plan` and ``mmproj_offload`` by a plan with a vision projector.
    :meth:`to_json` writes the ``engine`` object of the ``loadout.plan/1`` document
    (KV types as ggml ids, the split mode as ``LLAMA_SPLIT_MODE_*``).
    """

    n_ctx: int
    n_seq_max: int
    n_batch: int
    n_ubatch: int
    n_threads: int
    n_threads_batch: int
    flash_attn: bool
    type_k: KvType
    type_v: KvType
    n_gpu_layers: int
    tensor_split: tuple[float, ...] | None
    main_gpu: int
    split_mode: SplitMode
    use_mmap: bool = True
    use_mlock: bool = False
    offload_kqv: bool = True
    swa_full: bool = False
    kv_unified: bool = False
    tensor_overrides: tuple[tuple[str, str], ...] = ()
    devices: tuple[str, ...] = ()
    rpc_workers: tuple[str, ...] = ()
    spec_mode: SpecMode = SpecMode.OFF
    draft_tokens: int = 0
    draft_model_path: str | None = None
    draft_n_gpu_layers: int | None = None
    run_features: str = ""
    mmproj_offload: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The plan document's ``engine`` object."""
        out: dict[str, Any] = {
            "n_ctx": self.n_ctx, "n_seq_max": self.n_seq_max, "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch, "n_threads": self.n_threads,
            "n_threads_batch": self.n_threads_batch, "flash_attn": self.flash_attn,
            "type_k": self.type_k.id, "type_v": self.type_v.id,
            "n_gpu_layers": self.n_gpu_layers,
            "tensor_split": None if self.tensor_split is None else list(self.tensor_split),
            "main_gpu": self.main_gpu, "split_mode": self.split_mode.id,
            "use_mmap": self.use_mmap, "use_mlock": self.use_mlock,
            "offload_kqv": self.offload_kqv, "swa_full": self.swa_full,
            "kv_unified": self.kv_unified,
            "tensor_overrides": [list(pair) for pair in self.tensor_overrides],
        }
        if self.devices or self.rpc_workers:
            out["devices"] = list(self.devices)
            out["rpc_workers"] = list(self.rpc_workers)
        if self.spec_mode != SpecMode.OFF:
            out["spec_mode"] = self.spec_mode.value
            out["draft_tokens"] = self.draft_tokens
            if self.draft_model_path is not None:
                out["draft_model_path"] = self.draft_model_path
                out["draft_n_gpu_layers"] = self.draft_n_gpu_layers
        if self.run_features:
            out["run_features"] = self.run_features
        if self.mmproj_offload is not None:
            out["mmproj_offload"] = self.mmproj_offload
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> EngineParams:
        """The inverse of :meth:`to_json` (a plan document's ``engine`` object).

        Raises:
            KeyError: a field without a default is missing.
            ValueError: a KV type or split mode llama.cpp does not have.
        """
        split = doc.get("tensor_split")
        return cls(
            n_ctx=int(doc["n_ctx"]), n_seq_max=int(doc["n_seq_max"]),
            n_batch=int(doc["n_batch"]), n_ubatch=int(doc["n_ubatch"]),
            n_threads=int(doc["n_threads"]), n_threads_batch=int(doc["n_threads_batch"]),
            flash_attn=bool(doc["flash_attn"]), type_k=KvType.of(doc["type_k"]),
            type_v=KvType.of(doc["type_v"]), n_gpu_layers=int(doc["n_gpu_layers"]),
            tensor_split=None if split is None else tuple(float(x) for x in split),
            main_gpu=int(doc["main_gpu"]), split_mode=SplitMode.of(doc["split_mode"]),
            use_mmap=bool(doc.get("use_mmap", True)), use_mlock=bool(doc.get("use_mlock")),
            offload_kqv=bool(doc.get("offload_kqv", True)), swa_full=bool(doc.get("swa_full")),
            kv_unified=bool(doc.get("kv_unified")),
            tensor_overrides=tuple((str(p), str(d)) for p, d in doc.get("tensor_overrides")
                                   or ()),
            devices=tuple(str(d) for d in doc.get("devices") or ()),
            rpc_workers=tuple(str(w) for w in doc.get("rpc_workers") or ()),
            spec_mode=SpecMode(doc.get("spec_mode", SpecMode.OFF.value)),
            draft_tokens=int(doc.get("draft_tokens", 0)),
            draft_model_path=_str_or_none(doc.get("draft_model_path")),
            draft_n_gpu_layers=_int_or_none(doc.get("draft_n_gpu_layers")),
            run_features=str(doc.get("run_features") or ""),
            mmproj_offload=None if doc.get("mmproj_offload") is None
            else bool(doc["mmproj_offload"]))


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)



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
    engine: EngineParams
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
            "engine": self.engine.to_json(),
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


__all__ = ["SCHEMA", "Advice", "Bottleneck", "DeviceUse", "EngineParams", "MachineCorrection",
           "Note", "Plan", "Spill", "SplitMode"]
