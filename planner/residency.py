"""Several models resident at once: what memory a new one may use, and which to unload for it.

The rule (``loadout serve --models``): a model about to load is planned into what the
resident models leave (each device's budget less their planned bytes there); when its
plan does not fit there, the least recently used models are unloaded until it does. A
pinned model is never unloaded; a busy one (requests in flight or waiting) only after
its requests end, and only when the idle ones do not make room. A load the budget cannot
hold even with every unpinned model gone is refused, with the bytes needed and free.

Pure: bytes and clocks are passed in; nothing here reads the machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from planner.inventory import Inventory

HOST = "host"


@dataclass(frozen=True)
class Resident:
    """A loaded model, as residency sees it.

    Attributes:
        id: the model's id.
        planned: bytes its plan puts on each device (``host``, ``gpu0`` ...).
        last_used: when it last began or ended a request (any monotonic clock).
        pinned: never unloaded (``--keep``).
        busy: requests in flight or waiting for it.
    """

    id: str
    planned: tuple[tuple[str, int], ...]
    last_used: float
    pinned: bool = False
    busy: bool = False

    def bytes_on(self, device: str) -> int:
        return sum(b for d, b in self.planned if d == device)


@dataclass(frozen=True)
class Shortfall:
    """A device the new model does not fit on: bytes it needs there and bytes free."""

    device: str
    need_bytes: int
    free_bytes: int


@dataclass(frozen=True)
class RoomDecision:
    """What to do so that a model fits beside the resident ones.

    Attributes:
        fits: True when the model fits once ``evict`` are unloaded.
        evict: the models to unload, least recently used first.
        wait_for: those of ``evict`` that are busy (unload each once its requests end).
        shortfall: when it does not fit, each device short: need vs the most that could
            be freed there (free now plus every unpinned model's bytes).
        over_count: True when ``max_models`` alone forced an unload.
    """

    fits: bool
    evict: tuple[str, ...] = ()
    wait_for: tuple[str, ...] = ()
    shortfall: tuple[Shortfall, ...] = ()
    over_count: bool = False


def used_bytes(residents: Iterable[Resident]) -> dict[str, int]:
    """The bytes the residents' plans hold on each device."""
    used: dict[str, int] = {}
    for r in residents:
        for device, n in r.planned:
            used[device] = used.get(device, 0) + n
    return used


def remaining(budget: Mapping[str, int], residents: Iterable[Resident]) -> dict[str, int]:
    """Each device's budget less what the residents hold there (may be negative)."""
    used = used_bytes(residents)
    return {d: b - used.get(d, 0) for d, b in budget.items()}


def inventory_left(inventory: Inventory, residents: Iterable[Resident]) -> Inventory:
    """``inventory`` as a new model sees it: RAM and each GPU's free memory less what the
    resident models' plans hold there (``gpuN`` is the GPU of index N). A unified-memory
    GPU shares the RAM: what residents hold on either is gone from both."""
    used = used_bytes(residents)
    unified = sum(used.get(f"gpu{g.index}", 0) for g in inventory.gpus if g.unified_memory)
    host_used = used.get(HOST, 0)
    host = replace(inventory.host, ram_available_bytes=max(
        0, inventory.host.ram_available_bytes - host_used - unified))
    gpus = tuple(replace(g, free_bytes=max(0, g.free_bytes - (
        host_used + unified if g.unified_memory else used.get(f"gpu{g.index}", 0))))
        for g in inventory.gpus)
    return replace(inventory, host=host, gpus=gpus)


def _short(need: Mapping[str, int], free: Mapping[str, int]) -> list[Shortfall]:
    return [Shortfall(d, n, free.get(d, 0)) for d, n in sorted(need.items())
            if n > 0 and n > free.get(d, 0)]


def make_room(budget: Mapping[str, int], residents: Sequence[Resident],
              need: Mapping[str, int], max_models: int | None = None) -> RoomDecision:
    """Which residents to unload so that a model needing ``need`` bytes per device fits.

    Idle models go first, least recently used first; busy ones only when the idle ones
    are not enough. A resident holding nothing on a device that is short is kept (unless
    ``max_models`` needs the count down).

    Args:
        budget: each device's usable bytes (capacity less its reserve).
        residents: the loaded models.
        need: the bytes the new model's plan puts on each device.
        max_models: the most models resident at once (None: no count limit).
    """
    free = remaining(budget, residents)
    count = len(residents)
    over = max_models is not None and count + 1 > max_models
    candidates = sorted((r for r in residents if not r.pinned),
                        key=lambda r: (r.busy, r.last_used, r.id))
    evict: list[Resident] = []
    for r in candidates:
        short = _short(need, free)
        too_many = max_models is not None and count - len(evict) + 1 > max_models
        if not short and not too_many:
            break
        if too_many or any(r.bytes_on(s.device) > 0 for s in short):
            evict.append(r)
            for device, n in r.planned:
                free[device] = free.get(device, 0) + n
    short = _short(need, free)
    too_many = max_models is not None and count - len(evict) + 1 > max_models
    if short or too_many:
        return RoomDecision(fits=False, shortfall=tuple(short), over_count=over)
    return RoomDecision(fits=True, evict=tuple(r.id for r in evict),
                        wait_for=tuple(r.id for r in evict if r.busy), over_count=over)


def idle_expired(residents: Iterable[Resident], now: float, idle_timeout_s: float
                 ) -> tuple[str, ...]:
    """The residents idle for at least ``idle_timeout_s`` (never pinned or busy ones)."""
    return tuple(r.id for r in residents
                 if not r.pinned and not r.busy and now - r.last_used >= idle_timeout_s)
