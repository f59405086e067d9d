"""What the Plan page draws, computed from a Plan: bars, segments, messages, advice.

Everything here reads the :class:`~planner.plan_types.Plan` itself, the value that
``loadout plan --json`` serialises, so the picture and the document can never disagree.
The speeds are the Plan's own (``plan.predicted``, ``plan.speed_nominal``): nothing here
computes a figure again. Pure functions, no widgets: the memory map only paints what
:func:`memory_bars` returns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.codes import Code
from planner.profile import ModelProfile, TensorKind

if TYPE_CHECKING:
    from planner.plan_types import DeviceUse, Note, Plan

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


def expert_bytes(profile: ModelProfile | None, ranges: LayerRanges) -> int:
    """Bytes of the routed experts of the blocks in ``ranges`` (0 without a profile)."""
    if profile is None or not ranges:
        return 0
    total = 0
    for layer in profile.layers:
        if any(first <= layer.index < last for first, last in ranges):
            total += layer.bytes_of(TensorKind.EXPERTS)
    return total


def _bar(device: DeviceUse, names: Mapping[str, str], roles: Mapping[str, str],
         profile: ModelProfile | None) -> MapBar:
    weights = device.weights_bytes + device.other_bytes
    # weights_bytes counts every weight placed here; routed experts are drawn apart.
    experts = min(weights, expert_bytes(profile, device.expert_layers))
    segments = [
        MapSegment("weights", weights - experts, device.layers),
        MapSegment("experts", experts, device.expert_layers),
        MapSegment("kv", device.kv_bytes, device.layers),
        MapSegment("compute", device.compute_bytes),
        MapSegment("projector", device.projector_bytes),
        MapSegment("reserve", device.reserve_bytes),
    ]
    capacity = device.capacity_bytes
    total = sum(s.nbytes for s in segments)
    segments = [s for s in segments if s.nbytes > 0]
    if total <= capacity:
        segments.append(MapSegment("free", capacity - total))
    else:
        segments.append(MapSegment("over", total - capacity))
    return MapBar(device_id=device.id, kind=device.kind,
                  name=names.get(device.id, device.name),
                  capacity_bytes=capacity, segments=tuple(segments),
                  role=roles.get(device.id, ""))


def memory_bars(plan: Plan, gpu_names: Mapping[int, str] | None = None,
                profile: ModelProfile | None = None) -> tuple[MapBar, ...]:
    """One bar per device of ``plan``, in the plan's order (GPUs, host, disk).

    Args:
        plan: the Plan to draw.
        gpu_names: GPU index -> display name (from the inventory planned for).
        profile: the model planned, to tell routed experts from other weights.
    """
    names = {f"gpu{i}": n for i, n in (gpu_names or {}).items()}
    roles = {r.device: r.role.value for r in plan.roles}
    return tuple(_bar(d, names, roles, profile) for d in plan.devices)


def weights_on_gpu(plan: Plan) -> bool:
    """Whether a GPU of ``plan`` holds weights (else the model runs from RAM)."""
    return any(d.kind == "gpu" and d.weights_bytes > 0 for d in plan.devices)


def reads_from_disk(plan: Plan) -> bool:
    """Whether ``plan`` runs only by reading weights from disk as it goes."""
    return Code.FITS_WITH_DISK_STREAMING in plan.reasons


@dataclass(frozen=True)
class Message:
    """A reason or warning code with its fields, ready to become a sentence."""

    code: str
    fields: tuple[tuple[str, Any], ...] = ()
    warning: bool = False


def _note(note: Note, warning: bool) -> Message:
    return Message(note.code.value, note.numbers, warning)


def messages(plan: Plan) -> tuple[Message, ...]:
    """Warnings first, then reasons and decisions, as codes with fields (each code once)."""
    warnings = [_note(w, True) for w in plan.warnings]
    reasons = [Message(r.value) for r in plan.reasons]
    decisions = [_note(d, False) for d in plan.decisions]
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
    decode_tps: float
    fields: tuple[tuple[str, Any], ...] = ()


def advice(plan: Plan) -> tuple[str | None, tuple[AdviceItem, ...]]:
    """The plan's bottleneck code and its advice (what would not make it faster is left
    out, except "no change needed")."""
    bottleneck = plan.bottleneck.kind.value if plan.bottleneck is not None else None
    items = tuple(AdviceItem(a.code.value, a.decode_tps, a.numbers) for a in plan.advice
                  if a.helps or a.code == Code.ADVICE_NO_CHANGE_NEEDED)
    return bottleneck, items
