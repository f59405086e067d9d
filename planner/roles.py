"""GPU roles: Main, Helper or Off, each with a reason code, and each GPU's budget.

Main holds the output layer and most layers (largest free VRAM x bandwidth). A Helper is
another GPU whose share makes the whole faster; whether it does is priced by the planner
(:func:`planner.plan.plan` tries with and without it). Off: GPUs under 8 GiB of usable
memory (when another GPU is Main), GPUs whose share would slow the whole, and GPUs the
user switched off. A GPU that drives a display keeps a larger reserve. Devices of RPC
workers are GPUs behind a network link: never Main while a local GPU exists.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from planner.codes import Code
from planner.inventory import Gpu, Inventory
from planner.request import Request, Role

log = logging.getLogger(__name__)

GIB = 1 << 30
MIN_RESERVE = 1 * GIB            # llama.cpp's own fit leaves 1024 MiB per device
DISPLAY_RESERVE = 3 * GIB // 2   # extra for a compositor and a browser
MIN_HELPER_BYTES = 8 * GIB - 512 * (1 << 20)  # "under 8 GB": an 8 GB card has ~7.5 GiB


@dataclass(frozen=True)
class GpuRole:
    """A GPU's role in a plan, with why and how many bytes the model may use on it."""

    gpu: int
    name: str
    role: Role
    reason: Code
    budget_bytes: int
    reserve_bytes: int
    score: float

    @property
    def device(self) -> str:
        return f"gpu{self.gpu}"

    def to_json(self) -> dict[str, object]:
        """One entry of the Plan JSON's ``roles``."""
        return {"gpu": self.gpu, "name": self.name, "role": self.role.value,
                "reason": self.reason.value, "budget_bytes": self.budget_bytes,
                "reserve_bytes": self.reserve_bytes}


def reserve_for(gpu: Gpu) -> int:
    """Bytes left free on a GPU: at least 1 GiB, 5% of large cards, more with a display."""
    reserve = max(MIN_RESERVE, gpu.total_bytes // 20)
    if gpu.drives_display or gpu.unified_memory:
        reserve += DISPLAY_RESERVE
    return reserve


def gpu_score(gpu: Gpu) -> float:
    """Main-GPU preference: usable memory x bandwidth."""
    return max(0, gpu.free_bytes - reserve_for(gpu)) / GIB * gpu.bandwidth_gbps


def candidate_roles(inventory: Inventory, request: Request) -> tuple[GpuRole, ...]:
    """Roles before pricing: a Main, candidate Helpers (to be priced) and Offs.

    The user's ``roles`` (one per GPU, inventory order) are taken as given; ``gpu_order``
    makes the first GPU listed the Main and orders the Helpers.
    """
    gpus = list(inventory.gpus)
    if not gpus:
        return ()
    forced = list(request.roles or ())
    forced += [Role.HELPER] * (len(gpus) - len(forced)) if request.roles else []
    order = _preference(gpus, request.gpu_order)
    out: dict[int, GpuRole] = {}
    main_index = next((g.index for g, r in zip(gpus, forced, strict=False) if r == Role.MAIN),
                      None)
    if request.roles and main_index is None:
        main_index = next((g.index for g in order
                           if forced[gpus.index(g)] != Role.OFF), None)
    if main_index is None and not request.roles:
        main_index = next((g.index for g in order if not (g.remote and g.same_host)), None)
    for position, gpu in enumerate(gpus):
        reserve = reserve_for(gpu)
        budget = max(0, gpu.free_bytes - reserve)
        user = forced[position] if request.roles else None
        if gpu.index == main_index:
            reason = Code.ROLE_MAIN_USER if user == Role.MAIN or request.gpu_order \
                else Code.ROLE_MAIN_LARGEST
            role = Role.MAIN
        elif user == Role.OFF:
            role, reason = Role.OFF, Code.ROLE_OFF_USER
        elif user == Role.HELPER:
            role, reason = Role.HELPER, Code.ROLE_HELPER_USER
        elif gpu.remote and gpu.same_host:
            # its memory and cores are this machine's, already counted: nothing to gain
            role, reason = Role.OFF, Code.ROLE_OFF_SAME_HOST
        elif budget < MIN_HELPER_BYTES:
            role, reason = Role.OFF, Code.ROLE_OFF_SMALL
        else:
            role, reason = Role.HELPER, Code.ROLE_HELPER_FASTER  # to be priced
        out[gpu.index] = GpuRole(gpu.index, gpu.name, role, reason, budget, reserve,
                                 gpu_score(gpu))
    ranked = [out[g.index] for g in order]
    return tuple(ranked)


def _preference(gpus: Sequence[Gpu], order: Sequence[int] | None) -> list[Gpu]:
    if order:
        by_index = {g.index: g for g in gpus}
        first = [by_index[i] for i in order if i in by_index]
        return first + [g for g in gpus if g.index not in order]
    # a worker's device is Main only when there is no local GPU: the output layer and
    # the logits stay on this machine, as llama.cpp puts local devices last
    return sorted(gpus, key=lambda g: (g.remote, -gpu_score(g), g.index))


def with_role(roles: Sequence[GpuRole], gpu: int, role: Role, reason: Code) -> tuple[GpuRole,
                                                                                     ...]:
    """A copy of ``roles`` with one GPU's role and reason changed."""
    return tuple(replace(r, role=role, reason=reason) if r.gpu == gpu else r for r in roles)


def active(roles: Sequence[GpuRole]) -> tuple[GpuRole, ...]:
    """Main and Helpers, Main first."""
    return tuple(r for r in roles if r.role == Role.MAIN) + tuple(
        r for r in roles if r.role == Role.HELPER)


def user_pinned(request: Request) -> bool:
    """True when the user fixed the roles (nothing is priced away)."""
    return request.roles is not None
