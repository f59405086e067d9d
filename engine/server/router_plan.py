"""How the router plans a model beside the resident ones (the planner, not a dry run)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.launch import LaunchSpec, spec_of_plan
from planner.inventory import Inventory
from planner.plan import Plan, plan, plan_with_projector
from planner.profile import ModelProfile
from planner.request import KV_TYPES, Request
from planner.residency import Resident, inventory_left

log = logging.getLogger(__name__)

GIB = 1024**3
# a model file's and its projector's (size, mtime): either changed, a cached plan is stale
_Stamps = tuple[tuple[int, int] | None, tuple[int, int] | None]


def fits(p: Plan) -> bool:
    """A plan the router may load: it fits, and nothing is read from disk per token."""
    return p.fits and not p.streams_from_disk


def need_of(p: Plan) -> dict[str, int]:
    """The bytes ``p`` puts on each device; what it leaves on disk counts as RAM (the
    router never loads a plan that reads weights from disk per token)."""
    need: dict[str, int] = {}
    for d in p.devices:
        device = "host" if d.kind == "disk" else d.id
        if d.used_bytes > 0:
            need[device] = need.get(device, 0) + d.used_bytes
    return need


def budget_of(p: Plan) -> dict[str, int]:
    """Each device's usable bytes as ``p`` saw them (capacity less its reserve)."""
    return {d.id: d.capacity_bytes - d.reserve_bytes for d in p.devices if d.kind != "disk"}


def gib(n: int) -> str:
    """Bytes as GiB, or MiB below one GiB."""
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB else f"{n / 1024**2:.1f} MiB"


@dataclass
class RouterPlanner:
    """Plans every model of a router against one inventory (the machine's at start, or a
    rig file's), each into what the resident models leave.

    Attributes:
        inventory: the machine's devices and memory before anything was loaded.
        request: context, slots and reserves, the same for every model.
        n_threads: decode threads (None: the plan's).
        warm_up: decode once after each load.
        vision: pair each model with the projector beside it (``mmproj-*.gguf``, as the
            library pairs them), planned and loaded with it.
        mmproj_offload: a projector may go to the model's main GPU (else host RAM).
        embeddings: chat models serve ``/v1/embeddings`` too: their embedding context is
            planned beside the chat context (an embedding model's always is).
        pins: per model file, request fields pinned for it alone (``n_gpu_layers``,
            ``kv_type``: ``--model-ngl`` / ``--model-kv-type``), over ``request``'s.
    """

    inventory: Inventory
    request: Request
    n_threads: int | None = None
    warm_up: bool = True
    vision: bool = True
    mmproj_offload: bool = True
    embeddings: bool = False
    pins: Mapping[Path, Mapping[str, Any]] = field(default_factory=dict)
    _alone: dict[Path, tuple[_Stamps, Plan]] = field(default_factory=dict)

    def profile(self, path: Path) -> ModelProfile:
        """The model's profile (read again when the file changed: cached by its date)."""
        from engine.gguf_file import load_profile

        return load_profile(path)

    def projector(self, path: Path) -> Path | None:
        """The model's vision projector, or None (none beside it, or ``vision`` off)."""
        from engine.models import paired_projector

        return paired_projector(path) if self.vision else None

    def _plan(self, inventory: Inventory, path: Path) -> Plan:
        """The model's plan in ``inventory``, its projector's memory held back first."""
        projector = self.projector(path)
        request = replace(self.request, **self.pins.get(path, {}))
        if self.embeddings:
            request = replace(request, embedding_context=True)
        if projector is None:
            return plan(inventory, self.profile(path), request)
        from engine.gguf_file import load_projector

        return plan_with_projector(inventory, self.profile(path), request,
                                   load_projector(str(projector)), self.mmproj_offload)

    def alone(self, path: Path) -> Plan:
        """The model's plan with nothing else loaded (cached while the file is unchanged:
        a file replaced after start is planned again, not loaded by its old plan)."""
        cached = self.alone_if_planned(path)
        if cached is None:
            stamp = self._stamps(path)
            cached = self._plan(self.inventory, path)
            if stamp[0] is not None:
                self._alone[path] = (stamp, cached)
        return cached

    def alone_if_planned(self, path: Path) -> Plan | None:
        """The cached plan alone, or None before :meth:`alone` made it for the file as it
        is now."""
        entry = self._alone.get(path)
        if entry is None or entry[0] != self._stamps(path):
            return None
        return entry[1]

    def beside(self, path: Path, residents: Sequence[Resident]) -> Plan:
        """The model's plan into what ``residents`` leave."""
        if not residents:
            return self.alone(path)
        return self._plan(inventory_left(self.inventory, residents), path)

    def spec(self, path: Path, p: Plan) -> LaunchSpec:
        """What llama.cpp loads for plan ``p``."""
        projector = self.projector(path) if p.projector is not None else None
        spec = spec_of_plan(path, p, n_threads=self.n_threads, mmproj_path=projector)
        return spec if self.warm_up else spec.with_changes(warm_up=False)

    def _stamps(self, path: Path) -> _Stamps:
        """The model's and its projector's (size, mtime): either changed, it is planned
        again."""
        projector = self.projector(path)
        return _stamp(path), _stamp(projector) if projector is not None else None


def model_pins(ngl: Sequence[str], kv_type: Sequence[str], ids: Mapping[str, str]
               ) -> dict[str, dict[str, Any]]:
    """Per model id, the pins of ``--model-ngl MODEL=N`` and ``--model-kv-type
    MODEL=TYPE`` values (``ids``: every name a model is known by -> its id).

    Raises:
        ValueError: a value that is not ``MODEL=VALUE``, a model not served, a layer
            count below 0 or a KV type the planner does not know; the message says which.
    """
    out: dict[str, dict[str, Any]] = {}
    for flag, values, key in (("--model-ngl", ngl, "n_gpu_layers"),
                              ("--model-kv-type", kv_type, "kv_type")):
        for value in values:
            name, sep, raw = value.rpartition("=")
            if not sep or not name or not raw:
                raise ValueError(f"{flag} {value}: give MODEL=VALUE")
            if name not in ids:
                raise ValueError(f"{flag} {value}: {name} is not among the models served")
            pin: Any = raw.lower()
            if key == "n_gpu_layers":
                if not raw.isdigit():
                    raise ValueError(f"{flag} {value}: the layer count must be 0 or more")
                pin = int(raw)
            elif pin not in KV_TYPES:
                raise ValueError(f"{flag} {value}: the KV type must be one of "
                                 f"{', '.join(KV_TYPES)}")
            out.setdefault(ids[name], {})[key] = pin
    return out


def _stamp(path: Path) -> tuple[int, int] | None:
    """The file's (size, modification time), or None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def shortfall_text(need: Mapping[str, int], free: Mapping[str, int]) -> str:
    """``needs 1.20 GiB RAM, 0.80 GiB free`` for each device short."""
    parts = []
    for device, n in sorted(need.items()):
        label = "RAM" if device == "host" else device
        parts.append(f"needs {gib(n)} {label}, {gib(max(0, free.get(device, 0)))} free")
    return "; ".join(parts)
