"""The speed model: decode t/s, prefill t/s and TTFT from where the bytes are.

Decoding one token reads every active weight once, so the time of a token is the sum,
over the devices it passes through, of the bytes read there over that device's effective
bandwidth, plus the KV cache read at the current depth, the hops between devices and a
fixed cost per layer. Speculation divides that by the tokens gained per step.

One set of constants (:data:`CONSTANTS`). Most are set by physics (bytes, FLOPs, what a
verified token adds) or measured on the engine here; nine free ones are fitted on
``bench/data/published_speeds.csv`` by ``bench/speed_calibration.py``, which reports the
error of each row predicted by constants fitted without it (leave-one-out) and on rows
kept out of the fit. A per-machine correction learnt from this machine's own runs is
applied on top (``planner/machine_fit.py``), never folded into these.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

# the CPU's rates per weight type: priced here, imported from here by callers
from planner.cpu_rates import CPU_BYTE_RATE as CPU_BYTE_RATE
from planner.cpu_rates import CPU_PREFILL_ATTENTION_RATE as CPU_PREFILL_ATTENTION_RATE
from planner.cpu_rates import CPU_PREFILL_RATE as CPU_PREFILL_RATE
from planner.cpu_rates import KV_PAD as KV_PAD
from planner.cpu_rates import _type_key as _type_key
from planner.cpu_rates import cpu_prefill_rate as cpu_prefill_rate
from planner.cpu_rates import cpu_type_rate as cpu_type_rate
from planner.cpu_rates import prefill_kv_cells as prefill_kv_cells
from planner.inventory import Backend, Gpu, Inventory
from planner.request import SpecMode, TaskKind

log = logging.getLogger(__name__)

GB = 1e9
HOST = "host"
DISK = "disk"


@dataclass(frozen=True)
class SpeedConstants:
    """The calibrated constants of the speed model (one set for every machine).

    Fitted (``bench/speed_fit.py``: nine knobs, each pulled toward a physical prior):
    the GPU / ROCm / Metal bandwidth fractions, expert efficiency, GPU / ROCm per-layer
    cost, the per-layer cost of a verify step, the CPU rate and the CPU per-layer costs.
    Set by hand from one source each (not fitted): i-quant factors (DeepSeek-V3 IQ3_XXS,
    Qwen3.8 IQ2_XXS), KV costs (the rows' depth points; ``bench/cpu_attention.py`` here),
    the Metal verify cost (Apple rows of the MTP table), MoE verify overlap (the RTX 2060
    MTP row). Physics, no constant: what a verified token adds (its FLOPs), drafting
    (the drafter's bytes), the output layer computed once per prompt in prefill.
    """

    gpu_bw_fraction: float = 0.77          # of nominal VRAM bandwidth, dense weights
    rocm_bw_fraction: float = 0.62         # ROCm's decode kernels reach less of theirs
    metal_bw_fraction: float = 0.66        # Apple GPUs reach less of their SoC figure
    gpu_expert_efficiency: float = 0.67    # routed-expert reads: small scattered matmuls
    gpu_layer_s: float = 59e-6             # kernel launches and syncs per layer per token
    rocm_layer_s: float = 88e-6            # ... and launch slower
    gpu_kv_cost: float = 1.7               # a KV byte costs this many weight bytes (GPU)
    cpu_bw_fraction: float = 0.80          # of nominal RAM bandwidth
    cpu_core_gbps: float = 7.0             # what one core can stream of Q4_K (many-
    #   channel caps); other weight types by :data:`CPU_BYTE_RATE`. Only where the host's
    #   own rate was not measured (``Host.core_decode_gbps``: a rig of another machine)
    cpu_reference_ghz: float = 3.5         # ... at this clock: the per-core rates scale
    #   with the host's clock when it is known (the CPU rows' machines run near 3.5 GHz
    #   all-core; this 2.1 GHz VM streams SmolLM2's Q4_1 at about 4.2 GB/s per core)
    cpu_layer_s: float = 40e-6             # thread sync per layer per token ...
    cpu_layer_thread_s: float = 5e-6       # ... growing with the thread count
    cpu_kv_cost: float = 20.0              # CPU flash attention at depth is far from
    #   bandwidth (the Epyc row: tg128 59.8 t/s at depth 0, 15.0 at depth 6000)
    cpu_kv_cost_noflash: float = 1.5       # without flash attention the CPU reads the f16
    #   cache with ordinary matmuls. bench/cpu_attention.py (SmolLM2-135M, 2 threads):
    #   flash on 97.0 / 33.7 / 13.2 t/s at depth 0 / 1000 / 3000 (cost 8.0, 9.1), flash
    #   off 87.6 / 66.2 / 42.1 t/s (cost 1.4, 1.5)
    cpu_recurrent_layer_s: float = 1.2e-3  # SSM / delta-net layers on a CPU: compute-bound
    hybrid_arith_share: float = 0.88       # a host part between a GPU's parts pays its
    #   arithmetic on top of its reads, times this share (1: none of it hidden behind the
    #   reads; fitted): the host computes each offloaded layer in a short burst while the
    #   GPU waits, where a CPU-only token streams its layers back to back. The published
    #   split rows were predicted 13-62% too fast on their host's reads alone
    hop_s: float = 25e-6                   # one activation hop between devices
    disk_fraction: float = 0.5             # of sequential read: page faults, small reads
    gpu_flops_fraction: float = 0.45       # of nominal FP16 TFLOPS in prefill
    cpu_core_gflops: float = 45.0          # quantized matmul per core in prefill (where
    #   ``Host.core_prefill_gflops`` was not measured)
    pcie_fraction: float = 0.75            # host->GPU copies of weights in prefill
    metal_verify_cost: float = 0.45        # batch verify does not amortise on Apple GPUs
    #   (elsewhere a verified token costs its compute: see :func:`verify_cost`)
    cpu_iq_factor: float = 3.0             # i-quants (IQ*) dequantize slowly on CPUs ...
    gpu_iq_factor: float = 1.3             # ... and somewhat slowly on GPUs
    moe_verify_overlap: float = 0.5        # neighbouring tokens often route to the same
    #   experts, so a verify batch reads fewer distinct ones than independent routing
    spec_layer_s: float = 78e-6            # what a verify step adds per GPU layer: a
    #   batched pass runs other kernels than one token's (and outside its CUDA graph)
    acceptance: tuple[tuple[str, float], ...] = (
        ("code", 0.75), ("math", 0.80), ("agent", 0.70), ("chat", 0.60), ("creative", 0.35))
    mtp_acceptance: tuple[tuple[str, float], ...] = (  # a head trained with the model
        ("code", 0.85), ("math", 0.85), ("agent", 0.80), ("chat", 0.75), ("creative", 0.50))
    ngram_acceptance: tuple[tuple[str, float], ...] = (
        ("code", 0.45), ("agent", 0.45), ("math", 0.20), ("chat", 0.15), ("creative", 0.05))
    usable_decode_tps: float = 5.0
    rpc_graph_s: float = 150e-6            # an RPC worker's graph call, besides the link
    rpc_layer_s: float = 150e-6            # per block a worker computes: its graph is sent,
    #   checked and scheduled there each token. A first estimate, not yet calibrated:
    #   bench/cluster.py on a loaded 2-core machine gave +5.8 ms per token for 30 blocks
    #   over two loopback CPU workers in one run and -14 ms in another (noise dominates)
    worker_threads: int = 8                # a worker CPU's threads when not this machine's


CONSTANTS = SpeedConstants()

@dataclass(frozen=True)
class DeviceLoad:
    """What one device does for one decoded token (and holds, for prefill).

    Attributes:
        device: "gpu0", "gpu1", ... or "host".
        weight_bytes: non-expert weight bytes read per token.
        expert_bytes: routed-expert bytes read per token (the active share).
        kv_bytes: KV cache bytes read per token at the requested depth.
        state_bytes: recurrent state bytes read and written per token (streamed at the
            device's bandwidth, unlike an attention kernel's read of the cache).
        layers: blocks computed here per token.
        recurrent_layers: of which recurrent (SSM / linear attention).
        stored_bytes: weight bytes stored here (prefill copies them to a GPU per batch).
        disk_bytes: bytes that must come from disk per token (host only).
        disk_stored_bytes: weight bytes left on disk (prefill reads them per batch).
        flops: multiply-adds x2 per token (prefill is compute-bound).
    """

    device: str
    weight_bytes: float = 0.0
    expert_bytes: float = 0.0
    kv_bytes: float = 0.0
    state_bytes: float = 0.0
    layers: int = 0
    recurrent_layers: int = 0
    stored_bytes: float = 0.0
    disk_bytes: float = 0.0
    disk_stored_bytes: float = 0.0
    flops: float = 0.0
    iquant: bool = False      # weights are i-quants (IQ*): slower to dequantize
    cpu_type_rate: float = 1.0  # a core decodes these types' bytes this much faster than
    #   Q4_K's (:func:`cpu_type_rate`)
    prefill_flops: float | None = None  # per prompt token (None: ``flops``)
    cpu_prefill_rate: float = 1.0  # a core prefills these types this much faster than
    #   Q4_K (:func:`cpu_prefill_rate`)
    attn_flops: float = 0.0   # a token's attention FLOPs per cached cell (Q.K and P.V)


@dataclass(frozen=True)
class DeviceTime:
    """Seconds per decoded token spent on one device, by cause."""

    device: str
    weights_s: float
    experts_s: float
    kv_s: float
    overhead_s: float
    disk_s: float
    compute_s: float = 0.0    # the token's arithmetic alone here (what a verified
    #   token adds to a step whose weights are read anyway)
    layers: int = 0
    arith_s: float = 0.0      # arithmetic not hidden behind the reads (a host part of a
    #   split token: :attr:`SpeedConstants.hybrid_arith_share`)

    @property
    def total_s(self) -> float:
        return (self.weights_s + self.experts_s + self.kv_s + self.overhead_s + self.disk_s
                + self.arith_s)


@dataclass(frozen=True)
class SpecOutcome:
    """Speculation as priced: mode, draft length, acceptance and what a step yields."""

    mode: SpecMode
    draft_tokens: int
    acceptance: float
    tokens_per_step: float
    step_cost: float          # step time over one plain token's time


NO_SPEC = SpecOutcome(SpecMode.OFF, 0, 0.0, 1.0, 1.0)


@dataclass(frozen=True)
class Speed:
    """The predicted speeds and the time breakdown behind them."""

    decode_tps: float
    prefill_tps: float
    ttft_s: float
    prompt_tokens: int
    depth: int
    token_s: float                          # one plain (non-speculative) token
    transfer_s: float
    devices: tuple[DeviceTime, ...]
    spec: SpecOutcome = field(default=NO_SPEC)
    prefill_devices: tuple[tuple[str, float], ...] = ()  # seconds per prompt token

    def to_json(self) -> dict[str, object]:
        """The ``predicted`` object of the Plan JSON."""
        return {
            "decode_tps": round(self.decode_tps, 2),
            "prefill_tps": round(self.prefill_tps, 1),
            "ttft_s": round(self.ttft_s, 3),
            "prompt_tokens": self.prompt_tokens,
            "depth": self.depth,
            "plain_decode_tps": round(1.0 / self.token_s, 2) if self.token_s else 0.0,
            "tokens_per_step": round(self.spec.tokens_per_step, 3),
            "time_per_token_ms": {
                d.device: {"weights": _ms(d.weights_s), "experts": _ms(d.experts_s),
                           "kv": _ms(d.kv_s), "overhead": _ms(d.overhead_s),
                           "disk": _ms(d.disk_s), "arithmetic": _ms(d.arith_s)}
                for d in self.devices},
            "transfer_ms": _ms(self.transfer_s),
        }


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def gpu_of(inventory: Inventory, device: str) -> Gpu | None:
    """The GPU called ``device`` ("gpu1" -> index 1), or None for the host."""
    if not device.startswith("gpu"):
        return None
    index = int(device[3:])
    for gpu in inventory.gpus:
        if gpu.index == index:
            return gpu
    raise ValueError(f"no GPU {device} in the inventory")


def gpu_bandwidth(gpu: Gpu, c: SpeedConstants = CONSTANTS) -> float:
    """Effective bytes/s a GPU reads weights at."""
    if gpu.backend == Backend.METAL:
        fraction = c.metal_bw_fraction
    elif gpu.backend == Backend.ROCM:
        fraction = c.rocm_bw_fraction
    else:
        fraction = c.gpu_bw_fraction
    return gpu.bandwidth_gbps * GB * fraction


def gpu_layer_seconds(gpu: Gpu, c: SpeedConstants = CONSTANTS) -> float:
    """Fixed seconds a GPU spends per layer per token (launches, syncs)."""
    return c.rocm_layer_s if gpu.backend == Backend.ROCM else c.gpu_layer_s


def core_scale(inventory: Inventory, c: SpeedConstants = CONSTANTS) -> float:
    """This host's per-core speed relative to the constants' reference clock (1 unknown)."""
    clock = inventory.host.clock_ghz
    return min(2.0, max(0.3, clock / c.cpu_reference_ghz)) if clock > 0 else 1.0


def core_gbps(inventory: Inventory, c: SpeedConstants = CONSTANTS) -> float:
    """GB/s of Q4_K weights one of this host's cores decodes: measured on the machine
    (``Host.core_decode_gbps``) when known, else :attr:`SpeedConstants.cpu_core_gbps` at
    the host's clock (:func:`core_scale`)."""
    measured = inventory.host.core_decode_gbps
    return measured if measured > 0 else c.cpu_core_gbps * core_scale(inventory, c)


def core_gflops(inventory: Inventory, c: SpeedConstants = CONSTANTS) -> float:
    """GFLOP/s of Q4_K block matrices one of this host's cores makes in prefill: measured
    on the machine (``Host.core_prefill_gflops``) when known, else
    :attr:`SpeedConstants.cpu_core_gflops` at the host's clock (:func:`core_scale`)."""
    measured = inventory.host.core_prefill_gflops
    return measured if measured > 0 else c.cpu_core_gflops * core_scale(inventory, c)


def host_bandwidth(inventory: Inventory, threads: int, c: SpeedConstants = CONSTANTS,
                   type_rate: float = 1.0) -> float:
    """Effective bytes/s the CPU reads weights at with ``threads`` threads: the RAM's
    bandwidth or what the cores decode (``type_rate``: of these weight types, relative to
    Q4_K), whichever is slower."""
    nominal = inventory.host.bandwidth_gbps * GB * c.cpu_bw_fraction
    per_core = core_gbps(inventory, c) * type_rate
    return min(nominal, max(1, threads) * per_core * GB)


def gpu_flops(gpu: Gpu, c: SpeedConstants = CONSTANTS) -> float:
    """Effective FLOP/s of a GPU in prefill (a guess from bandwidth when unknown)."""
    tflops = gpu.tflops_fp16 if gpu.tflops_fp16 > 0 else gpu.bandwidth_gbps * 0.08
    return tflops * 1e12 * c.gpu_flops_fraction


def disk_bandwidth(inventory: Inventory, c: SpeedConstants = CONSTANTS) -> float:
    """Effective bytes/s of the fastest disk for mmapped reads (0.5 GB/s if none known)."""
    best = max((d.read_gbps for d in inventory.disks), default=0.5)
    return best * GB * c.disk_fraction


def cpu_kv_cost(flash: bool, c: SpeedConstants = CONSTANTS) -> float:
    """Weight bytes one KV byte costs a CPU, with or without flash attention."""
    return c.cpu_kv_cost if flash else c.cpu_kv_cost_noflash


def device_time(inventory: Inventory, load: DeviceLoad, threads: int,
                c: SpeedConstants = CONSTANTS, flash: bool = True,
                hybrid: bool = False) -> DeviceTime:
    """Seconds one decoded token spends on ``load.device`` (``flash``: flash attention;
    ``hybrid``: a GPU computes the rest of the token; the host's part pays its
    arithmetic on top of its reads, :attr:`SpeedConstants.hybrid_arith_share` of it)."""
    gpu = gpu_of(inventory, load.device)
    disk_s = load.disk_bytes / disk_bandwidth(inventory, c) if load.disk_bytes else 0.0
    if gpu is not None and gpu.remote:
        return _remote_time(inventory, gpu, load, c, flash)
    if gpu is not None:
        bw = gpu_bandwidth(gpu, c) / (c.gpu_iq_factor if load.iquant else 1.0)
        return DeviceTime(load.device, load.weight_bytes / bw,
                          load.expert_bytes / (bw * c.gpu_expert_efficiency),
                          (load.kv_bytes * c.gpu_kv_cost + load.state_bytes) / bw,
                          load.layers * gpu_layer_seconds(gpu, c), disk_s,
                          load.flops / gpu_flops(gpu, c), load.layers)
    bw = host_bandwidth(inventory, threads, c, load.cpu_type_rate) \
        / (c.cpu_iq_factor if load.iquant else 1.0)
    per_layer = c.cpu_layer_s + c.cpu_layer_thread_s * threads
    overhead = load.layers * per_layer + load.recurrent_layers * c.cpu_recurrent_layer_s
    cpu = max(1, threads) * core_gflops(inventory, c) * 1e9
    arith = load.flops / cpu * c.hybrid_arith_share if hybrid else 0.0
    return DeviceTime(load.device, load.weight_bytes / bw, load.expert_bytes / bw,
                      (load.kv_bytes * cpu_kv_cost(flash, c) + load.state_bytes) / bw,
                      overhead, disk_s, load.flops / cpu, load.layers, arith)


def _remote_time(inventory: Inventory, gpu: Gpu, load: DeviceLoad,
                 c: SpeedConstants, flash: bool = True) -> DeviceTime:
    """A worker's device: its own reads, plus one synchronous graph call per token (the
    link's round trip); a worker serving its CPU is priced as a CPU."""
    call_s = gpu.link_latency_s + c.rpc_graph_s + load.layers * c.rpc_layer_s
    if not gpu.worker_cpu:
        bw = gpu_bandwidth(gpu, c) / (c.gpu_iq_factor if load.iquant else 1.0)
        return DeviceTime(load.device, load.weight_bytes / bw,
                          load.expert_bytes / (bw * c.gpu_expert_efficiency),
                          (load.kv_bytes * c.gpu_kv_cost + load.state_bytes) / bw,
                          load.layers * c.gpu_layer_s + call_s, 0.0)
    threads = worker_threads(inventory, gpu, c)
    bw = min(gpu.bandwidth_gbps * GB * c.cpu_bw_fraction,
             threads * worker_core_gbps(inventory, gpu, c) * GB)
    bw /= c.cpu_iq_factor if load.iquant else 1.0
    per_layer = c.cpu_layer_s + c.cpu_layer_thread_s * threads
    overhead = load.layers * per_layer + load.recurrent_layers * c.cpu_recurrent_layer_s
    return DeviceTime(load.device, load.weight_bytes / bw, load.expert_bytes / bw,
                      (load.kv_bytes * cpu_kv_cost(flash, c) + load.state_bytes) / bw,
                      overhead + call_s, 0.0)


def worker_core_gbps(inventory: Inventory, gpu: Gpu, c: SpeedConstants = CONSTANTS) -> float:
    """GB/s of Q4_K a worker CPU's core decodes: this host's when it runs here, else the
    reference."""
    return core_gbps(inventory, c) if gpu.same_host else c.cpu_core_gbps


def worker_core_gflops(inventory: Inventory, gpu: Gpu, c: SpeedConstants = CONSTANTS) -> float:
    """GFLOP/s of Q4_K a worker CPU's core prefills: this host's when it runs here, else
    the reference."""
    return core_gflops(inventory, c) if gpu.same_host else c.cpu_core_gflops


def worker_threads(inventory: Inventory, gpu: Gpu, c: SpeedConstants = CONSTANTS) -> int:
    """Threads a worker's CPU computes with (this machine's cores when it runs here)."""
    return inventory.host.cores if gpu.same_host else c.worker_threads


def link_bytes_per_s(gpu: Gpu | None) -> float | None:
    """Bytes/s of the link activations cross to reach ``gpu`` (None: no link priced)."""
    if gpu is None:
        return None
    if gpu.remote:
        return gpu.link_gbps * GB if gpu.link_gbps > 0 else None
    if gpu.pcie_gbps > 0 and not gpu.unified_memory:
        return gpu.pcie_gbps * GB
    return None


def transfer_time(inventory: Inventory, hops: Sequence[tuple[str, str]], n_embd: int,
                  tokens: int = 1, c: SpeedConstants = CONSTANTS) -> float:
    """Seconds spent moving activations between devices (one entry per hop)."""
    counts: dict[tuple[str, str], int] = {}
    for hop in hops:
        counts[hop] = counts.get(hop, 0) + 1
    total = 0.0
    for (a, b), n in counts.items():
        links = [x for x in (link_bytes_per_s(gpu_of(inventory, a)),
                             link_bytes_per_s(gpu_of(inventory, b))) if x]
        link = min(links) if links else 0.0
        total += n * (c.hop_s + (n_embd * 4 * tokens / link if link else 0.0))
    return total


def acceptance_for(task: TaskKind, mode: SpecMode, c: SpeedConstants = CONSTANTS) -> float:
    """Default per-token acceptance of a speculation mode for a task."""
    table = dict(c.ngram_acceptance if mode == SpecMode.NGRAM else
                 c.mtp_acceptance if mode == SpecMode.MTP else c.acceptance)
    return table.get(task.value, 0.5)


def tokens_per_step(acceptance: float, k: int) -> float:
    """Expected tokens a verify step yields: ``(1 - a^(k+1)) / (1 - a)``."""
    a = min(max(acceptance, 0.0), 0.999)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def verify_cost(inventory: Inventory, main_device: str, speed: Speed,
                c: SpeedConstants = CONSTANTS) -> float:
    """Extra cost per drafted token of verifying a batch, as a share of one token.

    A verify step reads the weights once for all its tokens, so each drafted token adds
    only its arithmetic: small where decode is memory-bound (a GPU), large where it is
    not (a CPU). Apple GPUs do not amortise the batch (their small-batch kernels).
    """
    gpu = gpu_of(inventory, main_device)
    if gpu is not None and gpu.backend == Backend.METAL:
        return c.metal_verify_cost
    if speed.token_s <= 0:
        return 1.0
    return min(1.0, sum(d.compute_s for d in speed.devices) / speed.token_s)


def spec_step_seconds(inventory: Inventory, speed: Speed,
                      c: SpeedConstants = CONSTANTS) -> float:
    """Fixed seconds a verify step adds on GPUs (other kernels than a single token's,
    launched outside its graph), per layer a GPU computes; none on CPUs and Metal,
    whose verify cost is priced per token."""
    layers = 0
    for d in speed.devices:
        gpu = gpu_of(inventory, d.device)
        if gpu is not None and gpu.backend != Backend.METAL:
            layers += d.layers
    return layers * c.spec_layer_s


def distinct_experts(tokens: int, ratio: float) -> float:
    """Expected distinct experts ``tokens`` tokens route to, in units of one token's."""
    if ratio <= 0 or ratio >= 1:
        return 1.0
    return (1.0 - (1.0 - ratio) ** tokens) / ratio


def per_token_acceptance(accepted_per_drafted: float, k: int) -> float:
    """The per-token acceptance ``a`` whose ``sum(a^i, i=1..k) / k`` is the measured
    accepted / drafted ratio (what a bench reports)."""
    r = min(max(accepted_per_drafted, 0.0), 0.999)
    if k <= 1:
        return r
    lo, hi = 0.0, 0.9999
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(mid**i for i in range(1, k + 1)) / k < r:
            lo = mid
        else:
            hi = mid
    return lo


def price_spec(mode: SpecMode, k: int, acceptance: float, token_s: float, draft_s: float,
               verify: float, expert_share: float = 0.0, expert_ratio: float = 0.0,
               step_s: float = 0.0, c: SpeedConstants = CONSTANTS) -> SpecOutcome:
    """Price ``k`` drafted tokens per step: returns what a step yields and costs.

    Args:
        token_s: one plain token of the target model.
        draft_s: one drafted token (MTP head, draft model; ~0 for n-gram lookup).
        verify: extra step cost per drafted token (fraction of ``token_s``).
        expert_share: share of ``token_s`` spent reading routed experts: a verify batch
            of ``k + 1`` tokens reads more distinct experts than one token does.
        expert_ratio: ``n_expert_used / n_expert``.
        step_s: fixed seconds a verify step adds (see :func:`spec_step_seconds`).
    """
    if mode == SpecMode.OFF or k <= 0 or token_s <= 0:
        return NO_SPEC
    more_experts = (distinct_experts(k + 1, expert_ratio) - 1.0) * (1.0 - c.moe_verify_overlap)
    step = token_s * (1.0 + verify * k + expert_share * more_experts) + k * draft_s + step_s
    return SpecOutcome(mode, k, acceptance, tokens_per_step(acceptance, k), step / token_s)


def best_draft_length(mode: SpecMode, acceptance: float, token_s: float, draft_s: float,
                      verify: float, expert_share: float = 0.0, expert_ratio: float = 0.0,
                      max_k: int = 8, step_s: float = 0.0, pass_s: float = 0.0
                      ) -> SpecOutcome:
    """The draft length (1..max_k) with the best tokens per second, or NO_SPEC.

    ``pass_s``: seconds of a drafter that drafts the whole block in one pass (DFlash),
    priced as ``pass_s / k`` per drafted token on top of ``draft_s``.
    """
    best = NO_SPEC
    for k in range(1, max_k + 1):
        out = price_spec(mode, k, acceptance, token_s, draft_s + pass_s / k, verify,
                         expert_share, expert_ratio, step_s)
        if out.tokens_per_step / out.step_cost > best.tokens_per_step / best.step_cost * 1.01:
            best = out
    return best


def spec_decode_tps(token_s: float, spec: SpecOutcome) -> float:
    """Decode tokens per second with ``spec``: the tokens a verify step yields over what
    the step costs (plain decode with NO_SPEC). The one place the gain is applied."""
    return 1.0 / token_s * spec.tokens_per_step / spec.step_cost if token_s > 0 else 0.0


OP_OFFLOAD_MIN_BATCH = 32   # llama.cpp's GPU backends take a host weight's matmul from
#   this many tokens of a batch on (``offload_op``: the batch dimension >= 32)


def batch_sizes(prompt_tokens: int, n_ubatch: int) -> list[tuple[int, int]]:
    """The (tokens, count) of the batches a prompt is computed in: full ``n_ubatch``
    batches and the rest (a prompt of 0 tokens: one full batch, the steady state)."""
    u = max(1, n_ubatch)
    if prompt_tokens <= 0:
        return [(u, 1)]
    out = [(u, prompt_tokens // u)] if prompt_tokens >= u else []
    if prompt_tokens % u:
        out.append((prompt_tokens % u, 1))
    return out


def host_offload_prefill(inventory: Inventory, load: DeviceLoad, main: Gpu, flops: float,
                         threads: int, n_ubatch: int, prompt_tokens: int,
                         c: SpeedConstants = CONSTANTS) -> float:
    """Seconds per prompt token of a host part beside a GPU, as llama.cpp runs it: a batch
    of :data:`OP_OFFLOAD_MIN_BATCH` tokens or more copies the host weights over PCIe to
    the GPU once and multiplies there; a smaller one is computed by the host's cores."""
    pcie = (main.pcie_gbps if main.pcie_gbps > 0 else 16.0) * GB * c.pcie_fraction
    copy = 0.0 if main.unified_memory else load.stored_bytes / pcie
    gpu_token = flops / gpu_flops(main, c)
    cpu_token = flops / (max(1, threads) * core_gflops(inventory, c) * 1e9
                         * load.cpu_prefill_rate)
    total = tokens = 0.0
    for size, count in batch_sizes(prompt_tokens, n_ubatch):
        per_batch = (copy + size * gpu_token if size >= OP_OFFLOAD_MIN_BATCH
                     else size * cpu_token)
        total += count * per_batch
        tokens += count * size
    return total / tokens if tokens else 0.0


def prefill_time_per_token(inventory: Inventory, loads: Sequence[DeviceLoad], threads: int,
                           n_ubatch: int, c: SpeedConstants = CONSTANTS,
                           prompt_tokens: int = 0, flash: bool = True
                           ) -> tuple[tuple[str, float], ...]:
    """Seconds per prompt token per device (compute-bound; host weights cross PCIe).

    On the CPU without flash attention a prompt token also pays its attention over the
    cache cells in use (:func:`prefill_kv_cells`; with flash attention, not measured on a
    CPU, it is not priced)."""
    gpus = [g for g in inventory.gpus if any(ld.device == f"gpu{g.index}" for ld in loads)
            and not g.remote]
    out: list[tuple[str, float]] = []
    for load in loads:
        gpu = gpu_of(inventory, load.device)
        disk = load.disk_stored_bytes / disk_bandwidth(inventory, c) / n_ubatch
        flops = load.flops if load.prefill_flops is None else load.prefill_flops
        if gpu is not None and gpu.worker_cpu:
            cores = worker_threads(inventory, gpu, c) * worker_core_gflops(inventory, gpu, c) \
                * 1e9 * load.cpu_prefill_rate
            out.append((load.device, flops / cores))
        elif gpu is not None:
            out.append((load.device, flops / gpu_flops(gpu, c) + disk))
        elif gpus:
            main = max(gpus, key=lambda g: g.tflops_fp16)
            out.append((load.device, host_offload_prefill(
                inventory, load, main, flops, threads, n_ubatch, prompt_tokens, c) + disk))
        else:
            cpu = max(1, threads) * core_gflops(inventory, c) * 1e9
            attention = 0.0 if flash or not prompt_tokens else \
                load.attn_flops * prefill_kv_cells(prompt_tokens, n_ubatch) \
                / (cpu * CPU_PREFILL_ATTENTION_RATE)
            out.append((load.device, flops / (cpu * load.cpu_prefill_rate) + attention + disk))
    return tuple(out)


def is_hybrid(inventory: Inventory, loads: Sequence[DeviceLoad]) -> bool:
    """Whether the host computes part of each token beside a local GPU (not a worker,
    not unified memory, where the GPU reads the same RAM)."""
    host = any(ld.device == HOST and (ld.weight_bytes or ld.expert_bytes) for ld in loads)
    gpus = [gpu_of(inventory, ld.device) for ld in loads if ld.device != HOST]
    return host and any(g is not None and not g.remote and not g.unified_memory
                        for g in gpus)


def predict(inventory: Inventory, loads: Sequence[DeviceLoad], hops: Sequence[tuple[str, str]],
            n_embd: int, threads: int, prompt_tokens: int, depth: int, n_ubatch: int,
            spec: SpecOutcome = NO_SPEC, c: SpeedConstants = CONSTANTS,
            flash: bool = True) -> Speed:
    """Predict decode / prefill / TTFT for a token passing through ``loads`` in order.

    Args:
        loads: per device, what one token does there.
        hops: activation transfers per token, as (from, to) device pairs.
        threads: CPU threads (for host loads).
        spec: the priced speculation (see :func:`price_spec`).
        flash: whether the context runs flash attention (a CPU reads KV slower with it).
    """
    hybrid = is_hybrid(inventory, loads)
    times = tuple(device_time(inventory, ld, threads, c, flash, hybrid) for ld in loads)
    transfer = transfer_time(inventory, hops, n_embd, 1, c)
    token_s = sum(t.total_s for t in times) + transfer
    decode = spec_decode_tps(token_s, spec)
    prefill_parts = prefill_time_per_token(inventory, loads, threads, n_ubatch, c,
                                           prompt_tokens, flash)
    per_prompt_token = sum(s for _, s in prefill_parts)
    per_prompt_token += transfer_time(inventory, hops, n_embd, n_ubatch, c) / n_ubatch
    prefill = 1.0 / per_prompt_token if per_prompt_token > 0 else 0.0
    ttft = prompt_tokens * per_prompt_token + token_s
    return Speed(decode_tps=decode, prefill_tps=prefill, ttft_s=ttft,
                 prompt_tokens=prompt_tokens, depth=depth, token_s=token_s,
                 transfer_s=transfer, devices=times, spec=spec,
                 prefill_devices=prefill_parts)
