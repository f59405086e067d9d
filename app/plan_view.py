"""What the Plan page draws, computed from a Plan: bars, segments, speeds, messages.

Everything here reads the Plan's ``loadout.plan/1`` document (the stable contract the CLI
prints), so the picture and ``loadout plan --json`` can never disagree. Pure functions,
no widgets: the memory map only paints what :func:`memory_bars` returns.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.profile import ModelProfile, TensorKind

log = logging.getLogger(__name__)

# Stacking order inside a bar: what is read most per byte first.
SEGMENT_ORDER: tuple[str, ...] = ("weights", "experts", "kv", "compute", "reserve", "free")


LayerRanges = tuple[tuple[int, int], ...]  # half-open block ranges [first, last)


@dataclass(frozen=True)
class MapSegment:
    """One coloured stretch of a device bar.

    ``layers`` are the block ranges ``[first, last)`` whose tensors of this kind live here.
    """

    kind: str          # weights / experts / kv / compute / reserve / free / over
    nbytes: int
    layers: LayerRanges = ()


@dataclass(frozen=True)
class MapBar:
    """One device of the memory map: a GPU, the host's RAM, or the disk."""

    device_id: str     # "gpu0", "host", "disk"
    kind: str          # gpu / host / disk
    name: str
    capacity_bytes: int
    segments: tuple[MapSegment, ...]
    role: str = ""     # main / helper / off for GPUs

    @property
    def used_bytes(self) -> int:
        """Bytes placed on the device (every segment except reserve and free space)."""
        return sum(s.nbytes for s in self.segments if s.kind not in ("free", "over", "reserve"))

    def bytes_of(self, kind: str) -> int:
        """Bytes of one segment kind."""
        return sum(s.nbytes for s in self.segments if s.kind == kind)


def plan_document(plan: Any) -> dict[str, Any]:
    """The ``loadout.plan/1`` document of a Plan (or the document itself)."""
    if isinstance(plan, Mapping):
        return dict(plan)
    to_json = getattr(plan, "to_json", None)
    if callable(to_json):
        doc = to_json()
        return dict(doc) if isinstance(doc, Mapping) else {}
    if dataclasses.is_dataclass(plan) and not isinstance(plan, type):
        return dataclasses.asdict(plan)
    return {}


def _ranges(value: Any) -> LayerRanges:
    out = []
    for item in value or ():
        if isinstance(item, list | tuple) and len(item) == 2:
            first, last = int(item[0]), int(item[1])
            if last > first:
                out.append((first, last))
    return tuple(out)


def expert_bytes(profile: ModelProfile | None, ranges: LayerRanges) -> int:
    """Bytes of the routed experts of the blocks in ``ranges`` (0 without a profile)."""
    if profile is None or not ranges:
        return 0
    total = 0
    for layer in profile.layers:
        if any(first <= layer.index < last for first, last in ranges):
            total += layer.bytes_of(TensorKind.EXPERTS)
    return total


def _bar(device: Mapping[str, Any], names: Mapping[str, str], roles: Mapping[str, str],
         profile: ModelProfile | None) -> MapBar:
    dev_id = str(device.get("id", "?"))
    weights = int(device.get("weights_bytes", 0)) + int(device.get("other_bytes", 0))
    expert_ranges = _ranges(device.get("expert_layers"))
    # weights_bytes counts every weight placed here; routed experts are drawn apart.
    experts = min(weights, expert_bytes(profile, expert_ranges))
    layers = _ranges(device.get("layers"))
    segments = [
        MapSegment("weights", weights - experts, layers),
        MapSegment("experts", experts, expert_ranges),
        MapSegment("kv", int(device.get("kv_bytes", 0)), layers),
        MapSegment("compute", int(device.get("compute_bytes", 0))),
        MapSegment("projector", int(device.get("projector_bytes", 0))),
        MapSegment("reserve", int(device.get("reserve_bytes", 0))),
    ]
    capacity = int(device.get("capacity_bytes", 0))
    total = sum(s.nbytes for s in segments)
    segments = [s for s in segments if s.nbytes > 0]
    if total <= capacity:
        segments.append(MapSegment("free", capacity - total))
    else:
        segments.append(MapSegment("over", total - capacity))
    return MapBar(device_id=dev_id, kind=str(device.get("kind", "gpu")),
                  name=names.get(dev_id, str(device.get("name", dev_id))),
                  capacity_bytes=capacity, segments=tuple(segments),
                  role=roles.get(dev_id, ""))


def memory_bars(plan: Any, gpu_names: Mapping[int, str] | None = None,
                profile: ModelProfile | None = None) -> tuple[MapBar, ...]:
    """One bar per device of ``plan``, in the plan's order (GPUs, host, disk).

    Args:
        plan: a Plan or its JSON document.
        gpu_names: GPU index -> display name (from the inventory planned for).
        profile: the model planned, to tell routed experts from other weights.
    """
    doc = plan_document(plan)
    names = {f"gpu{i}": n for i, n in (gpu_names or {}).items()}
    roles = {f"gpu{int(r.get('gpu', 0))}": str(r.get("role", "")) for r in doc.get("roles", [])}
    return tuple(_bar(d, names, roles, profile) for d in doc.get("devices", []))


@dataclass(frozen=True)
class Prediction:
    """The three predicted speeds of a plan, by their names."""

    decode_tps: float
    prefill_tps: float
    ttft_s: float
    prompt_tokens: int
    nominal: bool = False       # a software device holds layers: not this machine's speeds


def prediction(plan: Any) -> Prediction:
    """The predicted decode / prefill / TTFT of ``plan``."""
    p = plan_document(plan).get("predicted", {}) or {}
    return Prediction(decode_tps=float(p.get("decode_tps", 0.0)),
                      prefill_tps=float(p.get("prefill_tps", 0.0)),
                      ttft_s=float(p.get("ttft_s", 0.0)),
                      prompt_tokens=int(p.get("prompt_tokens", 0)),
                      nominal=bool(p.get("nominal", False)))


@dataclass(frozen=True)
class Message:
    """A reason or warning code with its fields, ready to become a sentence."""

    code: str
    fields: tuple[tuple[str, Any], ...] = ()
    warning: bool = False


def _code_entry(entry: Any, warning: bool) -> Message:
    if isinstance(entry, Mapping):
        fields = tuple((str(k), v) for k, v in entry.items() if k != "code")
        return Message(str(entry.get("code", "")), fields, warning)
    return Message(str(entry), (), warning)


def messages(plan: Any) -> tuple[Message, ...]:
    """Warnings first, then reasons and decisions, as codes with fields (each code once)."""
    doc = plan_document(plan)
    warnings = [_code_entry(w, True) for w in doc.get("warnings", [])]
    reasons = [_code_entry(r, False) for r in doc.get("reasons", [])]
    decisions = [_code_entry(r, False) for r in doc.get("decisions", [])]
    seen: set[str] = set()
    out = []
    for message in warnings + reasons + decisions:  # each code once; a warning wins
        if message.code not in seen:
            seen.add(message.code)
            out.append(message)
    return tuple(out)


@dataclass(frozen=True)
class AdviceItem:
    """One "what would make this faster" entry, with the decode speed it would give."""

    code: str
    decode_tps: float | None
    fields: tuple[tuple[str, Any], ...] = ()


def advice(plan: Any) -> tuple[str | None, tuple[AdviceItem, ...]]:
    """The plan's bottleneck code and its advice list."""
    doc = plan_document(plan)
    bottleneck = doc.get("bottleneck")
    if isinstance(bottleneck, Mapping):
        bottleneck = bottleneck.get("code") or bottleneck.get("kind")
    items = []
    for entry in doc.get("advice", []) or []:
        if isinstance(entry, Mapping) and entry.get("helps") is False \
                and entry.get("code") != "advice_no_change_needed":
            continue  # priced, and it would not make this faster
        if isinstance(entry, Mapping):
            tps = entry.get("decode_tps")
            if tps is None and isinstance(entry.get("predicted"), Mapping):
                tps = entry["predicted"].get("decode_tps")
            fields = tuple((str(k), v) for k, v in entry.items()
                           if k not in ("code", "predicted", "helps", "fits"))
            items.append(AdviceItem(str(entry.get("code", "")),
                                    float(tps) if tps is not None else None, fields))
        else:
            items.append(AdviceItem(str(entry), None))
    return (str(bottleneck) if bottleneck else None, tuple(items))
