"""Placement: which layers and which routed experts live on which GPU, in RAM or on disk.

The search works on per-block byte costs (:func:`layer_costs`) so that it is fast; the
memory model (:func:`planner.memory.estimate`) then checks the result and has the last
word (see :mod:`planner.trials`: a device found over its budget is tightened and the
search runs again).

Spill order: routed experts first, layer by layer; whole layers only when nothing else
can move (llama.cpp keeps the *first* ``n_layer + 1 - n_gpu_layers`` blocks on the CPU);
attention and KV stay on a GPU as long as anything else can move instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from planner.cpu_rates import cpu_prefill_rate, cpu_type_rate
from planner.memory import Placement
from planner.profile import LayerKind, ModelProfile, TensorKind
from planner.quant import is_iquant
from planner.speed import HOST, DeviceLoad

log = logging.getLogger(__name__)

KV_ELEMENT_BYTES: dict[str, float] = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


@dataclass(frozen=True)
class LayerTable:
    """What each block is, independent of context and KV type (once per plan).

    Parallel tuples, one entry per block: ``core`` is everything but the routed experts
    (attention, norms, dense or shared FFN, recurrent tensors).
    """

    core: tuple[int, ...]
    expert: tuple[int, ...]
    kv_elements: tuple[int, ...]     # K + V elements per context cell
    swa_window: tuple[int, ...]
    attn_flops: tuple[int, ...]      # a token's attention FLOPs per cached cell (Q.K, P.V)
    state: tuple[int, ...]           # recurrent state bytes per sequence
    recurrent: tuple[bool, ...]
    nextn: tuple[bool, ...]


@dataclass(frozen=True)
class LayerCosts:
    """Per block, for one context and KV type: bytes stored and KV read per token.

    ``kv`` is the block's cache for the whole context; ``kv_read`` what one token reads
    of its attention cache at the requested depth; ``state_read`` what it reads and
    writes of a recurrent block's state (a plain stream, not an attention kernel's read).
    """

    core: tuple[int, ...]
    expert: tuple[int, ...]
    kv: tuple[int, ...]
    kv_read: tuple[float, ...]
    recurrent: tuple[bool, ...]
    nextn: tuple[bool, ...]
    attn_flops: tuple[int, ...] = ()  # a token's attention FLOPs per cached cell
    state_read: tuple[float, ...] = ()

    def __len__(self) -> int:
        return len(self.core)


def layer_table(profile: ModelProfile) -> LayerTable:
    """The per-block table :func:`layer_costs` prices contexts from."""
    experts = [layer.bytes_of(TensorKind.EXPERTS) for layer in profile.layers]
    return LayerTable(
        core=tuple(la.total_bytes - e for la, e in zip(profile.layers, experts, strict=True)),
        expert=tuple(experts),
        kv_elements=tuple(la.n_head_kv * (la.head_dim_k + la.head_dim_v)
                          for la in profile.layers),
        swa_window=tuple(la.swa_window if la.kind == LayerKind.SWA else 0
                         for la in profile.layers),
        attn_flops=tuple(2 * la.n_head * (la.head_dim_k + la.head_dim_v) if la.n_head_kv else 0
                         for la in profile.layers),
        state=tuple(la.recurrent_state_bytes for la in profile.layers),
        recurrent=tuple(la.kind == LayerKind.RECURRENT for la in profile.layers),
        nextn=tuple(la.kind == LayerKind.NEXTN for la in profile.layers))


def layer_costs(t: LayerTable, kv_type: str, n_ctx: int, n_seq: int, depth: int,
                load_mtp: bool = False) -> LayerCosts:
    """Per-block storage and per-token reads for a context of ``n_ctx`` cells in all."""
    elem = KV_ELEMENT_BYTES[kv_type]
    n = len(t.core)
    loaded = [load_mtp or not x for x in t.nextn]
    kv: list[int] = []
    kv_read: list[float] = []
    for i in range(n):
        per_cell = t.kv_elements[i] * elem
        w = t.swa_window[i]
        cells = min(n_ctx, (w + 512) * n_seq) if w else n_ctx
        kv.append(int(per_cell * cells) + t.state[i] * n_seq if loaded[i] else 0)
        kv_read.append(per_cell * (min(depth, w) if w else depth))
    return LayerCosts(
        core=tuple(c if ok else 0 for c, ok in zip(t.core, loaded, strict=True)),
        expert=tuple(e if ok else 0 for e, ok in zip(t.expert, loaded, strict=True)),
        kv=tuple(kv), kv_read=tuple(kv_read), recurrent=t.recurrent, nextn=t.nextn,
        state_read=tuple(2.0 * s for s in t.state),
        attn_flops=tuple(f if ok else 0 for f, ok in zip(t.attn_flops, loaded, strict=True)))


@dataclass(frozen=True)
class Budget:
    """Bytes a device may hold for this model (free minus reserve)."""

    device: str
    bytes: int
    remote: bool = False    # an RPC worker's device: its blocks come first, as in llama.cpp


@dataclass(frozen=True)
class Layout:
    """A placement llama.cpp can carry out, with how it was reached.

    Attributes:
        placement: per block, device of its core tensors and of its routed experts.
        n_cpu_layers: leading blocks kept whole on the CPU (dense spill).
        gpu_layers: per GPU device, its block range ``(first, last_exclusive)``.
        expert_host_layers: blocks whose routed experts stay in RAM.
    """

    placement: Placement
    n_cpu_layers: int
    gpu_layers: tuple[tuple[str, int, int], ...]
    expert_host_layers: tuple[int, ...]


def _ranges_by_share(first: int, costs: LayerCosts, shares: Sequence[float],
                     weight: Sequence[float]) -> list[tuple[int, int]]:
    """Split blocks ``first..`` into consecutive ranges with bytes in proportion to shares."""
    total = sum(weight[first:]) or 1.0
    share_sum = sum(shares) or 1.0
    bounds: list[tuple[int, int]] = []
    start = first
    acc = 0.0
    target = 0.0
    for g, share in enumerate(shares):
        target += share / share_sum * total
        end = start
        if g == len(shares) - 1:
            end = len(costs)
        else:
            while end < len(costs) and acc + weight[end] / 2 <= target:
                acc += weight[end]
                end += 1
        bounds.append((start, end))
        start = end
    return bounds


def fill_layout(profile: ModelProfile, costs: LayerCosts, gpus: Sequence[Budget],
                overhead: dict[str, int], output_device_bytes: int) -> Layout:
    """The fastest layout the budgets allow, by the spill order above.

    Args:
        gpus: active GPUs, fastest (main) first, with their budgets.
        overhead: bytes per GPU device the model needs besides layers (compute buffers).
        output_device_bytes: bytes of the output layer (kept on the main GPU).
    """
    n = len(costs)
    if not gpus:
        return _layout(n, n, [], set(range(n)), HOST)
    main = gpus[0].device
    first = min((b.device for b in gpus if not b.remote), key=lambda d: int(d[3:]),
                default="")
    room = {b.device: b.bytes - overhead.get(b.device, 0) for b in gpus}
    room[main] -= output_device_bytes
    core = [c + k for c, k in zip(costs.core, costs.kv, strict=True)]
    full = [c + e for c, e in zip(core, costs.expert, strict=True)]
    by_index = sorted(gpus, key=lambda b: (not b.remote, int(b.device[3:])))
    order = [b.device for b in by_index]
    caps = [max(0, room[d]) for d in order]
    if sum(full) <= sum(caps):
        ranges = _greedy_ranges(0, full, gpus, room, order)
        if ranges is not None:
            return _layout(n, 0, list(zip(order, ranges, strict=True)), set(), main)
    if profile.is_moe and sum(core) <= sum(caps):
        return _moe_layout(n, costs, core, caps, order, main)
    # dense spill: the first blocks go to the CPU whole
    total_caps = sum(caps)
    tail = sum(full)
    for n_cpu in range(0, n + 1):
        if n_cpu:
            tail -= full[n_cpu - 1]
        if tail > total_caps:
            continue
        ranges = _greedy_ranges(n_cpu, full, gpus, room, order)
        if ranges is not None and any(end > start for start, end in ranges):
            return _layout(n, n_cpu, list(zip(order, ranges, strict=True)), set(), main)
    return _layout(n, n, [], set(range(n)), HOST, offload=first)


def _greedy_ranges(first: int, full: Sequence[int], gpus: Sequence[Budget],
                   room: dict[str, int], order: Sequence[str]) -> list[tuple[int, int]] | None:
    """Block counts per GPU, fastest first filled to the brim, laid out in index order.

    Returns None when the blocks ``first..`` do not fit the GPUs that way.
    """
    remaining = len(full) - first
    avg = sum(full[first:]) / max(1, remaining)
    counts: dict[str, int] = {}
    for b in gpus:
        fit = remaining if avg <= 0 else int(max(0, room[b.device]) // avg)
        counts[b.device] = min(remaining, fit)
        remaining -= counts[b.device]
    if remaining > 0:
        return None
    out = []
    start = first
    for d in order:
        end = start + counts[d]
        if sum(full[start:end]) > room[d]:
            return None
        out.append((start, end))
        start = end
    return out


def _moe_layout(n: int, costs: LayerCosts, core: Sequence[int], caps: Sequence[int],
                order: Sequence[str], main: str) -> Layout:
    """Every block's core on a GPU (ranges by capacity); experts that do not fit -> RAM."""
    ranges = _ranges_by_share(0, costs, [float(c) for c in caps],
                              [float(c + e) for c, e in zip(core, costs.expert, strict=True)])
    host_experts: set[int] = set()
    for (start, end), cap in zip(ranges, caps, strict=True):
        used = sum(core[start:end])
        # keep the experts of the last blocks of the range; spill from its first block on
        keep_from = end
        while keep_from > start and used + costs.expert[keep_from - 1] <= cap:
            used += costs.expert[keep_from - 1]
            keep_from -= 1
        host_experts.update(i for i in range(start, keep_from) if costs.expert[i])
    return _layout(n, 0, list(zip(order, ranges, strict=True)), host_experts, main)


def _layout(n: int, n_cpu: int, ranges: Sequence[tuple[str, tuple[int, int]]],
            host_experts: set[int], output_device: str, offload: str = "") -> Layout:
    layer_dev = [HOST] * n
    for device, (start, end) in ranges:
        for i in range(start, end):
            layer_dev[i] = device
    expert_dev = [HOST if i in host_experts else layer_dev[i] for i in range(n)]
    placement = Placement(layer_devices=tuple(layer_dev), expert_devices=tuple(expert_dev),
                          output_device=output_device if ranges else HOST,
                          offload_device=offload if not ranges else "")
    return Layout(placement=placement, n_cpu_layers=n_cpu,
                  gpu_layers=tuple((d, s, e) for d, (s, e) in ranges),
                  expert_host_layers=tuple(sorted(host_experts)))


def pinned_layout(profile: ModelProfile, gpu_devices: Sequence[str], main: str,
                  n_gpu_layers: int | None, n_cpu_moe: int | None,
                  tensor_split: Sequence[float] | None) -> Layout:
    """The layout llama.cpp makes of ``-ngl``, ``--n-cpu-moe`` and ``--tensor-split``.

    Mirrors ``llama_model::load_tensors``: the first ``n_layer + 1 - ngl`` blocks stay on
    the CPU; GPU blocks go to devices by cumulative split fraction; the output layer is
    the block after the last.
    """
    n = profile.n_layers
    ngl = n + 1 if n_gpu_layers is None else max(0, n_gpu_layers)
    devices = list(gpu_devices)
    if not devices:
        ngl = 0
    split = list(tensor_split) if tensor_split else [1.0] * len(devices)
    split = (split + [0.0] * len(devices))[:len(devices)]
    if devices and sum(split) <= 0:
        split = [1.0] * len(devices)
    cum: list[float] = []
    acc = 0.0
    for s in split:
        acc += s
        cum.append(acc / sum(split) if sum(split) else 0.0)
    i_gpu_start = max(n + 1 - ngl, 0)
    act = min(ngl, n + 1) if devices else 0

    def device_of(il: int) -> str:
        if il < i_gpu_start or il - i_gpu_start >= act:
            return HOST
        frac = (il - i_gpu_start) / act
        for d, c in zip(devices, cum, strict=True):
            if frac < c:
                return d
        return devices[-1]

    layer_dev = [device_of(i) for i in range(n)]
    output = device_of(n)
    if output != HOST and main in devices:
        output = main  # the plan keeps the output on the main GPU with a buffer override
    host_experts = set(range(min(n, n_cpu_moe or 0)))
    expert_dev = [HOST if i in host_experts else layer_dev[i] for i in range(n)]
    ranges = []
    for d in devices:
        idx = [i for i in range(n) if layer_dev[i] == d]
        ranges.append((d, (idx[0], idx[-1] + 1) if idx else (0, 0)))
    nothing_on_gpu = output == HOST and all(d == HOST for d in layer_dev)
    placement = Placement(tuple(layer_dev), tuple(expert_dev), output_device=output,
                          offload_device=devices[0] if devices and nothing_on_gpu else "")
    return Layout(placement=placement, n_cpu_layers=i_gpu_start,
                  gpu_layers=tuple((d, s, e) for d, (s, e) in ranges),
                  expert_host_layers=tuple(sorted(i for i in host_experts
                                                  if profile.layers[i].bytes_of(
                                                      TensorKind.EXPERTS))))


def token_loads(profile: ModelProfile, costs: LayerCosts, placement: Placement,
                disk_fraction: float = 0.0, bits_per_weight: float | None = None,
                iquant: bool | None = None
                ) -> tuple[tuple[DeviceLoad, ...], tuple[tuple[str, str], ...]]:
    """What one decoded token reads on each device, and the hops it makes.

    Args:
        disk_fraction: share of the host's weight bytes that are not resident in RAM
            (mmapped from disk) and are read from disk when touched.
        bits_per_weight, iquant: the profile's, when the caller has them at hand.
    """
    used = (profile.expert_used_count / profile.expert_count) if profile.is_moe else 0.0
    bpw = bits_per_weight if bits_per_weight is not None else profile.bits_per_weight
    per_flop = 2 * 8 / (bpw or 4.5)
    # a prompt multiplies the blocks' matrices: their weights, from their own bits
    block_flop = 2 * 8 / (profile.block_bits_per_weight or bpw or 4.5)
    # per device: weight, expert, kv, layers, recurrent, stored, state
    acc: dict[str, list[float]] = {HOST: [0.0] * 7}
    attn: dict[str, float] = {}  # per device: a token's attention FLOPs per cached cell
    hops: list[tuple[str, str]] = []
    current = HOST  # the input layer (token embedding lookup) is always on the CPU
    layer_devices, expert_devices = placement.layer_devices, placement.expert_devices
    for i in range(len(costs)):
        if costs.nextn[i]:
            continue
        dev = layer_devices[i]
        if dev != current:
            hops.append((current, dev))
            current = dev
        a = acc.get(dev) or acc.setdefault(dev, [0.0] * 7)
        if costs.attn_flops:
            attn[dev] = attn.get(dev, 0.0) + costs.attn_flops[i]
        core = costs.core[i]
        a[0] += core
        a[2] += costs.kv_read[i]
        a[3] += 1
        a[4] += costs.recurrent[i]
        a[5] += core
        if costs.state_read:
            a[6] += costs.state_read[i]
        expert = costs.expert[i]
        if expert:
            exp_dev = expert_devices[i]
            e = acc.get(exp_dev) or acc.setdefault(exp_dev, [0.0] * 7)
            e[1] += expert * used
            e[5] += expert
            if exp_dev != dev:
                hops += [(dev, exp_dev), (exp_dev, dev)]
                e[3] += 1  # the expert matmuls sync that device's threads
    out_dev = placement.output_device
    if out_dev != current:
        hops.append((current, out_dev))
    # a tied output projects with the token embeddings: all of them are read per token
    out_bytes = profile.output_bytes + (profile.token_embd_bytes if profile.tied_output else 0)
    o = acc.setdefault(out_dev, [0.0] * 7)
    o[0] += out_bytes
    o[5] += out_bytes
    out_read = {out_dev: out_bytes}
    if iquant is None:
        iquant = is_iquant(profile)
    type_rate = cpu_type_rate(profile.quant_bytes or ((profile.file_type, 1),))
    prefill_rate = cpu_prefill_rate(profile.block_quant_bytes or ((profile.file_type, 1),))
    loads = []
    for device, (w_read, e_read, kv_read, n_layers, n_recurrent, stored, state) in acc.items():
        if not stored and not n_layers and device != HOST:
            continue
        resident = 1.0 - disk_fraction if device == HOST else 1.0
        disk = (w_read + e_read) * (1.0 - resident)
        loads.append(DeviceLoad(
            device=device, weight_bytes=w_read * resident, expert_bytes=e_read * resident,
            kv_bytes=kv_read, state_bytes=state, layers=int(n_layers),
            recurrent_layers=int(n_recurrent),
            stored_bytes=stored, disk_bytes=disk, disk_stored_bytes=stored * (1 - resident),
            flops=(w_read + e_read) * per_flop, iquant=iquant, cpu_type_rate=type_rate,
            cpu_prefill_rate=prefill_rate, attn_flops=attn.get(device, 0.0),
            # a prompt's output layer runs for its last token only (llama.cpp asks logits
            # of that one), so prefill does not pay the output projection per token
            prefill_flops=(w_read + e_read - out_read.get(device, 0.0)) * block_flop))
    loads.sort(key=lambda ld: (ld.device != HOST, ld.device))
    return tuple(loads), tuple(hops)
